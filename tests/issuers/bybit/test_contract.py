"""The Bybit connector against the Bybit simulator, over real loopback HTTP.

Notifications travel from the simulator to a small receiver app that verifies them with the
connector, as payrelay's notification endpoint does, and answers with its acknowledgement.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, Response
from pydantic import SecretStr

from payrelay.issuers.base import (
    InvalidNotification,
    IssuerNotification,
    IssuerTimeout,
    IssuerUnavailable,
    OrderOpened,
    OrderRejected,
    OrderRequest,
    OrderState,
)
from payrelay.issuers.bybit import (
    BybitConnector,
    BybitCredentials,
    create_simulator,
    signing,
    transformers,
)
from payrelay.issuers.simkit import Simulator, SimulatorConfig
from tests.servers import serve_app

API_KEY, API_SECRET = "sim-api-key", "sim-api-secret"
PUBLIC = "http://payer.bybit.test/simulators/bybit"  # where payers would reach the simulator
MERCHANT_UID = "305142568"


@dataclass
class Receiver:
    """payrelay's notification endpoint in miniature."""

    connector: BybitConnector | None = None
    received: list[IssuerNotification | None] = field(default_factory=list)
    raw: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    refused: int = 0

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/notify")
        async def notify(request: Request) -> Response:
            assert self.connector is not None
            headers, body = dict(request.headers), await request.body()
            self.raw.append((headers, body))
            try:
                note = await self.connector.verify_notification(headers, body)
            except InvalidNotification:
                self.refused += 1
                return Response(status_code=401)
            self.received.append(note)
            ack = self.connector.acknowledgement()
            return Response(ack.body, status_code=ack.status_code, media_type=ack.media_type)

        return app

    def for_trade(self, trade_no: str) -> list[IssuerNotification]:
        return [n for n in self.received if n is not None and n.trade_no == trade_no]


@dataclass
class Bybit:
    simulator: Simulator
    api_url: str
    receiver: Receiver
    receiver_url: str
    client: httpx.AsyncClient

    def connector(
        self,
        *,
        secret: str = API_SECRET,
        api_key: str = API_KEY,
        timeout: httpx.Timeout | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> BybitConnector:
        credentials = BybitCredentials(api_key, SecretStr(secret), self.simulator.public_key_pem)
        options: dict[str, Any] = {"checkout_link_template": PUBLIC + "/checkout/{pay_id}"}
        if timeout is not None:
            options["timeout"] = timeout
        if clock is not None:
            options["clock"] = clock
        return BybitConnector(credentials, self.api_url, self.client, **options)

    def order(self, **changes: Any) -> OrderRequest:
        order = OrderRequest(
            trade_no=uuid.uuid4().hex,
            reference=f"INV-{uuid.uuid4().hex[:8]}",
            issuer_merchant_id=MERCHANT_UID,
            amount_zar=Decimal("150.00"),
            pay_currency="USDC",
            pay_amount=Decimal("8.24"),
            description="Premium subscription",
            terminal_type="WEB",
            goods_type=None,
            success_url="https://shop.example/ok",
            failed_url="https://shop.example/failed",
            notify_url=f"{self.receiver_url}/notify",
            expires_at=datetime.now(UTC) + timedelta(minutes=30),
        )
        return replace(order, **changes)

    async def control(self, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await self.client.post(f"{self.api_url}/_control/{path}", json=payload or {})
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result


@pytest.fixture(scope="module")
async def bybit() -> AsyncIterator[Bybit]:
    async with httpx.AsyncClient() as client:
        simulator = create_simulator(
            SimulatorConfig(API_KEY, API_SECRET, public_base_url=PUBLIC), notify_client=client
        )
        receiver = Receiver()
        async with serve_app(simulator.app) as api_url, serve_app(receiver.app()) as receiver_url:
            bybit = Bybit(simulator, api_url, receiver, receiver_url, client)
            receiver.connector = bybit.connector()
            yield bybit


@pytest.fixture(autouse=True)
async def reset_faults(bybit: Bybit) -> AsyncIterator[None]:
    yield
    await bybit.control("faults/reset")


async def opened(bybit: Bybit, order: OrderRequest) -> OrderOpened:
    result = await bybit.connector().create_order(order)
    assert isinstance(result, OrderOpened), result
    return result


class TestLifecycle:
    async def test_create_gives_the_checkout_link_and_query_is_pending(self, bybit: Bybit) -> None:
        connector, order = bybit.connector(), bybit.order()
        result = await opened(bybit, order)
        pay_id = result.issuer_order_id
        assert len(pay_id) == 26
        assert pay_id.isalnum()
        assert pay_id.isupper()
        assert result.link == f"{PUBLIC}/checkout/{pay_id}"
        assert result.details["payId"] == pay_id
        assert result.details["qrContent"].startswith("data:image/png;base64,")
        assert int(result.details["expireTime"]) == int(order.expires_at.timestamp())
        for issuer_order_id in (pay_id, None):
            report = await connector.query_order(order, issuer_order_id)
            assert (report.state, report.raw_status) == (OrderState.PENDING, "INIT")
            assert (report.issuer_order_id, report.link, report.payments) == (
                pay_id,
                result.link,
                (),
            )

    async def test_pay_notifies_and_reports_paid(self, bybit: Bybit) -> None:
        order = bybit.order()
        result = await opened(bybit, order)
        settled = await bybit.control(f"orders/{order.trade_no}/pay")
        assert (settled["status"], settled["changed"]) == ("PAY_SUCCESS", True)
        (note,) = bybit.receiver.for_trade(order.trade_no)
        assert note.event_key == f"{result.issuer_order_id}:PAY_SUCCESS"
        assert (note.state, note.issuer_order_id) == (OrderState.PAID, result.issuer_order_id)
        (payment,) = note.payments
        assert (payment.amount, payment.currency) == (Decimal("8.24"), "USDC")
        assert payment.paid_at is not None
        assert bybit.simulator.notifier.sent[-1]["status"] == 200
        assert bybit.simulator.notifier.sent[-1]["body"] == "success"
        report = await bybit.connector().query_order(order, result.issuer_order_id)
        assert (report.state, report.payments) == (OrderState.PAID, note.payments)

    @pytest.mark.parametrize(
        ("outcome", "status", "state"),
        [("decline", "PAY_FAILED", OrderState.FAILED), ("expire", "TIMEOUT", OrderState.EXPIRED)],
    )
    async def test_decline_and_expire(
        self, bybit: Bybit, outcome: str, status: str, state: OrderState
    ) -> None:
        order = bybit.order()
        result = await opened(bybit, order)
        await bybit.control(f"orders/{result.issuer_order_id}/{outcome}")  # by payId this time
        (note,) = bybit.receiver.for_trade(order.trade_no)
        assert (note.state, note.raw_status, note.payments) == (state, status, ())
        report = await bybit.connector().query_order(order, None)
        assert (report.state, report.raw_status) == (state, status)

    async def test_settled_orders_stay_settled(self, bybit: Bybit) -> None:
        order = bybit.order()
        await opened(bybit, order)
        await bybit.control(f"orders/{order.trade_no}/decline")
        again = await bybit.control(f"orders/{order.trade_no}/pay")
        assert (again["status"], again["changed"]) == ("PAY_FAILED", False)
        assert len(bybit.receiver.for_trade(order.trade_no)) == 1

    async def test_unknown_order_is_not_found(self, bybit: Bybit) -> None:
        report = await bybit.connector().query_order(bybit.order(), None)
        assert report.state is OrderState.NOT_FOUND

    async def test_unknown_order_cannot_be_settled(self, bybit: Bybit) -> None:
        response = await bybit.client.post(f"{bybit.api_url}/_control/orders/nope/pay")
        assert response.status_code == 404

    async def test_close_is_not_supported(self, bybit: Bybit) -> None:
        connector = bybit.connector()
        assert connector.supports_close is False
        assert await connector.close_order(bybit.order(), None) is False


class TestPayerPage:
    @pytest.mark.parametrize(
        ("button", "redirect", "state"),
        [
            ("pay", "https://shop.example/ok", OrderState.PAID),
            ("decline", "https://shop.example/failed", OrderState.FAILED),
        ],
    )
    async def test_buttons_settle_notify_and_redirect(
        self, bybit: Bybit, button: str, redirect: str, state: OrderState
    ) -> None:
        order = bybit.order()
        result = await opened(bybit, order)
        page_url = result.link.replace(PUBLIC, bybit.api_url)
        page = await bybit.client.get(page_url)
        assert page.status_code == 200
        assert 'id="pay"' in page.text
        assert "8.24 USDC" in page.text
        action = f"{result.issuer_order_id}/{button}"
        assert f'action="{action}"' in page.text
        pressed = await bybit.client.post(httpx.URL(page_url).join(action))
        assert (pressed.status_code, pressed.headers["location"]) == (303, redirect)
        (note,) = bybit.receiver.for_trade(order.trade_no)
        assert note.state is state
        after = await bybit.client.get(page_url)
        assert 'id="status"' in after.text
        assert 'id="pay"' not in after.text


class TestNotifications:
    async def test_duplicates_share_the_event_key(self, bybit: Bybit) -> None:
        order = bybit.order()
        await opened(bybit, order)
        await bybit.control("faults", {"duplicate_notifications": True})
        await bybit.control(f"orders/{order.trade_no}/pay")
        first, second = bybit.receiver.for_trade(order.trade_no)
        assert first.event_key == second.event_key
        assert first == second

    async def test_lost_notification_is_recovered_by_polling(self, bybit: Bybit) -> None:
        order = bybit.order()
        await opened(bybit, order)
        await bybit.control("faults", {"drop_notifications": 1})
        await bybit.control(f"orders/{order.trade_no}/pay")
        assert bybit.receiver.for_trade(order.trade_no) == []
        report = await bybit.connector().query_order(order, None)
        assert report.state is OrderState.PAID

    async def test_held_notifications_arrive_newest_first(self, bybit: Bybit) -> None:
        first, second = bybit.order(), bybit.order()
        await opened(bybit, first)
        await opened(bybit, second)
        await bybit.control("faults", {"hold_notifications": True})
        await bybit.control(f"orders/{first.trade_no}/pay")
        await bybit.control(f"orders/{second.trade_no}/decline")
        assert (await bybit.control("notifications/release"))["released"] == 2
        trades = [n.trade_no for n in bybit.receiver.received[-2:] if n is not None]
        assert trades == [second.trade_no, first.trade_no]

    async def genuine(self, bybit: Bybit) -> tuple[dict[str, str], bytes]:
        order = bybit.order()
        await opened(bybit, order)
        await bybit.control(f"orders/{order.trade_no}/pay")
        return bybit.receiver.raw[-1]

    @pytest.mark.parametrize(
        "tamper",
        [
            lambda h, b: (h, b.replace(b'"8.24"', b'"80.24"')),
            lambda h, b: (h, b + b" "),
            lambda h, b: ({**h, "timestamp": str(int(h["timestamp"]) + 1)}, b),
            lambda h, b: ({**h, "signature": h["signature"][::-1]}, b),
            lambda h, b: ({**h, "signature": "%%%"}, b),
            lambda h, b: ({k: v for k, v in h.items() if k != "signature"}, b),
            lambda h, b: ({k: v for k, v in h.items() if k != "timestamp"}, b),
            lambda h, b: ({**h, "timestamp": h["timestamp"] + "000"}, b),
            lambda h, b: ({**h, "timestamp": "999999999999"}, b),
            lambda h, b: ({**h, "timestamp": "9" * 40}, b),
        ],
        ids=[
            "amount",
            "trailing space",
            "timestamp",
            "signature",
            "bad base64",
            "no signature",
            "no timestamp",
            "milliseconds",
            "far future",
            "huge",
        ],
    )
    async def test_tampered_notification_is_refused(
        self, bybit: Bybit, tamper: Callable[[dict[str, str], bytes], tuple[dict[str, str], bytes]]
    ) -> None:
        headers, body = tamper(*await self.genuine(bybit))
        with pytest.raises(InvalidNotification):
            await bybit.connector().verify_notification(headers, body)
        refused = bybit.receiver.refused
        resend = {k: v for k, v in headers.items() if k not in ("content-length", "host")}
        response = await bybit.client.post(
            f"{bybit.receiver_url}/notify", content=body, headers=resend
        )
        assert response.status_code == 401
        assert bybit.receiver.refused == refused + 1

    async def test_non_ascii_digits_are_refused(self, bybit: Bybit) -> None:
        headers, body = await self.genuine(bybit)
        wide = "".join(chr(ord(c) - ord("0") + ord("\uff10")) for c in headers["timestamp"])
        with pytest.raises(InvalidNotification, match="timestamp"):
            await bybit.connector().verify_notification({**headers, "timestamp": wide}, body)

    async def test_genuine_notification_verifies_with_any_header_case(self, bybit: Bybit) -> None:
        headers, body = await self.genuine(bybit)
        shouted = {name.upper(): value for name, value in headers.items()}
        note = await bybit.connector().verify_notification(shouted, body)
        assert note is not None
        assert note.state is OrderState.PAID

    @pytest.mark.parametrize("skew", [timedelta(minutes=6), -timedelta(minutes=6)])
    async def test_stale_or_future_notification_is_refused(
        self, bybit: Bybit, skew: timedelta
    ) -> None:
        headers, body = await self.genuine(bybit)
        connector = bybit.connector(clock=lambda: datetime.now(UTC) + skew)
        with pytest.raises(InvalidNotification, match="5 minutes"):
            await connector.verify_notification(headers, body)

    async def test_other_keys_signature_is_refused(self, bybit: Bybit) -> None:
        headers, body = await self.genuine(bybit)
        other = create_simulator(SimulatorConfig(API_KEY, API_SECRET), notify_client=bybit.client)
        connector = BybitConnector(
            BybitCredentials(API_KEY, SecretStr(API_SECRET), other.public_key_pem),
            bybit.api_url,
            bybit.client,
        )
        with pytest.raises(InvalidNotification, match="signature"):
            await connector.verify_notification(headers, body)

    async def test_without_a_platform_key_every_notification_is_refused(self, bybit: Bybit) -> None:
        headers, body = await self.genuine(bybit)
        connector = BybitConnector(
            BybitCredentials(API_KEY, SecretStr(API_SECRET)), bybit.api_url, bybit.client
        )
        with pytest.raises(InvalidNotification, match="public key"):
            await connector.verify_notification(headers, body)

    async def test_refund_notification_is_verified_and_ignored(self, bybit: Bybit) -> None:
        """The simulator does not refund, so sign the documented refund sample ourselves."""
        key = signing.generate_private_key()
        connector = BybitConnector(
            BybitCredentials(
                API_KEY, SecretStr(API_SECRET), signing.public_key_pem(key.public_key())
            ),
            bybit.api_url,
            bybit.client,
        )
        body = json.dumps(
            {
                "paymentType": "E_COMMERCE_REFUND",
                "refundId": "RF01JY2KM5QNPXR8S4HTJZT9BC14",
                "payId": "01JY2KM5QNPXR8S4HTJZT9BC12",
                "refundStatus": "REFUND_SUCCESS",
                "amount": "50",
            }
        ).encode()
        timestamp = str(int(time.time()))
        headers = {
            "timestamp": timestamp,
            "signature": signing.sign_notification(key, timestamp, body),
        }
        assert await connector.verify_notification(headers, body) is None
        with pytest.raises(InvalidNotification):
            await connector.verify_notification(headers, body.replace(b"50", b"500"))

    def test_acknowledgement_is_plain_success(self, bybit: Bybit) -> None:
        ack = bybit.connector().acknowledgement()
        assert (ack.status_code, ack.media_type, ack.body) == (200, "text/plain", b"success")


class TestFaults:
    async def test_bad_signature_gets_bybits_error(self, bybit: Bybit) -> None:
        connector = bybit.connector(secret="wrong-secret")
        result = await connector.create_order(bybit.order())
        assert result == OrderRejected("400002", "Signature verification failed")
        with pytest.raises(IssuerUnavailable, match="400002"):
            await connector.query_order(bybit.order(), None)

    async def test_unknown_api_key(self, bybit: Bybit) -> None:
        result = await bybit.connector(api_key="someone-else").create_order(bybit.order())
        assert isinstance(result, OrderRejected)
        assert (result.code, result.reason) == ("10003", "API key is invalid.")

    @pytest.mark.parametrize("skew", [timedelta(seconds=-6), timedelta(seconds=2)])
    async def test_clock_outside_the_receive_window(self, bybit: Bybit, skew: timedelta) -> None:
        connector = bybit.connector(clock=lambda: datetime.now(UTC) + skew)
        result = await connector.create_order(bybit.order())
        assert isinstance(result, OrderRejected)
        assert result.code == "400003"
        assert "recv_window" in result.reason

    async def test_fail_next_is_unavailable(self, bybit: Bybit) -> None:
        await bybit.control("faults", {"fail_next": 2})
        connector = bybit.connector()
        with pytest.raises(IssuerUnavailable, match="HTTP 500"):
            await connector.create_order(bybit.order())
        with pytest.raises(IssuerUnavailable, match="HTTP 500"):
            await connector.query_order(bybit.order(), None)

    async def test_unreachable_is_unavailable(self, bybit: Bybit) -> None:
        connector = BybitConnector(
            BybitCredentials(API_KEY, SecretStr(API_SECRET)), "http://127.0.0.1:9", bybit.client
        )
        with pytest.raises(IssuerUnavailable) as caught:
            await connector.create_order(bybit.order())
        assert not isinstance(caught.value, IssuerTimeout)

    async def test_hang_next_times_out(self, bybit: Bybit) -> None:
        await bybit.control("faults", {"hang_next": 1})
        before = asyncio.all_tasks()
        connector = bybit.connector(timeout=httpx.Timeout(0.3))
        try:
            with pytest.raises(IssuerTimeout):
                await connector.create_order(bybit.order())
        finally:
            cancel_hung_requests(before)

    async def test_reject_next_carries_bybits_reason(self, bybit: Bybit) -> None:
        await bybit.control("faults", {"reject_next": 1})
        result = await bybit.connector().create_order(bybit.order())
        assert result == OrderRejected("500102", "Merchant is not available via API")
        assert isinstance(await bybit.connector().create_order(bybit.order()), OrderOpened)

    async def test_same_trade_no_twice_is_adopted_by_query(self, bybit: Bybit) -> None:
        connector, order = bybit.connector(), bybit.order()
        first = await opened(bybit, order)
        again = await connector.create_order(order)
        assert again == OrderRejected("400620", "Duplicate payment for order", True)
        report = await connector.query_order(order, None)
        assert (report.state, report.issuer_order_id, report.link) == (
            OrderState.PENDING,
            first.issuer_order_id,
            first.link,
        )


def cancel_hung_requests(before: set[asyncio.Task[Any]]) -> None:
    """End the simulator's request that ``hang_next`` left sleeping, so the server can stop."""
    for task in asyncio.all_tasks() - before:
        name = getattr(task.get_coro(), "__qualname__", "")
        if name.endswith("run_asgi"):
            task.cancel()


class TestSimulatorChecks:
    """Requests built by hand, to see the simulator enforce Bybit's rules."""

    async def post(self, bybit: Bybit, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
        response = await bybit.client.post(
            f"{bybit.api_url}/v5/bybitpay/create_pay", content=body, headers=headers
        )
        assert response.status_code == 200
        result: dict[str, Any] = response.json()
        return result

    def signed(self, body: bytes, **overrides: str) -> dict[str, str]:
        headers = signing.request_headers(
            API_KEY, API_SECRET, body.decode(), timestamp_ms=time.time_ns() // 1_000_000
        )
        return {**headers, **overrides}

    async def test_body_changed_after_signing(self, bybit: Bybit) -> None:
        body = json.dumps({"merchantId": MERCHANT_UID}).encode()
        answer = await self.post(bybit, body + b" ", self.signed(body))
        assert (answer["retCode"], answer["retMsg"]) == (400002, "Signature verification failed")

    async def test_missing_signature(self, bybit: Bybit) -> None:
        body = b"{}"
        headers = {k: v for k, v in self.signed(body).items() if k != "X-BAPI-SIGN"}
        assert (await self.post(bybit, body, headers))["retCode"] == 400002

    async def test_unsupported_version(self, bybit: Bybit) -> None:
        body = b"{}"
        answer = await self.post(bybit, body, self.signed(body, Version="4.00"))
        assert answer["retCode"] == 500106

    async def test_envelope_shape(self, bybit: Bybit) -> None:
        body = b"{}"
        answer = await self.post(bybit, body, self.signed(body))
        assert set(answer) == {"retCode", "retMsg", "result", "retExtInfo", "time"}
        assert answer["retCode"] == 400000

    @pytest.mark.parametrize(
        ("change", "code"),
        [
            ({"paymentType": "QR_PAY"}, 400007),
            ({"currency": "DOGE"}, 400009),
            ({"orderAmount": "8.123456789"}, 400008),
            ({"orderAmount": "-1"}, 400000),
            ({"orderAmount": 8.24}, 400000),
            ({"currencyType": "stable"}, 400000),
            ({"goods": []}, 400000),
            ({"env": {"terminalType": "WEB"}}, 400000),
            ({"webhookUrl": "https://x.example/" + "a" * 250}, 400000),
            ({"orderExpireTime": int(time.time()) + 7200}, 400000),
        ],
    )
    async def test_create_fields_are_checked(
        self, bybit: Bybit, change: dict[str, Any], code: int
    ) -> None:
        document = {**transformers.create_pay_request(bybit.order(), now=datetime.now(UTC))}
        document.update(change)
        body = json.dumps(document).encode()
        assert (await self.post(bybit, body, self.signed(body)))["retCode"] == code
