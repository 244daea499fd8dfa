"""Pure Binance Pay transformers: request bodies, replies, status maps, notifications."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, ClassVar

import pytest
from pydantic import ValidationError

from payrelay.issuers.base import (
    IssuerUnavailable,
    OrderOpened,
    OrderRejected,
    OrderRequest,
    OrderState,
    Payment,
)
from payrelay.issuers.binance import transformers
from payrelay.issuers.binance.wire import BizStatus, Envelope, OrderStatus
from payrelay.kit.jsonio import dumps_exact, loads_exact

EXPIRES_AT = datetime(2026, 3, 1, 12, 30, 0, 123999, tzinfo=UTC)


def order_request(**overrides: Any) -> OrderRequest:
    values: dict[str, Any] = {
        "trade_no": "0123456789abcdef0123456789abcdef",
        "reference": "INV-1",
        "issuer_merchant_id": "123456789",
        "amount_zar": Decimal("250.00"),
        "pay_currency": "USDC",
        "pay_amount": Decimal("13.51000000"),
        "description": "Invoice INV-1",
        "terminal_type": "WEB",
        "goods_type": None,
        "success_url": "https://shop.example/ok",
        "failed_url": "https://shop.example/failed",
        "notify_url": "https://payrelay.example/issuers/binance/notifications",
        "expires_at": EXPIRES_AT,
    }
    return OrderRequest(**(values | overrides))


def envelope(text: str) -> Envelope:
    return Envelope.model_validate(loads_exact(text.encode()))


CREATED = """{"status":"SUCCESS","code":"000000","errorMessage":"","data":{
  "prepayId":"383729303729303939","terminalType":"APP","expireTime":1772368200123,
  "qrcodeLink":"https://public.bnbstatic.com/static/payment/qr.jpg",
  "qrContent":"https://qrservice.dev.com/en/qr/dplkb005181944f84b84aba2430e1177012b.jpg",
  "checkoutUrl":"https://pay.binance.com/checkout/dplk12121112b",
  "deeplink":"bnc://app.binance.com/payment/secpay?tempToken=dplk12121112b",
  "universalUrl":"https://app.binance.com/payment/secpay?linkToken=dplk12121112b&_dp=Ym5jOi8v"}}"""


class TestCreateOrderBody:
    def test_maps_every_field(self) -> None:
        body = transformers.create_order_body(order_request(goods_type="01"))
        assert body == {
            "env": {"terminalType": "WEB"},
            "merchant": {"subMerchantId": "123456789"},
            "merchantTradeNo": "0123456789abcdef0123456789abcdef",
            "orderAmount": Decimal("13.51000000"),
            "currency": "USDC",
            "description": "Invoice INV-1",
            "goodsDetails": [
                {
                    "goodsType": "01",
                    "goodsCategory": "Z000",
                    "referenceGoodsId": "0123456789abcdef0123456789abcdef",
                    "goodsName": "Invoice INV-1",
                }
            ],
            "returnUrl": "https://shop.example/ok",
            "cancelUrl": "https://shop.example/failed",
            "webhookUrl": "https://payrelay.example/issuers/binance/notifications",
            "orderExpireTime": 1772368200123,
        }

    def test_goods_type_defaults_to_virtual(self) -> None:
        body = transformers.create_order_body(order_request())
        assert body["goodsDetails"][0]["goodsType"] == "02"

    @pytest.mark.parametrize(
        ("amount", "json_number"),
        [
            ("13.51000000", "13.51000000"),
            ("0.00000001", "0.00000001"),
            ("12345678.12345678", "12345678.12345678"),
            ("0.1", "0.1"),
        ],
    )
    def test_amount_is_an_exact_json_number(self, amount: str, json_number: str) -> None:
        encoded = dumps_exact(
            transformers.create_order_body(order_request(pay_amount=Decimal(amount)))
        )
        assert f'"orderAmount":{json_number},' in encoded.decode()
        assert loads_exact(encoded)["orderAmount"] == Decimal(amount)

    def test_expiry_is_exact_epoch_milliseconds(self) -> None:
        assert transformers.epoch_ms(EXPIRES_AT) == 1772368200123
        later = EXPIRES_AT.astimezone(timezone(timedelta(hours=2)))
        assert transformers.epoch_ms(later) == 1772368200123
        assert transformers.from_epoch_ms(1772368200123) == EXPIRES_AT.replace(microsecond=123000)

    def test_naive_expiry_is_refused(self) -> None:
        with pytest.raises(ValueError, match="timezone-aware"):
            transformers.epoch_ms(datetime(2026, 3, 1, 12, 30))

    def test_lookup_prefers_the_prepay_id(self) -> None:
        order = order_request()
        assert transformers.order_lookup(order, "383729303729303939") == {
            "prepayId": "383729303729303939"
        }
        assert transformers.order_lookup(order, None) == {"merchantTradeNo": order.trade_no}


class TestOrderOutcome:
    def test_app_gets_the_deeplink(self) -> None:
        opened = transformers.order_outcome(envelope(CREATED), "APP")
        assert opened == OrderOpened(
            issuer_order_id="383729303729303939",
            link="bnc://app.binance.com/payment/secpay?tempToken=dplk12121112b",
            details={
                "prepayId": "383729303729303939",
                "checkoutUrl": "https://pay.binance.com/checkout/dplk12121112b",
                "qrContent": "https://qrservice.dev.com/en/qr/dplkb005181944f84b84aba2430e1177012b.jpg",
                "deeplink": "bnc://app.binance.com/payment/secpay?tempToken=dplk12121112b",
                "universalUrl": "https://app.binance.com/payment/secpay?linkToken=dplk12121112b&_dp=Ym5jOi8v",
                "expireTime": "1772368200123",
            },
        )

    @pytest.mark.parametrize("terminal_type", ["WEB", "WAP", "MINI_PROGRAM", "OTHERS"])
    def test_other_terminals_get_the_universal_url(self, terminal_type: str) -> None:
        opened = transformers.order_outcome(envelope(CREATED), terminal_type)
        assert isinstance(opened, OrderOpened)
        assert opened.link.startswith("https://app.binance.com/payment/secpay?linkToken=")

    def test_checkout_url_stands_in_for_a_missing_link(self) -> None:
        reply = json.loads(CREATED)
        del reply["data"]["universalUrl"]
        opened = transformers.order_outcome(envelope(json.dumps(reply)), "WEB")
        assert isinstance(opened, OrderOpened)
        assert opened.link == "https://pay.binance.com/checkout/dplk12121112b"

    def test_a_success_without_any_link_is_malformed(self) -> None:
        reply = '{"status":"SUCCESS","code":"000000","data":{"prepayId":"1"}}'
        with pytest.raises(ValueError, match="without a payer link"):
            transformers.order_outcome(envelope(reply), "WEB")

    def test_a_success_without_data_is_malformed(self) -> None:
        with pytest.raises(ValidationError, match="CreatedOrder"):
            transformers.order_outcome(envelope('{"status":"SUCCESS","code":"000000"}'), "WEB")

    @pytest.mark.parametrize(
        ("reply", "rejected"),
        [
            (
                '{"status":"FAIL","code":"400201","errorMessage":"merchantTradeNo is duplicated."}',
                OrderRejected("400201", "merchantTradeNo is duplicated.", duplicate_trade_no=True),
            ),
            (
                '{"status":"FAIL","code":"400002",'
                '"errorMessage":"Signature for this request is not valid."}',
                OrderRejected("400002", "Signature for this request is not valid."),
            ),
            (
                '{"code":"400002","msg":"Signature for this request is not valid."}',
                OrderRejected("400002", "Signature for this request is not valid."),
            ),
            (
                '{"status":"ERROR","type":"SYS","code":"100001001",'
                '"errorData":"System abnormality"}',
                OrderRejected("100001001", "System abnormality"),
            ),
        ],
        ids=["duplicate", "signature", "msg-shape", "system"],
    )
    def test_refusals_are_data(self, reply: str, rejected: OrderRejected) -> None:
        data = loads_exact(reply.encode())
        data.setdefault("status", "FAIL")
        assert transformers.order_outcome(Envelope.model_validate(data), "WEB") == rejected


class TestStatusMaps:
    EXPECTED: ClassVar[dict[OrderStatus, OrderState]] = {
        OrderStatus.INITIAL: OrderState.PENDING,
        OrderStatus.PENDING: OrderState.PENDING,
        OrderStatus.PAID: OrderState.PAID,
        OrderStatus.CANCELED: OrderState.FAILED,
        OrderStatus.ERROR: OrderState.FAILED,
        OrderStatus.REFUNDING: OrderState.PAID,
        OrderStatus.REFUNDED: OrderState.PAID,
        OrderStatus.FULL_REFUNDED: OrderState.PAID,
        OrderStatus.EXPIRED: OrderState.EXPIRED,
    }

    def test_every_documented_status_is_listed(self) -> None:
        assert set(self.EXPECTED) == set(OrderStatus)
        assert {status.value for status in OrderStatus} == {
            "INITIAL", "PENDING", "PAID", "CANCELED", "ERROR",
            "REFUNDING", "REFUNDED", "FULL_REFUNDED", "EXPIRED",
        }  # fmt: skip

    @pytest.mark.parametrize("status", list(OrderStatus))
    def test_documented_status(self, status: OrderStatus) -> None:
        assert transformers.order_state(status.value) is self.EXPECTED[status]

    @pytest.mark.parametrize("status", ["", "paid", "SETTLED", "PAY_SUCCESS"])
    def test_unknown_status_is_pending(self, status: str) -> None:
        assert transformers.order_state(status) is OrderState.PENDING

    @pytest.mark.parametrize(
        ("biz_status", "state"),
        [
            (BizStatus.PAY_SUCCESS, OrderState.PAID),
            (BizStatus.PAY_CLOSED, OrderState.EXPIRED),
            ("PAY_SOMETHING_NEW", OrderState.PENDING),
        ],
    )
    def test_notification_status(self, biz_status: str, state: OrderState) -> None:
        assert transformers.notification_state(biz_status) is state

    def test_every_notification_status_is_mapped(self) -> None:
        assert {transformers.notification_state(s) for s in BizStatus} == {
            OrderState.PAID,
            OrderState.EXPIRED,
        }


def queried(status: str, **extra: Any) -> Envelope:
    data = {
        "merchantId": "98765987",
        "prepayId": "383729303729303939",
        "merchantTradeNo": "0123456789abcdef0123456789abcdef",
        "status": status,
        "currency": "USDC",
        "orderAmount": "13.51000001",
        "createTime": 1772366400000,
    } | extra
    return envelope(json.dumps({"status": "SUCCESS", "code": "000000", "data": data}))


class TestOrderReport:
    def test_paid_carries_the_exact_payment(self) -> None:
        report = transformers.order_report(
            queried("PAID", transactionId="M_P_71505104267788288", transactTime=1772367000250)
        )
        assert report.state is OrderState.PAID
        assert report.raw_status == "PAID"
        assert report.issuer_order_id == "383729303729303939"
        assert report.payments == (
            Payment(
                payment_id="M_P_71505104267788288",
                amount=Decimal("13.51000001"),
                currency="USDC",
                paid_at=datetime(2026, 3, 1, 12, 10, 0, 250000, tzinfo=UTC),
            ),
        )
        assert isinstance(report.payments[0].amount, Decimal)

    def test_refunded_orders_still_report_the_payment(self) -> None:
        report = transformers.order_report(queried("FULL_REFUNDED", transactionId="M_P_1"))
        assert report.state is OrderState.PAID
        assert report.payments[0].payment_id == "M_P_1"

    def test_pending_has_no_payment(self) -> None:
        report = transformers.order_report(queried("INITIAL"))
        assert report.state is OrderState.PENDING
        assert report.payments == ()

    def test_not_found(self) -> None:
        reply = '{"status":"FAIL","code":"400202","errorMessage":"Order not found."}'
        report = transformers.order_report(envelope(reply))
        assert report.state is OrderState.NOT_FOUND
        assert report.raw_status == "ORDER_NOT_FOUND"

    def test_other_refusals_are_unavailable(self) -> None:
        reply = (
            '{"status":"FAIL","code":"400002",'
            '"errorMessage":"Signature for this request is not valid."}'
        )
        with pytest.raises(IssuerUnavailable, match="400002 Signature for this request"):
            transformers.order_report(envelope(reply))

    def test_amount_as_a_float_would_lose_digits(self) -> None:
        report = transformers.order_report(
            queried("PAID", orderAmount="0.10000000000000001", transactionId="M_P_2")
        )
        assert report.payments[0].amount == Decimal("0.10000000000000001")


class TestCloseAccepted:
    @pytest.mark.parametrize(
        ("reply", "accepted"),
        [
            ('{"status":"SUCCESS","code":"000000","data":true}', True),
            ('{"status":"SUCCESS","code":"000000","data":false}', False),
            ('{"status":"FAIL","code":"400204","errorMessage":"Order status invalid."}', False),
            ('{"status":"FAIL","code":"400202","errorMessage":"Order not found."}', False),
        ],
    )
    def test_answers(self, reply: str, accepted: bool) -> None:
        assert transformers.close_accepted(envelope(reply)) is accepted

    def test_other_refusals_are_unavailable(self) -> None:
        reply = '{"status":"FAIL","code":"400003","errorMessage":"Timestamp invalid."}'
        with pytest.raises(IssuerUnavailable, match="400003"):
            transformers.close_accepted(envelope(reply))


def notification(biz_type: str, biz_status: str, data: str) -> bytes:
    return (
        f'{{"bizType":"{biz_type}","bizId":383729303729303939,"bizIdStr":"383729303729303939",'
        f'"bizStatus":"{biz_status}","data":{json.dumps(data)}}}'
    ).encode()


PAID_DATA = (
    '{"merchantTradeNo":"0123456789abcdef0123456789abcdef","productType":"02",'
    '"productName":"Invoice INV-1","transactTime":1772367000250,"tradeType":"WEB",'
    '"totalFee":13.510000000000000001,"currency":"USDC","transactionId":"M_P_71505104267788288",'
    '"openUserId":"1211HS10K81f4273ac031","commission":0}'
)


class TestNotificationEvent:
    def test_pay_success(self) -> None:
        event = transformers.notification_event(notification("PAY", "PAY_SUCCESS", PAID_DATA))
        assert event is not None
        assert event.event_key == "383729303729303939:PAY_SUCCESS"
        assert event.trade_no == "0123456789abcdef0123456789abcdef"
        assert event.issuer_order_id == "383729303729303939"
        assert event.state is OrderState.PAID
        assert event.raw_status == "PAY_SUCCESS"
        assert event.payments == (
            Payment(
                payment_id="M_P_71505104267788288",
                amount=Decimal("13.510000000000000001"),
                currency="USDC",
                paid_at=datetime(2026, 3, 1, 12, 10, 0, 250000, tzinfo=UTC),
            ),
        )

    def test_pay_closed(self) -> None:
        data = '{"merchantTradeNo":"abc","totalFee":1.5,"currency":"USDT","transactTime":1}'
        event = transformers.notification_event(notification("PAY", "PAY_CLOSED", data))
        assert event is not None
        assert event.event_key == "383729303729303939:PAY_CLOSED"
        assert event.state is OrderState.EXPIRED
        assert event.payments == ()

    def test_refunds_are_not_acted_on(self) -> None:
        data = '{"merchantTradeNo":"abc","refundInfo":{"refundRequestId":"r1"}}'
        assert (
            transformers.notification_event(notification("PAY_REFUND", "REFUND_SUCCESS", data))
            is None
        )

    @pytest.mark.parametrize(
        "body",
        [
            b"",
            b"[]",
            b'{"bizType":"PAY","bizIdStr":"1","bizStatus":"PAY_SUCCESS"}',
            notification("PAY", "PAY_SUCCESS", "not json"),
            notification("PAY", "PAY_SUCCESS", '{"merchantTradeNo":"abc"}'),
        ],
        ids=["empty", "array", "no-data", "data-not-json", "data-incomplete"],
    )
    def test_malformed_bodies_raise(self, body: bytes) -> None:
        with pytest.raises((json.JSONDecodeError, ValidationError)):
            transformers.notification_event(body)
