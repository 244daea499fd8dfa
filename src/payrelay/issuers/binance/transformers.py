"""Pure conversions between payrelay's orders and Binance Pay's wire formats.

Choices where the documentation is silent:

- The payer's link is ``deeplink`` for ``APP`` and ``universalUrl`` for every other terminal
  type (``universalUrl`` opens the app where it is installed and the browser otherwise); when the
  chosen field is missing, ``checkoutUrl`` is used.
- ``400201`` means "invalid or duplicate merchantTradeNo". Our trade numbers are always valid (32
  hex characters), so it is reported as a duplicate and payrelay adopts the order by querying.
- Every refusal of a create (including a bad signature, ``400002``, or a stale timestamp,
  ``400003``) is returned as ``OrderRejected`` with Binance's own code and words; a refused query
  or close, other than "not found" and "already paid", is ``IssuerUnavailable``: it says nothing
  about the order, so the caller retries later.
- ``PAY_CLOSED`` covers a close, an expiry and (in the simulator) a payer's cancel, so it maps to
  ``EXPIRED``; payrelay asks the issuer (``CANCELED`` -> ``FAILED``) before acting on it.
- ``REFUNDING``/``REFUNDED``/``FULL_REFUNDED`` map to ``PAID``: the payment did happen.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import assert_never

from payrelay.issuers.base import (
    IssuerNotification,
    IssuerUnavailable,
    OrderOpened,
    OrderRejected,
    OrderReport,
    OrderRequest,
    OrderState,
    Payment,
)
from payrelay.issuers.binance.wire import (
    DEFAULT_GOODS_TYPE,
    GOODS_CATEGORY_OTHERS,
    BizStatus,
    BizType,
    CreatedOrder,
    CreateOrderBody,
    Envelope,
    ErrorCode,
    Notification,
    NotificationData,
    OrderLookup,
    OrderStatus,
    QueriedOrder,
)
from payrelay.kit.jsonio import loads_exact

ORDER_NOT_FOUND_STATUS = "ORDER_NOT_FOUND"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_ms(moment: datetime) -> int:
    """Exact integer milliseconds since the epoch (no float arithmetic)."""
    if moment.tzinfo is None:
        raise ValueError("expires_at must be timezone-aware")
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def from_epoch_ms(value: int | None) -> datetime | None:
    return None if value is None else _EPOCH + timedelta(milliseconds=value)


def create_order_body(order: OrderRequest) -> CreateOrderBody:
    return {
        "env": {"terminalType": order.terminal_type},
        "merchant": {"subMerchantId": order.issuer_merchant_id},
        "merchantTradeNo": order.trade_no,
        "orderAmount": order.pay_amount,
        "currency": order.pay_currency,
        "description": order.description,
        "goodsDetails": [
            {
                "goodsType": order.goods_type or DEFAULT_GOODS_TYPE,
                "goodsCategory": GOODS_CATEGORY_OTHERS,
                "referenceGoodsId": order.trade_no,
                "goodsName": order.description,
            }
        ],
        "returnUrl": order.success_url,
        "cancelUrl": order.failed_url,
        "webhookUrl": order.notify_url,
        "orderExpireTime": epoch_ms(order.expires_at),
    }


def order_lookup(order: OrderRequest, issuer_order_id: str | None) -> OrderLookup:
    if issuer_order_id:
        return {"prepayId": issuer_order_id}
    return {"merchantTradeNo": order.trade_no}


def rejection(envelope: Envelope) -> OrderRejected:
    return OrderRejected(
        code=envelope.code,
        reason=envelope.reason,
        duplicate_trade_no=envelope.code == ErrorCode.INVALID_MERCHANT_TRADE_NO,
    )


def payer_link(created: CreatedOrder, terminal_type: str) -> str:
    preferred = created.deeplink if terminal_type == "APP" else created.universalUrl
    link = preferred or created.checkoutUrl
    if not link:
        raise ValueError("Binance Pay returned an order without a payer link")
    return link


def order_outcome(envelope: Envelope, terminal_type: str) -> OrderOpened | OrderRejected:
    """The answer to a create. Raises ``ValueError`` when a success carries no usable order."""
    if not envelope.succeeded:
        return rejection(envelope)
    created = CreatedOrder.model_validate(envelope.data)
    details = {
        "prepayId": created.prepayId,
        "checkoutUrl": created.checkoutUrl,
        "qrContent": created.qrContent,
        "deeplink": created.deeplink,
        "universalUrl": created.universalUrl,
        "expireTime": None if created.expireTime is None else str(created.expireTime),
    }
    return OrderOpened(
        issuer_order_id=created.prepayId,
        link=payer_link(created, terminal_type),
        details={name: value for name, value in details.items() if value is not None},
    )


def order_state(status: str) -> OrderState:
    """Query Order status -> ``OrderState``; unknown values are ``PENDING``."""
    try:
        known = OrderStatus(status)
    except ValueError:
        return OrderState.PENDING
    match known:
        case OrderStatus.INITIAL | OrderStatus.PENDING:
            return OrderState.PENDING
        case (
            OrderStatus.PAID
            | OrderStatus.REFUNDING
            | OrderStatus.REFUNDED
            | OrderStatus.FULL_REFUNDED
        ):
            return OrderState.PAID
        case OrderStatus.CANCELED | OrderStatus.ERROR:
            return OrderState.FAILED
        case OrderStatus.EXPIRED:
            return OrderState.EXPIRED
        case _:
            assert_never(known)


def notification_state(biz_status: str) -> OrderState:
    """``bizStatus`` of a PAY notification -> ``OrderState``; unknown values are ``PENDING``."""
    try:
        known = BizStatus(biz_status)
    except ValueError:
        return OrderState.PENDING
    match known:
        case BizStatus.PAY_SUCCESS:
            return OrderState.PAID
        case BizStatus.PAY_CLOSED:
            return OrderState.EXPIRED
        case _:
            assert_never(known)


def order_report(envelope: Envelope) -> OrderReport:
    """The answer to a query. A refusal other than "not found" is ``IssuerUnavailable``."""
    if not envelope.succeeded:
        if envelope.code == ErrorCode.ORDER_NOT_FOUND:
            return OrderReport(state=OrderState.NOT_FOUND, raw_status=ORDER_NOT_FOUND_STATUS)
        raise IssuerUnavailable(
            f"Binance Pay refused the query: {envelope.code} {envelope.reason}".rstrip()
        )
    queried = QueriedOrder.model_validate(envelope.data)
    state = order_state(queried.status)
    payments: tuple[Payment, ...] = ()
    if state is OrderState.PAID:
        payments = (
            Payment(
                payment_id=queried.transactionId or queried.prepayId,
                amount=queried.orderAmount,
                currency=queried.currency,
                paid_at=from_epoch_ms(queried.transactTime),
            ),
        )
    return OrderReport(
        state=state,
        raw_status=queried.status,
        issuer_order_id=queried.prepayId,
        payments=payments,
    )


def close_accepted(envelope: Envelope) -> bool:
    """``data: true`` is accepted; "already paid" and "not found" are a plain no."""
    if envelope.succeeded:
        return envelope.data is True
    if envelope.code in (ErrorCode.INVALID_ORDER_STATUS, ErrorCode.ORDER_NOT_FOUND):
        return False
    raise IssuerUnavailable(
        f"Binance Pay refused the close: {envelope.code} {envelope.reason}".rstrip()
    )


def notification_event(body: bytes) -> IssuerNotification | None:
    """A verified notification body -> event; ``None`` for other business types (refunds).

    Raises ``ValueError`` for a body that is not the documented shape.
    """
    notification = Notification.model_validate(loads_exact(body))
    if notification.bizType != BizType.PAY:
        return None
    data = NotificationData.model_validate(loads_exact(notification.data.encode()))
    state = notification_state(notification.bizStatus)
    payments: tuple[Payment, ...] = ()
    if state is OrderState.PAID:
        payments = (
            Payment(
                payment_id=data.transactionId or notification.bizIdStr,
                amount=data.totalFee,
                currency=data.currency,
                paid_at=from_epoch_ms(data.transactTime),
            ),
        )
    return IssuerNotification(
        event_key=f"{notification.bizIdStr}:{notification.bizStatus}",
        trade_no=data.merchantTradeNo,
        issuer_order_id=notification.bizIdStr,
        state=state,
        raw_status=notification.bizStatus,
        payments=payments,
    )
