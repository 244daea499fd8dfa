"""Issue 3 end to end: every issuer in test mode, through its connector and its simulator.

The sandbox plays the payer at the simulator; the outcome comes back the way a real issuer's
does (a signed notification into the inbox, or for VALR a poll of its history), and the faults
the simulators can induce are each shown to end correctly.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import func, select

from payrelay.auth.keys import Mode
from payrelay.db.models import IssuerEvent, TransferPayment
from payrelay.issuers.base import Issuer, OrderRequest, trade_no_for
from tests.factories import transfer_body
from tests.harness import Harness, MerchantKeys
from tests.http_checks import (
    assert_shape_c,
    assert_shape_d,
    create_transfer,
    stored_transfer,
    transitions,
    update_transfer,
)

ISSUERS = ["Binance", "Bybit", "Valr"]
PUSHING = {"Binance": "notification", "Bybit": "notification", "Valr": "poll"}


async def status_of(api: Harness, keys: MerchantKeys, reference: str) -> Any:
    return await api.client.get(f"/tx/payment-status/{reference}", headers=keys.test)


async def control(api: Harness, issuer: str, path: str, body: Any = None) -> Any:
    response = await api.client.post(f"/simulators/{issuer.lower()}/_control/{path}", json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def reset_faults(api: Harness) -> None:
    for issuer in ISSUERS:
        await control(api, issuer, "faults/reset")


@pytest.fixture(autouse=True)
async def _clean_faults(api: Harness) -> Any:
    await reset_faults(api)
    yield
    await reset_faults(api)


async def eventually(
    api: Harness,
    done: Callable[[], Awaitable[bool]],
    why: str,
    *,
    repoll: tuple[MerchantKeys, str] | None = None,
    seconds: float = 12,
) -> None:
    """Run the background loops (in-process) or wait for the server's own, until ``done()``.

    ``repoll`` makes one transfer due for an issuer poll again on each round (in-process)."""
    deadline = time.monotonic() + seconds
    while True:
        if api.transport == "inproc":
            if repoll is not None:
                keys, reference = repoll
                await update_transfer(api, keys.merchant_id, reference, next_poll_at=None)
            await api.sweep()
        if await done():
            return
        assert time.monotonic() < deadline, why
        await asyncio.sleep(0.3)


async def wait_for_status(
    api: Harness, keys: MerchantKeys, reference: str, expected: str, seconds: float = 12
) -> None:
    async def reached() -> bool:
        response = await status_of(api, keys, reference)
        return response.status_code == 200 and response.json()["status"] == expected

    await eventually(api, reached, f"{reference} never became {expected}", seconds=seconds)


async def wait_for_stored(
    api: Harness, keys: MerchantKeys, reference: str, expected: str, *, repoll: bool = False
) -> Any:
    """Wait until the stored row (not just what readers see) has ``expected``; answers it."""

    async def written() -> bool:
        row = await stored_transfer(api, keys.merchant_id, reference)
        return row is not None and row.status == expected

    await eventually(
        api,
        written,
        f"{reference} was never stored as {expected}",
        repoll=(keys, reference) if repoll else None,
    )
    return await stored_transfer(api, keys.merchant_id, reference)


async def valr_credit(
    api: Harness, body: dict[str, Any], trade_no: str | None, amount: str = "100"
) -> None:
    """A COMPLETE ZAR credit in the VALR simulator's history, noted with the trade number."""
    await control(
        api,
        "Valr",
        "credits",
        {
            "payId": body["merchantID"],
            "amount": amount,
            "currency": "ZAR",
            "note": trade_no,
            "status": "COMPLETE",
        },
    )


class TestEndToEnd:
    @pytest.mark.parametrize("issuer", ISSUERS)
    async def test_pay(self, api: Harness, issuer: str) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys, issuer=issuer)
        paid = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/pay", headers=keys.test
        )
        assert paid.status_code == 200, paid.text
        assert paid.json()["status"] == "processed"
        status = await status_of(api, keys, body["reference"])
        assert status.json()["status"] == "processed"
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.trade_no == trade_no_for(keys.merchant_id, "test", body["reference"])
        assert stored.issuer_order_id
        assert stored.issuer_link
        assert await transitions(api, stored.id) == [
            (None, "pending", "create"),
            ("pending", "processed", PUSHING[issuer]),
        ]

    @pytest.mark.parametrize("issuer", ISSUERS)
    async def test_decline(self, api: Harness, issuer: str) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys, issuer=issuer)
        declined = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/decline", headers=keys.test
        )
        assert declined.status_code == 200, declined.text
        assert declined.json()["status"] == "failed"
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert [to for _, to, _ in await transitions(api, stored.id)] == ["pending", "failed"]

    @pytest.mark.parametrize("issuer", ISSUERS)
    async def test_expire_asks_the_issuer_first(self, api: Harness, issuer: str) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys, issuer=issuer)
        await update_transfer(api, keys.merchant_id, body["reference"], expires_at=_moments_ago(30))
        # Readers see "expired" at once; wait for the reconciler to write it down.
        stored = await wait_for_stored(api, keys, body["reference"], "expired")
        assert stored.last_polled_at is not None  # the issuer was asked before it expired
        assert [c for _, _, c in await transitions(api, stored.id)] == ["create", "expiry"]

    @pytest.mark.parametrize("issuer", ISSUERS)
    async def test_the_payer_page_settles_through_the_simulator(
        self, api: Harness, issuer: str
    ) -> None:
        keys = await api.merchant()
        body = transfer_body(issuer=issuer)
        created = await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
        checkout = created.json()["link"].split("/sandbox/checkout/")[1]
        pressed = await api.client.post(f"/sandbox/checkout/{checkout}/pay")
        assert pressed.status_code == 303
        assert pressed.headers["location"] == body["successUrl"]
        assert (await status_of(api, keys, body["reference"])).json()["status"] == "processed"


class TestPricing:
    async def test_usdc_price_is_converted_up_to_the_cent_and_recorded(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys, issuer="Binance", amount=149.90)
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.pay_currency == "USDC"
        assert stored.rate is not None
        assert stored.pay_amount is not None
        assert stored.rate_at is not None
        assert stored.pay_amount * stored.rate >= Decimal("149.90")
        assert (stored.pay_amount - Decimal("0.01")) * stored.rate < Decimal("149.90")

    @pytest.mark.parametrize("issuer", ["Bybit", "Valr"])
    async def test_zar_is_sent_as_zar_where_the_issuer_takes_it(
        self, api: Harness, issuer: str
    ) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys, issuer=issuer, currency="ZAR")
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert (stored.pay_currency, stored.pay_amount, stored.rate) == (
            "ZAR",
            Decimal("149.90"),
            None,
        )

    async def test_a_pair_that_cannot_work_is_400_and_stores_nothing(self, api: Harness) -> None:
        keys = await api.merchant()
        body = transfer_body(issuer="Binance", currency="ZAR")
        response = await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
        details = assert_shape_c(response, 400)["details"]
        assert "currency" in details
        assert await stored_transfer(api, keys.merchant_id, body["reference"]) is None


class TestIssuerFaults:
    async def test_a_refused_order_is_502_with_the_reason_and_a_retry_succeeds(
        self, api: Harness
    ) -> None:
        keys = await api.merchant()
        body = transfer_body(issuer="Binance")
        await control(api, "Binance", "faults", {"reject_next": 1, "only_paths": "v3/order"})
        refused = await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
        details = assert_shape_c(refused, 502)["details"]
        assert details["issuer"]
        assert await stored_transfer(api, keys.merchant_id, body["reference"]) is None
        retried = await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
        assert retried.status_code == 200, retried.text

    @pytest.mark.parametrize("issuer", ["Binance", "Bybit"])
    async def test_an_unreachable_issuer_is_502(self, api: Harness, issuer: str) -> None:
        keys = await api.merchant()
        body = transfer_body(issuer=issuer)
        creates = {"Binance": "v3/order", "Bybit": "create_pay"}[issuer]
        await control(api, issuer, "faults", {"fail_next": 1, "only_paths": creates})
        response = await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
        assert_shape_c(response, 502)
        assert await stored_transfer(api, keys.merchant_id, body["reference"]) is None

    async def test_a_timeout_is_504_and_stores_nothing(self, api: Harness) -> None:
        keys = await api.merchant()
        body = transfer_body(issuer="Bybit")
        await control(api, "Bybit", "faults", {"hang_next": 1, "only_paths": "create_pay"})
        started = time.monotonic()
        response = await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
        assert_shape_c(response, 504)
        assert time.monotonic() - started < 8
        assert await stored_transfer(api, keys.merchant_id, body["reference"]) is None
        retried = await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
        assert retried.status_code == 200, retried.text

    async def test_an_order_opened_despite_a_timeout_is_adopted(self, api: Harness) -> None:
        if api.transport != "inproc":
            pytest.skip("opens the stranded order through the in-process connector")
        keys = await api.merchant()
        body = transfer_body(issuer="Bybit")
        context = api.extra["context"]
        connector = context.connectors.get(Issuer.BYBIT, Mode.TEST)
        stranded = await connector.create_order(_order_for(keys, body))
        created = await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
        assert created.status_code == 200, created.text
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.issuer_order_id == stranded.issuer_order_id  # adopted, not a second order

    async def test_a_lost_notification_is_recovered_by_polling(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys, issuer="Binance")
        await control(api, "Binance", "faults", {"drop_notifications": 1})
        paid = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/pay", headers=keys.test
        )
        assert paid.json()["status"] == "pending"  # the push was lost on the way
        await wait_for_status(api, keys, body["reference"], "processed")
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert [c for _, _, c in await transitions(api, stored.id)] == ["create", "poll"]

    @pytest.mark.parametrize("issuer", ["Binance", "Bybit"])
    async def test_duplicate_notifications_apply_once(self, api: Harness, issuer: str) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys, issuer=issuer)
        await control(api, issuer, "faults", {"duplicate_notifications": True})
        paid = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/pay", headers=keys.test
        )
        assert paid.json()["status"] == "processed"
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert len(await transitions(api, stored.id)) == 2
        async with api.database.read() as session:
            events = await session.scalar(
                select(func.count()).where(IssuerEvent.transfer_id == stored.id)
            )
        assert events == 1

    async def test_a_notification_arriving_after_the_poll_changes_nothing(
        self, api: Harness
    ) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys, issuer="Bybit")
        await control(api, "Bybit", "faults", {"hold_notifications": True})
        held = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/pay", headers=keys.test
        )
        assert held.json()["status"] == "pending"
        await wait_for_status(api, keys, body["reference"], "processed")  # found by polling
        released = await control(api, "Bybit", "notifications/release")
        assert released["released"] == 1
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert [c for _, _, c in await transitions(api, stored.id)] == ["create", "poll"]
        assert stored.payment_count == 1


class TestNotificationEndpoint:
    @pytest.mark.parametrize("issuer", ["binance", "bybit"])
    async def test_a_bad_signature_is_401_and_changes_nothing(
        self, api: Harness, issuer: str
    ) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys, issuer=issuer.capitalize())
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        forged = (
            '{"bizType":"PAY","bizIdStr":"1","bizStatus":"PAY_SUCCESS","data":"{\\"merchantTradeNo\\":\\"'
            + str(stored.trade_no)
            + '\\"}"}'
        )
        response = await api.client.post(
            f"/issuers/{issuer}/notifications",
            content=forged,
            headers={
                "Content-Type": "application/json",
                "BinancePay-Timestamp": str(int(time.time() * 1000)),
                "BinancePay-Nonce": "a" * 32,
                "BinancePay-Certificate-SN": "0" * 32,
                "BinancePay-Signature": "Zm9yZ2Vk",
                "timestamp": str(int(time.time())),
                "signature": "Zm9yZ2Vk",
            },
        )
        assert_shape_c(response, 401)
        assert (await status_of(api, keys, body["reference"])).json()["status"] == "pending"
        async with api.database.read() as session:
            events = await session.scalar(
                select(func.count()).where(IssuerEvent.trade_no == stored.trade_no)
            )
        assert events == 0

    @pytest.mark.parametrize("path", ["valr", "kraken", "Binance"])
    async def test_issuers_that_do_not_push_are_404(self, api: Harness, path: str) -> None:
        response = await api.client.post(f"/issuers/{path}/notifications", content=b"{}")
        assert_shape_c(response, 404)


class TestValrPolling:
    async def _paid_valr_transfer(self, api: Harness, keys: MerchantKeys) -> dict[str, Any]:
        body = await create_transfer(api, keys, issuer="Valr", currency="ZAR", amount=100)
        paid = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/pay", headers=keys.test
        )
        assert paid.json()["status"] == "processed"
        return body

    async def test_a_second_credit_is_a_duplicate_payment_409_d(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await self._paid_valr_transfer(api, keys)
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        await valr_credit(api, body, stored.trade_no)

        async def refused() -> bool:
            return (await status_of(api, keys, body["reference"])).status_code == 409

        await eventually(
            api, refused, "the second credit was not found", repoll=(keys, body["reference"])
        )
        response = await status_of(api, keys, body["reference"])
        assert "cannot be reused" in assert_shape_d(response, 409)
        async with api.database.read() as session:
            payments = await session.scalar(
                select(func.count()).where(TransferPayment.transfer_id == stored.id)
            )
        assert payments == 2  # both kept for refund handling

    async def test_an_underpayment_does_not_complete_the_transfer(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys, issuer="Valr", currency="ZAR", amount=100)
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        await valr_credit(api, body, stored.trade_no, amount="99.99")
        if api.transport == "inproc":
            await api.sweep()
        else:
            await asyncio.sleep(2.5)
        assert (await status_of(api, keys, body["reference"])).json()["status"] == "pending"


def _moments_ago(seconds: float) -> datetime:
    return datetime.now(UTC) - timedelta(seconds=seconds)


def _order_for(keys: MerchantKeys, body: dict[str, Any]) -> OrderRequest:
    return OrderRequest(
        trade_no=trade_no_for(keys.merchant_id, "test", body["reference"]),
        reference=body["reference"],
        issuer_merchant_id=body["merchantID"],
        amount_zar=Decimal("149.90"),
        pay_currency="USDC",
        pay_amount=Decimal("8.24"),
        description=body["description"],
        terminal_type=body["terminalType"],
        goods_type=None,
        success_url=body["successUrl"],
        failed_url=body["failedUrl"],
        notify_url="http://payrelay.test/issuers/bybit/notifications",
        expires_at=datetime.now(UTC) + timedelta(minutes=15),
    )


class TestValrLatePayment:
    async def test_a_credit_after_expiry_is_found_and_processed_late(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys, issuer="Valr", currency="ZAR", amount=100)
        await update_transfer(api, keys.merchant_id, body["reference"], expires_at=_moments_ago(5))
        stored = await wait_for_stored(api, keys, body["reference"], "expired")
        await valr_credit(api, body, stored.trade_no)
        stored = await wait_for_stored(api, keys, body["reference"], "processed", repoll=True)
        assert stored.paid_late is True
        assert [c for _, _, c in await transitions(api, stored.id)] == ["create", "expiry", "poll"]
