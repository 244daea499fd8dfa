"""Pure translations between payrelay's orders and Bybit Pay's wire formats.

Choices where Bybit's documentation is silent or does not fit payrelay:

- ``orderExpireTime`` is our expiry in whole seconds (rounded down), clamped to one hour from
  now, Bybit's documented maximum. A transfer that lives longer than an hour therefore sees the
  Bybit order time out first; the outcome still arrives as ``TIMEOUT`` (``EXPIRED``). An expiry
  less than a second away is sent as one second from now, so the order is not refused.
- ``env.ip`` is ``0.0.0.0``: Bybit asks for the payer's real IP, but payrelay opens the order from
  the merchant's server call and never sees the payer. ``env.device`` is ``payrelay`` and
  ``env.browserVersion`` ``n/a`` for the same reason. ``riskInfo.terminalType`` repeats
  ``env.terminalType``; ``MINI_PROGRAM`` becomes Bybit's ``MINIAPP``, anything else unknown
  ``OTHERS``.
- ``goods`` is one line: ``mccCode`` 5999 (miscellaneous retail), and the transfer's description
  as ``goodsName`` (cut to 160), ``goodsDetail`` (cut to 256) and ``shoppingName`` (cut to 64).
- ``currencyType`` is ``fiat`` for ZAR (Bybit converts a fiat price itself) and ``crypto``
  otherwise; ``orderAmount`` is the exact decimal string of the amount, never a float.
- The query asks by ``payId`` when we hold it (Bybit's recommendation), else by
  ``merchantTradeNo``. Bybit's query does not return the checkout link; the connector rebuilds it
  from the ``payId`` (the documented deeplink shape) so an order can be adopted after a timeout.
- Every documented status is mapped; refund states count as paid because money moved first.
  ``CANCEL`` (from a cancel API Bybit does not document) is ``FAILED``. Unknown is ``PENDING``.
- A notification's ``event_key`` is ``payId:status``: one per order and outcome, so Bybit's
  retries of the same event collapse in the inbox. Refund notifications
  (``E_COMMERCE_REFUND``) and other payment types are verified and then ignored (``None``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal

from payrelay.issuers.base import (
    IssuerNotification,
    OrderOpened,
    OrderRejected,
    OrderReport,
    OrderRequest,
    OrderState,
    Payment,
)
from payrelay.issuers.bybit.wire import (
    MAX_EXPIRY_SECONDS,
    MAX_GOODS_DETAIL,
    MAX_GOODS_NAME,
    PAYMENT_TYPE,
    TERMINAL_TYPES,
    CreatePayRequest,
    CreatePayResult,
    Envelope,
    NotificationKind,
    PayOrder,
    PayResult,
    PayStatus,
    RetCode,
)
from payrelay.kit.jsonio import loads_exact

MCC_CODE = "5999"
MAX_SHOPPING_NAME = 64
FIAT_CURRENCIES = frozenset({"ZAR"})
PAYER_IP_UNKNOWN = "0.0.0.0"  # we never see the payer; see the module docstring
_TERMINAL_ALIASES = {"MINI_PROGRAM": "MINIAPP"}


def amount_string(amount: Decimal) -> str:
    """The exact decimal string for ``orderAmount``: ``Decimal("8.24")`` -> ``"8.24"``."""
    if not amount.is_finite() or amount <= 0:
        raise ValueError(f"order amount must be a positive finite decimal, not {amount}")
    return format(amount, "f")


def currency_type(currency: str) -> str:
    return "fiat" if currency.upper() in FIAT_CURRENCIES else "crypto"


def terminal_type(value: str) -> str:
    upper = value.upper()
    upper = _TERMINAL_ALIASES.get(upper, upper)
    return upper if upper in TERMINAL_TYPES else "OTHERS"


def order_expire_time(expires_at: datetime, now: datetime) -> int:
    """Our expiry in whole epoch seconds, kept between one second and one hour from ``now``."""
    start = int(now.timestamp())
    return max(start + 1, min(int(expires_at.timestamp()), start + MAX_EXPIRY_SECONDS))


def create_pay_request(order: OrderRequest, *, now: datetime) -> CreatePayRequest:
    description = order.description.strip() or f"Order {order.reference}"
    terminal = terminal_type(order.terminal_type)
    return {
        "merchantId": order.issuer_merchant_id,
        "paymentType": PAYMENT_TYPE,
        "merchantTradeNo": order.trade_no,
        "goods": [
            {
                "shoppingName": description[:MAX_SHOPPING_NAME],
                "mccCode": MCC_CODE,
                "goodsName": description[:MAX_GOODS_NAME],
                "goodsDetail": description[:MAX_GOODS_DETAIL],
            }
        ],
        "orderAmount": amount_string(order.pay_amount),
        "currency": order.pay_currency.upper(),
        "currencyType": currency_type(order.pay_currency),
        "successUrl": order.success_url,
        "failedUrl": order.failed_url,
        "webhookUrl": order.notify_url,
        "orderExpireTime": order_expire_time(order.expires_at, now),
        "env": {
            "terminalType": terminal,
            "device": "payrelay",
            "browserVersion": "n/a",
            "ip": PAYER_IP_UNKNOWN,
        },
        "riskInfo": {"terminalType": terminal},
    }


def pay_result_query(order: OrderRequest, pay_id: str | None) -> list[tuple[str, str]]:
    """``GET pay_result`` parameters, by ``payId`` when we have it, else ``merchantTradeNo``."""
    key = ("payId", pay_id) if pay_id else ("merchantTradeNo", order.trade_no)
    return [("merchantId", order.issuer_merchant_id), ("paymentType", PAYMENT_TYPE), key]


def query_string(params: list[tuple[str, str]]) -> str:
    """The unescaped query string Bybit signs (``a=1&b=2``)."""
    return "&".join(f"{name}={value}" for name, value in params)


def parse_envelope(raw: bytes) -> Envelope:
    """The response envelope; amounts inside stay exact. Raises ``ValueError`` if malformed."""
    return Envelope.model_validate(loads_exact(raw))


def rejection(envelope: Envelope) -> OrderRejected:
    return OrderRejected(
        code=str(envelope.retCode),
        reason=envelope.retMsg or f"Bybit refused the order (retCode {envelope.retCode})",
        duplicate_trade_no=envelope.retCode == RetCode.DUPLICATE_PAYMENT,
    )


def opened_or_rejected(envelope: Envelope) -> OrderOpened | OrderRejected:
    """A create answer as data. Raises ``ValueError`` for a success without a usable result."""
    if envelope.retCode != RetCode.SUCCESS:
        return rejection(envelope)
    result = CreatePayResult.model_validate(envelope.result)
    details = {
        "payId": result.payId,
        "checkoutLink": result.checkoutLink,
        "qrContent": result.qrContent,
        "expireTime": str(result.expireTime),
    }
    return OrderOpened(issuer_order_id=result.payId, link=result.checkoutLink, details=details)


def order_state(status: str) -> OrderState:
    match status:
        case PayStatus.INIT | PayStatus.INITIAL | PayStatus.PAY_PROCESS:
            return OrderState.PENDING
        case (
            PayStatus.PAY_SUCCESS
            | PayStatus.PARTIAL_REFUND
            | PayStatus.REFUND
            | PayStatus.REFUND_PROCESS
            | PayStatus.REFUND_SUCCESS
            | PayStatus.REFUND_FAILED
            | PayStatus.REFUND_CANCEL
        ):
            return OrderState.PAID
        case PayStatus.PAY_FAILED | PayStatus.CANCEL:
            return OrderState.FAILED
        case PayStatus.TIMEOUT:
            return OrderState.EXPIRED
        case _:
            return OrderState.PENDING


def epoch_seconds(value: int) -> datetime | None:
    return datetime.fromtimestamp(value, UTC) if value > 0 else None


def payments_of(order: PayOrder) -> tuple[Payment, ...]:
    """The one payment a paid order carries (Bybit pays an order once, in full)."""
    if order_state(order.status) is not OrderState.PAID:
        return ()
    return (Payment(order.payId, order.amount, order.currency, epoch_seconds(order.paymentTime)),)


def report(envelope: Envelope, link_for: Callable[[str], str]) -> OrderReport:
    """A query answer; ``400004`` is ``NOT_FOUND``. Raises ``ValueError`` for any other error."""
    if envelope.retCode == RetCode.NOT_FOUND:
        return OrderReport(OrderState.NOT_FOUND, raw_status=str(envelope.retCode))
    if envelope.retCode != RetCode.SUCCESS:
        raise ValueError(f"Bybit answered retCode {envelope.retCode}: {envelope.retMsg}")
    order = PayResult.model_validate(envelope.result).order
    return OrderReport(
        state=order_state(order.status),
        raw_status=order.status,
        issuer_order_id=order.payId,
        payments=payments_of(order),
        link=link_for(order.payId),
    )


def notification(body: bytes) -> IssuerNotification | None:
    """A verified notification body. Raises ``ValueError`` if it is not a PayOrder."""
    document = loads_exact(body)
    if NotificationKind.model_validate(document).paymentType != PAYMENT_TYPE:
        return None
    order = PayOrder.model_validate(document)
    return IssuerNotification(
        event_key=f"{order.payId}:{order.status}",
        trade_no=order.merchantTradeNo,
        issuer_order_id=order.payId,
        state=order_state(order.status),
        raw_status=order.status,
        payments=payments_of(order),
    )
