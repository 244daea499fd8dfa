"""Bybit transformers: pure, exact with money, exhaustive over statuses."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from payrelay.issuers.base import OrderOpened, OrderRejected, OrderRequest, OrderState, Payment
from payrelay.issuers.bybit import transformers
from payrelay.issuers.bybit.wire import DEEPLINK_TEMPLATE, PayStatus

NOW = datetime(2026, 1, 7, 6, 0, 0, tzinfo=UTC)
ORDER = OrderRequest(
    trade_no="0123456789abcdef0123456789abcdef",
    reference="INV-1",
    issuer_merchant_id="305142568",
    amount_zar=Decimal("150.00"),
    pay_currency="USDC",
    pay_amount=Decimal("8.24"),
    description="Premium subscription",
    terminal_type="WEB",
    goods_type=None,
    success_url="https://shop.example/ok",
    failed_url="https://shop.example/failed",
    notify_url="https://relay.example/issuers/bybit/notifications",
    expires_at=NOW + timedelta(minutes=30),
)
PAY_ID = "01JY2KM5QNPXR8S4HTJZT9BC12"


def envelope(code: int, message: str, result: object = None) -> bytes:
    return json.dumps({"retCode": code, "retMsg": message, "result": result}).encode()


def pay_order(status: str, *, amount: object = "100", payment_time: int = 0) -> dict[str, object]:
    """The documented PayOrder sample (payment-result), with the fields under test varied."""
    return {
        "merchantId": "305142568",
        "clientId": "client_001",
        "paymentType": "E_COMMERCE",
        "merchantTradeNo": "af8c2d1-5b3e-4a9f-b6c7-8d2e1f3a4b5c",
        "payId": PAY_ID,
        "status": status,
        "amount": amount,
        "currency": "USDT",
        "currencyType": "crypto",
        "createTime": 1736233200,
        "paymentTime": payment_time,
        "finishTime": payment_time,
        "refundOrders": [],
    }


class TestCreateRequest:
    def test_body_carries_every_required_field(self) -> None:
        body = transformers.create_pay_request(ORDER, now=NOW)
        assert body == {
            "merchantId": "305142568",
            "paymentType": "E_COMMERCE",
            "merchantTradeNo": ORDER.trade_no,
            "goods": [
                {
                    "shoppingName": "Premium subscription",
                    "mccCode": "5999",
                    "goodsName": "Premium subscription",
                    "goodsDetail": "Premium subscription",
                }
            ],
            "orderAmount": "8.24",
            "currency": "USDC",
            "currencyType": "crypto",
            "successUrl": "https://shop.example/ok",
            "failedUrl": "https://shop.example/failed",
            "webhookUrl": "https://relay.example/issuers/bybit/notifications",
            "orderExpireTime": int((NOW + timedelta(minutes=30)).timestamp()),
            "env": {
                "terminalType": "WEB",
                "device": "payrelay",
                "browserVersion": "n/a",
                "ip": "0.0.0.0",
            },
            "riskInfo": {"terminalType": "WEB"},
        }

    @pytest.mark.parametrize(
        ("amount", "text"),
        [
            (Decimal("8.24"), "8.24"),
            (Decimal("8.240"), "8.240"),
            (Decimal("0.00000001"), "0.00000001"),
            (Decimal("1E+1"), "10"),
            (Decimal("123456789.12345678"), "123456789.12345678"),
        ],
    )
    def test_amount_is_the_exact_decimal_string(self, amount: Decimal, text: str) -> None:
        body = transformers.create_pay_request(replace(ORDER, pay_amount=amount), now=NOW)
        assert body["orderAmount"] == text

    @pytest.mark.parametrize("amount", [Decimal(0), Decimal("-1"), Decimal("NaN"), Decimal("Inf")])
    def test_impossible_amounts_are_refused(self, amount: Decimal) -> None:
        with pytest.raises(ValueError, match="positive finite"):
            transformers.create_pay_request(replace(ORDER, pay_amount=amount), now=NOW)

    def test_zar_is_priced_as_fiat(self) -> None:
        body = transformers.create_pay_request(
            replace(ORDER, pay_currency="ZAR", pay_amount=Decimal("150.00")), now=NOW
        )
        assert (body["currency"], body["currencyType"], body["orderAmount"]) == (
            "ZAR",
            "fiat",
            "150.00",
        )

    @pytest.mark.parametrize(
        ("expires_at", "expected"),
        [
            (NOW + timedelta(minutes=30), NOW + timedelta(minutes=30)),
            (NOW + timedelta(hours=1), NOW + timedelta(hours=1)),
            (NOW + timedelta(hours=2), NOW + timedelta(hours=1)),  # clamped to Bybit's maximum
            (NOW + timedelta(minutes=10, microseconds=900_000), NOW + timedelta(minutes=10)),
            (NOW + timedelta(milliseconds=500), NOW + timedelta(seconds=1)),  # never refused
            (NOW - timedelta(minutes=5), NOW + timedelta(seconds=1)),
        ],
    )
    def test_expiry_is_whole_seconds_between_a_second_and_an_hour_away(
        self, expires_at: datetime, expected: datetime
    ) -> None:
        body = transformers.create_pay_request(replace(ORDER, expires_at=expires_at), now=NOW)
        assert body["orderExpireTime"] == int(expected.timestamp())

    @pytest.mark.parametrize(
        ("given", "sent"),
        [
            ("APP", "APP"),
            ("WEB", "WEB"),
            ("wap", "WAP"),
            ("MINI_PROGRAM", "MINIAPP"),
            ("TV", "OTHERS"),
        ],
    )
    def test_terminal_types(self, given: str, sent: str) -> None:
        body = transformers.create_pay_request(replace(ORDER, terminal_type=given), now=NOW)
        assert body["env"]["terminalType"] == sent

    def test_long_descriptions_are_cut_to_bybit_limits(self) -> None:
        body = transformers.create_pay_request(replace(ORDER, description="x" * 300), now=NOW)
        goods = body["goods"][0]
        assert [len(goods[k]) for k in ("shoppingName", "goodsName", "goodsDetail")] == [
            64,
            160,
            256,
        ]

    def test_blank_description_falls_back_to_the_reference(self) -> None:
        body = transformers.create_pay_request(replace(ORDER, description="  "), now=NOW)
        assert body["goods"][0]["goodsName"] == "Order INV-1"


class TestCreateAnswer:
    def test_documented_success_opens_the_order(self) -> None:
        link = DEEPLINK_TEMPLATE.format(pay_id=PAY_ID)
        result = {
            "payId": PAY_ID,
            "terminalType": "WEB",
            "expireTime": 1736236800,
            "checkoutLink": link,
            "qrContent": "data:image/png;base64,iVBORw0KGgo",
            "order": pay_order("INIT"),
        }
        opened = transformers.opened_or_rejected(
            transformers.parse_envelope(envelope(100000, "success", result))
        )
        assert opened == OrderOpened(
            issuer_order_id=PAY_ID,
            link=link,
            details={
                "payId": PAY_ID,
                "checkoutLink": link,
                "qrContent": "data:image/png;base64,iVBORw0KGgo",
                "expireTime": "1736236800",
            },
        )
        assert link == (
            "bybitapp://open/route?targetUrl=by-mini%3A%2F%2Fpay%2FscanResult%3ForderNo%3D"
            "01JY2KM5QNPXR8S4HTJZT9BC12"
        )

    def test_duplicate_trade_no_is_flagged(self) -> None:
        answer = transformers.parse_envelope(envelope(400620, "Duplicate payment for order"))
        assert transformers.opened_or_rejected(answer) == OrderRejected(
            "400620", "Duplicate payment for order", duplicate_trade_no=True
        )

    @pytest.mark.parametrize(
        ("code", "message"),
        [
            (400002, "Signature verification failed"),
            (400009, "Currency not supported"),
            (500102, ""),
        ],
    )
    def test_other_refusals_keep_bybits_words(self, code: int, message: str) -> None:
        rejected = transformers.opened_or_rejected(
            transformers.parse_envelope(envelope(code, message))
        )
        assert isinstance(rejected, OrderRejected)
        assert (rejected.code, rejected.duplicate_trade_no) == (str(code), False)
        assert rejected.reason == (message or f"Bybit refused the order (retCode {code})")

    @pytest.mark.parametrize("result", [None, {}, {"payId": PAY_ID, "expireTime": 1}])
    def test_success_without_a_result_is_malformed(self, result: object) -> None:
        answer = transformers.parse_envelope(envelope(100000, "success", result))
        with pytest.raises(ValueError):  # noqa: PT011 - pydantic's ValidationError
            transformers.opened_or_rejected(answer)

    @pytest.mark.parametrize("raw", [b"", b"<html>", b"[]", b'{"retMsg":"x"}', b"\xff"])
    def test_unreadable_envelopes_raise(self, raw: bytes) -> None:
        with pytest.raises(ValueError):  # noqa: PT011 - json or pydantic
            transformers.parse_envelope(raw)


EXPECTED_STATES = {
    PayStatus.INIT: OrderState.PENDING,
    PayStatus.INITIAL: OrderState.PENDING,
    PayStatus.PAY_PROCESS: OrderState.PENDING,
    PayStatus.PAY_SUCCESS: OrderState.PAID,
    PayStatus.PARTIAL_REFUND: OrderState.PAID,
    PayStatus.REFUND: OrderState.PAID,
    PayStatus.REFUND_PROCESS: OrderState.PAID,
    PayStatus.REFUND_SUCCESS: OrderState.PAID,
    PayStatus.REFUND_FAILED: OrderState.PAID,
    PayStatus.REFUND_CANCEL: OrderState.PAID,
    PayStatus.PAY_FAILED: OrderState.FAILED,
    PayStatus.CANCEL: OrderState.FAILED,
    PayStatus.TIMEOUT: OrderState.EXPIRED,
}


class TestStatuses:
    def test_every_documented_status_is_listed(self) -> None:
        assert set(EXPECTED_STATES) == set(PayStatus)

    @pytest.mark.parametrize(("status", "state"), EXPECTED_STATES.items())
    def test_documented_status(self, status: PayStatus, state: OrderState) -> None:
        assert transformers.order_state(status.value) is state

    @pytest.mark.parametrize("status", ["", "pay_success", "PAID", "SETTLED", "PAY_SUCCESS "])
    def test_unknown_status_is_pending(self, status: str) -> None:
        assert transformers.order_state(status) is OrderState.PENDING


def link_for(pay_id: str) -> str:
    return f"https://sim.example/checkout/{pay_id}"


class TestQuery:
    def test_query_by_pay_id_when_known(self) -> None:
        params = transformers.pay_result_query(ORDER, PAY_ID)
        assert transformers.query_string(params) == (
            f"merchantId=305142568&paymentType=E_COMMERCE&payId={PAY_ID}"
        )

    def test_query_by_trade_no_otherwise(self) -> None:
        params = transformers.pay_result_query(ORDER, None)
        assert transformers.query_string(params) == (
            f"merchantId=305142568&paymentType=E_COMMERCE&merchantTradeNo={ORDER.trade_no}"
        )

    def test_not_found(self) -> None:
        answer = transformers.parse_envelope(envelope(400004, "Order does not exist"))
        report = transformers.report(answer, link_for)
        assert (report.state, report.issuer_order_id, report.payments) == (
            OrderState.NOT_FOUND,
            None,
            (),
        )

    def test_pending_has_no_payment_but_a_link(self) -> None:
        answer = transformers.parse_envelope(
            envelope(100000, "success", {"order": pay_order("INIT"), "customer": {}})
        )
        report = transformers.report(answer, link_for)
        assert report.state is OrderState.PENDING
        assert report.raw_status == "INIT"
        assert report.issuer_order_id == PAY_ID
        assert report.payments == ()
        assert report.link == f"https://sim.example/checkout/{PAY_ID}"

    @pytest.mark.parametrize(
        "amount", ["8.24", 8.24], ids=["documented string", "json number, still exact"]
    )
    def test_paid_reports_the_exact_payment(self, amount: object) -> None:
        order = pay_order("PAY_SUCCESS", amount=amount, payment_time=1736233260)
        answer = transformers.parse_envelope(envelope(100000, "success", {"order": order}))
        report = transformers.report(answer, link_for)
        assert report.state is OrderState.PAID
        assert report.payments == (
            Payment(PAY_ID, Decimal("8.24"), "USDT", datetime(2025, 1, 7, 7, 1, tzinfo=UTC)),
        )
        assert str(report.payments[0].amount) == "8.24"

    def test_refunded_order_still_reports_its_payment(self) -> None:
        order = pay_order("REFUND_SUCCESS", payment_time=1736233260)
        answer = transformers.parse_envelope(envelope(100000, "success", {"order": order}))
        (payment,) = transformers.report(answer, link_for).payments
        assert payment.amount == Decimal(100)

    def test_timeout_is_expired(self) -> None:
        answer = transformers.parse_envelope(
            envelope(100000, "success", {"order": pay_order("TIMEOUT")})
        )
        report = transformers.report(answer, link_for)
        assert (report.state, report.payments) == (OrderState.EXPIRED, ())

    @pytest.mark.parametrize("code", [400002, 400003, 10003])
    def test_other_errors_raise(self, code: int) -> None:
        with pytest.raises(ValueError, match=str(code)):
            transformers.report(transformers.parse_envelope(envelope(code, "no")), link_for)

    def test_negative_amount_is_malformed(self) -> None:
        answer = transformers.parse_envelope(
            envelope(100000, "success", {"order": pay_order("PAY_SUCCESS", amount="-1")})
        )
        with pytest.raises(ValueError):  # noqa: PT011 - pydantic's ValidationError
            transformers.report(answer, link_for)


class TestNotification:
    def test_payment_success(self) -> None:
        body = {**pay_order("PAY_SUCCESS", payment_time=1736233260), "customer": {"uid": "1"}}
        note = transformers.notification(json.dumps(body).encode())
        assert note is not None
        assert note.event_key == f"{PAY_ID}:PAY_SUCCESS"
        assert (note.trade_no, note.issuer_order_id) == (body["merchantTradeNo"], PAY_ID)
        assert (note.state, note.raw_status) == (OrderState.PAID, "PAY_SUCCESS")
        assert note.payments == (
            Payment(PAY_ID, Decimal(100), "USDT", datetime(2025, 1, 7, 7, 1, tzinfo=UTC)),
        )

    @pytest.mark.parametrize(
        ("status", "state"), [("PAY_FAILED", OrderState.FAILED), ("TIMEOUT", OrderState.EXPIRED)]
    )
    def test_failure_and_timeout(self, status: str, state: OrderState) -> None:
        note = transformers.notification(json.dumps(pay_order(status)).encode())
        assert note is not None
        assert (note.state, note.payments, note.event_key) == (state, (), f"{PAY_ID}:{status}")

    def test_refund_notification_is_ignored(self) -> None:
        refund = {
            "paymentType": "E_COMMERCE_REFUND",
            "refundId": "RF01JY2KM5QNPXR8S4HTJZT9BC14",
            "refundType": "MERCHNT_SELF_REFUND",
            "merchantTradeNo": "af8c2d1-5b3e-4a9f-b6c7-8d2e1f3a4b5c",
            "merchantRefundNo": "RF-2026-0001",
            "payId": PAY_ID,
            "refundStatus": "REFUND_SUCCESS",
            "refundCurrency": "USDT",
            "amount": "50",
            "createTime": 1736234000,
        }
        assert transformers.notification(json.dumps(refund).encode()) is None

    @pytest.mark.parametrize(
        "body",
        [
            b"",
            b"not json",
            b"[]",
            b'{"status":"PAY_SUCCESS"}',
            json.dumps(
                {k: v for k, v in pay_order("PAY_SUCCESS").items() if k != "payId"}
            ).encode(),
            json.dumps(pay_order("PAY_SUCCESS", amount="abc")).encode(),
        ],
    )
    def test_malformed_bodies_raise(self, body: bytes) -> None:
        with pytest.raises(ValueError):  # noqa: PT011 - json or pydantic
            transformers.notification(body)
