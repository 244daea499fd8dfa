"""Expiry: readers see an overdue transfer as expired at once, the sweeper writes it down exactly
once, a late payment still counts, and a real `payrelay serve` sweeps by itself."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from payrelay.db.types import iso_utc
from tests.harness import Harness, MerchantKeys
from tests.http_checks import (
    assert_shape_c,
    create_transfer,
    parse_iso_z,
    stored_transfer,
    transitions,
    update_transfer,
)


def moments_ago(seconds: float) -> datetime:
    """A past instant, whole milliseconds, so that it round-trips through the API exactly."""
    now = datetime.now(UTC) - timedelta(seconds=seconds)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


async def overdue_transfer(
    api: Harness, keys: MerchantKeys, seconds_ago: float = 60, **overrides: Any
) -> tuple[dict[str, Any], datetime]:
    """A test transfer whose expiry lies ``seconds_ago`` in the past."""
    body = await create_transfer(api, keys, **overrides)
    expires_at = moments_ago(seconds_ago)
    await update_transfer(api, keys.merchant_id, body["reference"], expires_at=expires_at)
    return body, expires_at


async def status_of(api: Harness, keys: MerchantKeys, reference: str) -> dict[str, Any]:
    response = await api.client.get(f"/tx/payment-status/{reference}", headers=keys.test)
    assert response.status_code == 200, response.text
    return dict(response.json())


class TestReadersSeeExpiry:
    async def test_overdue_shows_expired_with_the_expiry_as_timestamp(self, api: Harness) -> None:
        keys = await api.merchant()
        body, expires_at = await overdue_transfer(api, keys)
        status = await status_of(api, keys, body["reference"])
        assert status["status"] == "expired"
        assert status["timestamp"] == iso_utc(expires_at)
        assert status["amount"] == 149.90

    async def test_before_any_sweep_the_row_is_still_pending(self, api: Harness) -> None:
        if api.transport == "server":
            pytest.skip("the real server sweeps by itself")
        keys = await api.merchant()
        body, _ = await overdue_transfer(api, keys)
        assert (await status_of(api, keys, body["reference"]))["status"] == "expired"
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.status == "pending"

    async def test_not_yet_due_is_pending(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        await update_transfer(
            api,
            keys.merchant_id,
            body["reference"],
            expires_at=datetime.now(UTC) + timedelta(seconds=30),
        )
        assert (await status_of(api, keys, body["reference"]))["status"] == "pending"

    async def test_default_expiry_is_fifteen_minutes_after_creation(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.expires_at - stored.created_at == timedelta(minutes=15)


class TestSweeper:
    async def test_sweep_writes_expired_and_records_one_transition(self, api: Harness) -> None:
        keys = await api.merchant()
        body, expires_at = await overdue_transfer(api, keys)
        before = await status_of(api, keys, body["reference"])

        await api.sweep()
        if api.transport == "inproc":
            assert await api.sweep() == 0  # nothing is left to do on a second run

        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.status == "expired"
        assert stored.status_changed_at == expires_at
        history = await transitions(api, stored.id)
        assert history == [(None, "pending", "create"), ("pending", "expired", "expiry")]
        # Writing it down changes nothing a reader sees.
        assert await status_of(api, keys, body["reference"]) == before

    async def test_sweep_counts_what_it_expired(self, api: Harness) -> None:
        if api.transport == "server":
            pytest.skip("the real server's own sweeper may get there first")
        keys = await api.merchant()
        await api.sweep()  # start from a clean slate
        for _ in range(3):
            await overdue_transfer(api, keys)
        assert await api.sweep() == 3

    async def test_sweep_leaves_settled_and_not_yet_due_transfers_alone(self, api: Harness) -> None:
        keys = await api.merchant()
        paid = await create_transfer(api, keys)
        declined = await create_transfer(api, keys)
        not_due = await create_transfer(api, keys)
        for body, outcome in ((paid, "pay"), (declined, "decline")):
            response = await api.client.post(
                f"/sandbox/transfers/{body['reference']}/{outcome}", headers=keys.test
            )
            assert response.status_code == 200, response.text
            await update_transfer(
                api, keys.merchant_id, body["reference"], expires_at=moments_ago(60)
            )

        await api.sweep()

        assert (await status_of(api, keys, paid["reference"]))["status"] == "processed"
        assert (await status_of(api, keys, declined["reference"]))["status"] == "failed"
        assert (await status_of(api, keys, not_due["reference"]))["status"] == "pending"
        for body, status in ((paid, "processed"), (declined, "failed"), (not_due, "pending")):
            stored = await stored_transfer(api, keys.merchant_id, body["reference"])
            assert stored is not None
            assert stored.status == status
            assert "expiry" not in {cause for _, _, cause in await transitions(api, stored.id)}

    async def test_concurrent_sweeps_record_expiry_once(self, api: Harness) -> None:
        keys = await api.merchant()
        body, _ = await overdue_transfer(api, keys)
        await asyncio.gather(*(api.sweep() for _ in range(5)))
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        causes = [cause for _, _, cause in await transitions(api, stored.id)]
        assert causes == ["create", "expiry"]

    async def test_the_real_server_sweeps_by_itself(self, api: Harness) -> None:
        if api.transport != "server":
            pytest.skip("only `payrelay serve` runs the expiry loop")
        keys = await api.merchant()
        body, expires_at = await overdue_transfer(api, keys, seconds_ago=1)
        deadline = time.monotonic() + 12  # the default sweep interval is 5 s
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        while stored is not None and stored.status == "pending":
            assert time.monotonic() < deadline, "the server did not sweep within 12 s"
            await asyncio.sleep(0.25)
            stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.status == "expired"
        assert stored.status_changed_at == expires_at
        assert await transitions(api, stored.id) == [
            (None, "pending", "create"),
            ("pending", "expired", "expiry"),
        ]


class TestSettlingAfterExpiry:
    @pytest.mark.parametrize("swept", [False, True], ids=["unswept", "swept"])
    async def test_paying_an_expired_transfer_is_processed_and_late(
        self, api: Harness, swept: bool
    ) -> None:
        keys = await api.merchant()
        # Bybit has no close: its order stays payable after our expiry, so the payer's money can
        # still arrive late. (Binance's order is closed at expiry and can no longer be paid.)
        body, _ = await overdue_transfer(api, keys, issuer="Bybit")
        if swept:
            await api.sweep()

        paid = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/pay", headers=keys.test
        )

        assert paid.status_code == 200, paid.text
        assert paid.json()["status"] == "processed"
        status = await status_of(api, keys, body["reference"])
        assert status["status"] == "processed"
        assert abs(datetime.now(UTC) - parse_iso_z(status["timestamp"])) < timedelta(seconds=5)
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.paid_late is True
        assert stored.payment_count == 1
        assert await transitions(api, stored.id) == [
            (None, "pending", "create"),
            ("pending", "expired", "expiry"),
            # The sandbox plays the payer at the issuer simulator; the payment comes back as a
            # signed notification, through the same path a real issuer's would.
            ("expired", "processed", "notification"),
        ]

    async def test_paying_in_time_is_not_late(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        paid = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/pay", headers=keys.test
        )
        assert paid.status_code == 200, paid.text
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.paid_late is False

    @pytest.mark.parametrize("swept", [False, True], ids=["unswept", "swept"])
    async def test_declining_an_expired_transfer_is_409_shape_c(
        self, api: Harness, swept: bool
    ) -> None:
        keys = await api.merchant()
        body, expires_at = await overdue_transfer(api, keys)
        if swept:
            await api.sweep()

        declined = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/decline", headers=keys.test
        )

        message = assert_shape_c(declined, 409, details={})["message"]
        assert "expired" in message
        status = await status_of(api, keys, body["reference"])
        assert status == {"status": "expired", "timestamp": iso_utc(expires_at), "amount": 149.90}
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.paid_late is False
        assert "failed" not in {to for _, to, _ in await transitions(api, stored.id)}

    async def test_paying_twice_after_expiry_is_refused(self, api: Harness) -> None:
        keys = await api.merchant()
        body, _ = await overdue_transfer(api, keys)
        first = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/pay", headers=keys.test
        )
        assert first.status_code == 200, first.text
        again = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/pay", headers=keys.test
        )
        assert_shape_c(again, 409, details={})
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.payment_count == 1
