"""The Binance Pay connector against its simulator over loopback HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from payrelay.issuers.base import (
    InvalidNotification,
    IssuerTimeout,
    IssuerUnavailable,
    OrderOpened,
    OrderRejected,
    OrderState,
)
from payrelay.issuers.binance import signing
from payrelay.issuers.binance.connector import ACKNOWLEDGEMENT_BODY
from payrelay.issuers.binance.transformers import create_order_body
from payrelay.issuers.binance.wire import CREATE_ORDER_PATH, QUERY_ORDER_PATH
from payrelay.kit.jsonio import dumps_exact
from tests.harness import free_port
from tests.issuers.binance.support import API_KEY, API_SECRET, Stack, credentials

pytestmark = pytest.mark.usefixtures("fresh")


async def opened(stack: Stack, **overrides: Any) -> tuple[Any, OrderOpened]:
    order = stack.order(**overrides)
    result = await stack.connector.create_order(order)
    assert isinstance(result, OrderOpened), result
    return order, result


class TestCreateAndQuery:
    async def test_web_order_links_to_the_payer_page(self, stack: Stack) -> None:
        _, result = await opened(stack)
        prepay_id = result.issuer_order_id
        assert result.link == f"{stack.sim_url}/checkout/{prepay_id}"
        assert result.details["prepayId"] == prepay_id
        assert result.details["checkoutUrl"] == result.link
        assert result.details["qrContent"] == result.link
        assert result.details["expireTime"].isdigit()

    async def test_app_order_gets_a_bnc_deeplink(self, stack: Stack) -> None:
        _, result = await opened(stack, terminal_type="APP")
        assert result.link.startswith("bnc://app.binance.com/payment/secpay?")
        page = await stack.http.get(result.details["checkoutUrl"])
        assert page.status_code == 200
        assert 'id="pay"' in page.text
        assert "13.51234567 USDC" in page.text

    async def test_a_new_order_is_pending(self, stack: Stack) -> None:
        order, result = await opened(stack)
        for issuer_order_id in (None, result.issuer_order_id):
            report = await stack.connector.query_order(order, issuer_order_id)
            assert report.state is OrderState.PENDING
            assert report.raw_status == "INITIAL"
            assert report.issuer_order_id == result.issuer_order_id
            assert report.payments == ()

    async def test_an_unknown_order_is_not_found(self, stack: Stack) -> None:
        report = await stack.connector.query_order(stack.order(), None)
        assert report.state is OrderState.NOT_FOUND


class TestOutcomes:
    async def test_pay_sends_a_verified_notification(self, stack: Stack) -> None:
        order, result = await opened(stack)
        settled = await stack.control(f"orders/{order.trade_no}/pay")
        assert settled["status"] == "PAID"

        [event] = await stack.receiver.wait_for(1)
        assert event is not None
        assert event.event_key == f"{result.issuer_order_id}:PAY_SUCCESS"
        assert event.trade_no == order.trade_no
        assert event.state is OrderState.PAID
        [payment] = event.payments
        assert payment.amount == Decimal("13.51234567")
        assert payment.currency == "USDC"
        sent = (await stack.control_get("notifications"))["sent"][-1]
        assert sent == {
            "url": stack.notify_url,
            "status": 200,
            "body": ACKNOWLEDGEMENT_BODY.decode(),
        }

        report = await stack.connector.query_order(order, result.issuer_order_id)
        assert report.state is OrderState.PAID
        assert report.payments == (payment,)

    async def test_decline_closes_and_the_query_says_failed(self, stack: Stack) -> None:
        order, result = await opened(stack)
        await stack.control(f"orders/{result.issuer_order_id}/decline")
        [event] = await stack.receiver.wait_for(1)
        assert event is not None
        assert event.raw_status == "PAY_CLOSED"
        assert event.state is OrderState.EXPIRED  # payrelay asks before acting on PAY_CLOSED
        report = await stack.connector.query_order(order, None)
        assert (report.state, report.raw_status) == (OrderState.FAILED, "CANCELED")

    async def test_expire(self, stack: Stack) -> None:
        order, _ = await opened(stack)
        await stack.control(f"orders/{order.trade_no}/expire")
        [event] = await stack.receiver.wait_for(1)
        assert event is not None
        assert event.state is OrderState.EXPIRED
        report = await stack.connector.query_order(order, None)
        assert (report.state, report.raw_status) == (OrderState.EXPIRED, "EXPIRED")

    async def test_a_settled_order_does_not_change_or_notify_again(self, stack: Stack) -> None:
        order, _ = await opened(stack)
        await stack.control(f"orders/{order.trade_no}/pay")
        again = await stack.control(f"orders/{order.trade_no}/decline")
        assert (again["status"], again["changed"]) == ("PAID", False)
        assert len(await stack.receiver.wait_for(1)) == 1

    async def test_unknown_orders_cannot_be_settled(self, stack: Stack) -> None:
        response = await stack.http.post(f"{stack.sim_url}/_control/orders/nope/pay")
        assert response.status_code == 404

    @pytest.mark.parametrize(
        ("button", "target", "state"),
        [
            ("pay", "https://shop.example/paid", OrderState.PAID),
            ("decline", "https://shop.example/failed", OrderState.FAILED),
        ],
    )
    async def test_the_payer_page(
        self, stack: Stack, button: str, target: str, state: OrderState
    ) -> None:
        order, result = await opened(stack)
        page = await stack.http.get(result.link)
        action = f"{result.link}/{button}"
        assert f'action="{action}"' in page.text
        pressed = await stack.http.post(action)
        assert pressed.status_code == 303
        assert pressed.headers["location"] == target
        assert len(await stack.receiver.wait_for(1)) == 1
        assert (await stack.connector.query_order(order, None)).state is state
        settled = await stack.http.get(result.link)
        assert 'id="status"' in settled.text

    async def test_an_order_expires_on_its_own(self, stack: Stack) -> None:
        order, _ = await opened(stack, expires_at=datetime.now(UTC) + timedelta(seconds=1))
        await asyncio.sleep(1.1)
        report = await stack.connector.query_order(order, None)
        assert report.state is OrderState.EXPIRED
        [event] = await stack.receiver.wait_for(1)
        assert event is not None
        assert event.raw_status == "PAY_CLOSED"

    async def test_close(self, stack: Stack) -> None:
        order, result = await opened(stack)
        assert await stack.connector.close_order(order, result.issuer_order_id) is True
        [event] = await stack.receiver.wait_for(1)
        assert event is not None
        assert event.raw_status == "PAY_CLOSED"
        assert (await stack.connector.query_order(order, None)).state is OrderState.FAILED
        assert await stack.connector.close_order(order, None) is False

    async def test_a_paid_order_cannot_be_closed(self, stack: Stack) -> None:
        order, _ = await opened(stack)
        await stack.control(f"orders/{order.trade_no}/pay")
        assert await stack.connector.close_order(order, None) is False
        assert await stack.connector.close_order(stack.order(), None) is False


class TestNotifications:
    async def genuine(self, stack: Stack) -> tuple[dict[str, str], bytes]:
        order, _ = await opened(stack)
        await stack.control(f"orders/{order.trade_no}/pay")
        await stack.receiver.wait_for(1)
        return stack.receiver.raw[-1]

    @pytest.mark.parametrize(
        "tamper",
        [
            "body",
            "timestamp",
            "nonce",
            "signature-not-base64",
            "signature-other",
            "unknown-serial",
            *(f"missing-{name}" for name in ("Signature", "Nonce", "Timestamp", "Certificate-SN")),
        ],
    )
    async def test_tampered_notifications_are_refused(self, stack: Stack, tamper: str) -> None:
        headers, body = await self.genuine(stack)
        assert await stack.connector.verify_notification(headers, body) is not None
        headers = dict(headers)
        match tamper:
            case "body":
                body = body.replace(b"PAY_SUCCESS", b"PAY_CLOSED")
            case "timestamp":
                headers["binancepay-timestamp"] = str(int(headers["binancepay-timestamp"]) + 1)
            case "nonce":
                headers["binancepay-nonce"] = headers["binancepay-nonce"][::-1]
            case "signature-not-base64":
                headers["binancepay-signature"] = "%%%" + headers["binancepay-signature"]
            case "signature-other":
                headers["binancepay-signature"] = base64.b64encode(b"x" * 256).decode()
            case "unknown-serial":
                headers["binancepay-certificate-sn"] = "0" * 32
            case _:
                del headers["binancepay-" + tamper.removeprefix("missing-").lower()]
        with pytest.raises(InvalidNotification):
            await stack.connector.verify_notification(headers, body)

    async def test_keys_are_cached_and_refetched_after_rotation(self, stack: Stack) -> None:
        await self.genuine(stack)
        before = stack.certificate_fetches
        stack.receiver.clear()
        await self.genuine(stack)
        assert stack.certificate_fetches == before  # cached by serial

        old_pem = stack.simulator.public_key_pem
        rotated = await stack.control("rotate-key")
        assert stack.simulator.public_key_pem != old_pem
        stack.receiver.clear()
        headers, _ = await self.genuine(stack)
        assert headers["binancepay-certificate-sn"] == rotated["certSerial"]
        assert stack.receiver.refused == []
        assert stack.certificate_fetches == before + 1

    async def test_unknown_serials_refetch_at_most_once_per_interval(self, stack: Stack) -> None:
        headers, body = await self.genuine(stack)
        calls: list[str] = []

        async def record(request: httpx.Request) -> None:
            calls.append(request.url.path)

        async with httpx.AsyncClient(event_hooks={"request": [record]}) as client:
            connector = stack.connector_with(client=client, certificate_refetch_interval=60.0)
            assert await connector.verify_notification(headers, body) is not None
            forged = dict(headers, **{"binancepay-certificate-sn": "f" * 32})
            for _ in range(3):
                with pytest.raises(InvalidNotification, match="unknown certificate serial"):
                    await connector.verify_notification(forged, body)
        assert len(calls) == 1

    async def test_duplicates_carry_the_same_event_key(self, stack: Stack) -> None:
        await stack.control("faults", {"duplicate_notifications": True})
        order, _ = await opened(stack)
        await stack.control(f"orders/{order.trade_no}/pay")
        first, second = await stack.receiver.wait_for(2)
        assert first is not None
        assert second is not None
        assert first.event_key == second.event_key

    async def test_a_lost_notification_is_recovered_by_polling(self, stack: Stack) -> None:
        await stack.control("faults", {"drop_notifications": 1})
        order, result = await opened(stack)
        await stack.control(f"orders/{order.trade_no}/pay")
        assert stack.receiver.events == []
        report = await stack.connector.query_order(order, result.issuer_order_id)
        assert report.state is OrderState.PAID

    async def test_the_acknowledgement(self, stack: Stack) -> None:
        ack = stack.connector.acknowledgement()
        assert (ack.status_code, ack.media_type) == (200, "application/json")
        assert json.loads(ack.body) == {"returnCode": "SUCCESS", "returnMessage": None}


class TestFaults:
    async def test_a_wrong_secret_gets_binances_signature_error(self, stack: Stack) -> None:
        connector = stack.connector_with(credentials=credentials(secret="wrong" * 12))
        order = stack.order()
        assert await connector.create_order(order) == OrderRejected(
            "400002", "Signature for this request is not valid."
        )
        with pytest.raises(IssuerUnavailable, match="400002"):
            await connector.query_order(order, None)

    async def test_a_5xx_is_unavailable(self, stack: Stack) -> None:
        await stack.control("faults", {"fail_next": 1})
        with pytest.raises(IssuerUnavailable, match="HTTP 500"):
            await stack.connector.create_order(stack.order())
        await opened(stack)

    async def test_a_hang_is_a_timeout(self, stack: Stack) -> None:
        await stack.control("faults", {"hang_next": 1})
        connector = stack.connector_with(timeout=httpx.Timeout(0.3))
        order = stack.order()
        with pytest.raises(IssuerTimeout):
            await connector.create_order(order)
        assert (await connector.query_order(order, None)).state is OrderState.NOT_FOUND

    async def test_latency_does_not_break_the_timestamp_window(self, stack: Stack) -> None:
        await stack.control("faults", {"latency_seconds": 1.2})
        await opened(stack)

    async def test_connection_refused_is_unavailable(self, stack: Stack) -> None:
        connector = stack.connector_with(base_url=f"http://127.0.0.1:{free_port()}")
        with pytest.raises(IssuerUnavailable) as caught:
            await connector.create_order(stack.order())
        assert not isinstance(caught.value, IssuerTimeout)

    async def test_a_business_refusal_is_data(self, stack: Stack) -> None:
        await stack.control("faults", {"reject_next": 1})
        rejected = await stack.connector.create_order(stack.order())
        assert rejected == OrderRejected(
            "400203", "Merchant account status is not allowed to create orders."
        )

    async def test_a_repeated_trade_no_is_adopted(self, stack: Stack) -> None:
        order, first = await opened(stack)
        again = await stack.connector.create_order(order)
        assert isinstance(again, OrderRejected)
        assert again.code == "400201"
        assert again.duplicate_trade_no
        report = await stack.connector.query_order(order, None)
        assert report.state is OrderState.PENDING
        assert report.issuer_order_id == first.issuer_order_id


async def raw_call(
    stack: Stack,
    body: bytes = b'{"merchantTradeNo":"nothing"}',
    *,
    path: str = QUERY_ORDER_PATH,
    timestamp_ms: int | None = None,
    nonce: str | None = None,
    api_key: str = API_KEY,
    transform: Any = None,
) -> httpx.Response:
    headers = signing.request_headers(
        api_key,
        API_SECRET,
        body,
        timestamp_ms=timestamp_ms or time.time_ns() // 1_000_000,
        nonce=nonce or signing.make_nonce(),
    )
    if transform is not None:
        transform(headers)
    return await stack.http.post(stack.sim_url + path, content=body, headers=headers)


def lower_signature(headers: dict[str, str]) -> None:
    headers["BinancePay-Signature"] = headers["BinancePay-Signature"].lower()


class TestSimulatorChecks:
    """The simulator refuses what Binance refuses, with Binance's own envelopes."""

    async def test_a_signed_request_passes(self, stack: Stack) -> None:
        response = await raw_call(stack)
        assert response.json()["code"] == "400202"

    @pytest.mark.parametrize(
        ("options", "code"),
        [
            ({"timestamp_ms": time.time_ns() // 1_000_000 - 5_000}, "400003"),
            ({"timestamp_ms": int(time.time())}, "400003"),
            ({"nonce": "short"}, "400001"),
            ({"api_key": "someone-else"}, "400004"),
            ({"transform": lower_signature}, "400002"),
        ],
        ids=["stale", "seconds", "nonce", "api-key", "lower-case"],
    )
    async def test_authentication(self, stack: Stack, options: dict[str, Any], code: str) -> None:
        response = await raw_call(stack, **options)
        assert response.status_code == 400
        assert response.json()["status"] == "FAIL"
        assert response.json()["code"] == code

    async def test_bad_signature_body(self, stack: Stack) -> None:
        def forge(headers: dict[str, str]) -> None:
            headers["BinancePay-Signature"] = "0" * 128

        response = await raw_call(stack, transform=forge)
        assert response.json() == {
            "status": "FAIL",
            "code": "400002",
            "errorMessage": "Signature for this request is not valid.",
        }

    async def test_malformed_http_is_a_system_abnormality(self, stack: Stack) -> None:
        def plain(headers: dict[str, str]) -> None:
            headers["Content-Type"] = "text/plain"

        expected = {
            "status": "ERROR",
            "type": "SYS",
            "code": "100001001",
            "errorData": "System abnormality",
        }
        assert (await raw_call(stack, transform=plain)).json() == expected
        assert (await stack.http.get(stack.sim_url + QUERY_ORDER_PATH)).json() == expected

    async def test_an_unknown_path_is_cloudfronts_403(self, stack: Stack) -> None:
        response = await raw_call(stack, path="/binancepay/openapi/v9/nothing")
        assert response.status_code == 403
        assert "could not be satisfied" in response.text

    @pytest.mark.parametrize(
        ("change", "code"),
        [
            ({"orderAmount": Decimal("1.123456789")}, "400102"),
            ({"orderAmount": Decimal("0")}, "400102"),
            ({"currency": "ZAR"}, "400102"),
            ({"description": ""}, "400100"),
            ({"goodsDetails": []}, "400100"),
            ({"env": {"terminalType": "TV"}}, "400102"),
            ({"merchantTradeNo": "has-dashes"}, "400201"),
            ({"orderExpireTime": 1}, "400102"),
            ({"returnUrl": "https://shop.example/" + "x" * 256}, "400101"),
        ],
        ids=lambda value: next(iter(value)) if isinstance(value, dict) else value,
    )
    async def test_create_validation(self, stack: Stack, change: dict[str, Any], code: str) -> None:
        body = dict(create_order_body(stack.order())) | change
        response = await raw_call(stack, dumps_exact(body), path=CREATE_ORDER_PATH)
        assert response.json()["code"] == code
