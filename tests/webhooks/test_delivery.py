"""Merchant webhooks end to end, in process, on both stores, against real local receivers.

payrelay runs here with its dispatcher on a shortened schedule (0, 0.3, 0.3 s: three attempts)
and a 1 s timeout; each receiver is a real uvicorn server on 127.0.0.1 (test mode allows http
and loopback).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pydantic
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from payrelay.config import Settings
from payrelay.db.engine import Database
from payrelay.db.models import WebhookEvent
from payrelay.merchants.service import rotate_webhook_secret
from payrelay.webhooks.secrets import new_secret
from payrelay.webhooks.verify import verify_webhook
from tests.factories import transfer_body
from tests.harness import Harness, MerchantKeys
from tests.http_checks import assert_shape_c, parse_iso_z, update_transfer
from tests.webhooks.support import (
    HANG,
    Delivery,
    Receiver,
    Reply,
    count_events,
    eventually_async,
    insert_momo_events,
    retire,
    running_payrelay,
    silent_endpoint,
)

PAYMENT_DATA_FIELDS = {
    "reference",
    "status",
    "amount",
    "currency",
    "issuer",
    "customReference",
    "late",
    "timestamp",
}


async def pay(
    api: Harness, keys: MerchantKeys, webhook_url: str, outcome: str = "pay", **overrides: Any
) -> str:
    """Create a test transfer that reports to ``webhook_url`` and settle it in the sandbox."""
    body = transfer_body(webhookUrl=webhook_url, **overrides)
    created = await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
    assert created.status_code == 200, created.text
    settled = await api.client.post(
        f"/sandbox/transfers/{body['reference']}/{outcome}", headers=keys.test
    )
    assert settled.status_code == 200, settled.text
    return str(body["reference"])


async def only_event(api: Harness, keys: MerchantKeys, reference: str) -> dict[str, Any]:
    listed = await api.client.get(
        "/webhooks/events", params={"reference": reference}, headers=keys.test
    )
    assert listed.status_code == 200, listed.text
    events = listed.json()["data"]
    assert len(events) == 1, events
    return dict(events[0])


async def show(api: Harness, keys: MerchantKeys, event_id: str) -> dict[str, Any]:
    shown = await api.client.get(f"/webhooks/events/{event_id}", headers=keys.test)
    assert shown.status_code == 200, shown.text
    return dict(shown.json())


async def settled(
    api: Harness, keys: MerchantKeys, event_id: str, state: str, seconds: float = 8
) -> dict[str, Any]:
    """The event once its state is ``state`` (polled over the API)."""

    async def check() -> dict[str, Any] | None:
        event = await show(api, keys, event_id)
        return event if event["state"] == state else None

    return await eventually_async(check, seconds, f"event {event_id} to be {state}")


def assert_verifies(delivery: Delivery, *secrets: str) -> dict[str, Any]:
    """Both the standardwebhooks package and payrelay's helper accept it, with every secret."""
    event: dict[str, Any] = {}
    for secret in secrets:
        verified = Webhook(secret).verify(delivery.body, delivery.headers)
        event = verify_webhook(secret, delivery.headers, delivery.body)
        assert verified == event
    return event


def signatures(delivery: Delivery) -> list[str]:
    return delivery.headers["webhook-signature"].split(" ")


class TestDoneWhen:
    async def test_a_sandbox_payment_is_delivered_signed_and_verifies(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        url = receiver.program("/hooks/paid")
        before = int(time.time())
        reference = await pay(hooks, keys, url, customReference="cart-7")
        [delivery] = await receiver.wait_for("/hooks/paid", 1)

        event = assert_verifies(delivery, keys.webhook_secret)
        assert keys.webhook_secret.startswith("whsec_")
        assert set(event) == {"id", "type", "timestamp", "data"}
        assert event["type"] == "payment.processed"
        data = event["data"]
        priced = {"payCurrency", "payAmount"}
        assert PAYMENT_DATA_FIELDS <= set(data) <= PAYMENT_DATA_FIELDS | priced
        assert data["reference"] == reference
        assert data["status"] == "processed"
        assert data["currency"] == "ZAR"
        assert data["issuer"] == "Binance"
        assert data["customReference"] == "cart-7"
        assert data["late"] is False
        # The amount is an exact JSON number to the cent, never a float's rendering.
        assert b'"amount":149.90' in delivery.body
        exact = json.loads(delivery.body, parse_float=Decimal)
        assert exact["data"]["amount"] == Decimal("149.90")
        status = await hooks.client.get(f"/tx/payment-status/{reference}", headers=keys.test)
        assert data["timestamp"] == status.json()["timestamp"]
        parse_iso_z(event["timestamp"])

        # Standard Webhooks headers; webhook-id is the event id.
        headers = delivery.headers
        assert headers["webhook-id"] == event["id"]
        assert event["id"].startswith("evt_")
        assert before - 1 <= int(headers["webhook-timestamp"]) <= time.time() + 1
        assert [s[:3] for s in signatures(delivery)] == ["v1,"]
        assert headers["content-type"] == "application/json"
        assert headers["user-agent"].startswith("payrelay-webhooks/")

        listed = await only_event(hooks, keys, reference)
        assert listed["id"] == event["id"]
        assert listed["payload"] == event
        shown = await hooks.client.get(f"/webhooks/events/{event['id']}", headers=keys.test)
        assert '"amount":149.90' in shown.text  # the API shows the payload exactly as sent
        done = await settled(hooks, keys, event["id"], "succeeded")
        assert done["attempts"] == 1
        assert done["lastStatus"] == 200

    async def test_a_forged_or_altered_delivery_does_not_verify(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        await pay(hooks, keys, receiver.program("/hooks/forged"))
        [delivery] = await receiver.wait_for("/hooks/forged", 1)
        with pytest.raises(WebhookVerificationError):
            verify_webhook(new_secret(), delivery.headers, delivery.body)
        with pytest.raises(WebhookVerificationError):
            Webhook(new_secret()).verify(delivery.body, delivery.headers)
        altered = delivery.body.replace(b"149.90", b"1.00")
        with pytest.raises(WebhookVerificationError):
            verify_webhook(keys.webhook_secret, delivery.headers, altered)
        stale = {**delivery.headers, "webhook-timestamp": str(int(time.time()) - 3600)}
        with pytest.raises(WebhookVerificationError):
            verify_webhook(keys.webhook_secret, stale, delivery.body)

    async def test_a_declined_payment_sends_payment_failed(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        reference = await pay(hooks, keys, receiver.program("/hooks/declined"), outcome="decline")
        [delivery] = await receiver.wait_for("/hooks/declined", 1)
        event = assert_verifies(delivery, keys.webhook_secret)
        assert event["type"] == "payment.failed"
        assert event["data"]["status"] == "failed"
        assert event["data"]["reference"] == reference


class TestExpiry:
    async def test_an_expired_transfer_sends_payment_expired(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        body = transfer_body(webhookUrl=receiver.program("/hooks/expired"))
        created = await hooks.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
        assert created.status_code == 200, created.text
        lapsed = datetime.now(UTC) - timedelta(seconds=30)
        await update_transfer(hooks, keys.merchant_id, body["reference"], expires_at=lapsed)
        assert await hooks.sweep() >= 1  # the reconciler asks the issuer, then expires it
        [delivery] = await receiver.wait_for("/hooks/expired", 1)
        event = assert_verifies(delivery, keys.webhook_secret)
        assert event["type"] == "payment.expired"
        assert event["data"]["status"] == "expired"
        assert event["data"]["reference"] == body["reference"]
        assert event["data"]["late"] is False
        status = await hooks.client.get(
            f"/tx/payment-status/{body['reference']}", headers=keys.test
        )
        assert status.json()["status"] == "expired"
        assert event["data"]["timestamp"] == status.json()["timestamp"]


class TestRetries:
    async def test_a_receiver_that_fails_twice_gets_the_same_event_a_third_time(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        long_error = "x" * 5000
        url = receiver.program(
            "/hooks/flaky", Reply(500, body=long_error), Reply(500, body="again"), then=200
        )
        reference = await pay(hooks, keys, url)
        deliveries = await receiver.wait_for("/hooks/flaky", 3)
        assert len({d.webhook_id for d in deliveries}) == 1
        assert len({d.body for d in deliveries}) == 1
        for delivery in deliveries:
            assert_verifies(delivery, keys.webhook_secret)
        # The shortened schedule: 0 s, then ~0.3 s (+-10 % jitter) between attempts.
        gaps = [b.at - a.at for a, b in itertools.pairwise(deliveries)]
        assert all(gap >= 0.25 for gap in gaps), gaps

        event_id = deliveries[0].webhook_id
        assert (await only_event(hooks, keys, reference))["id"] == event_id
        event = await settled(hooks, keys, event_id, "succeeded")
        assert event["attempts"] == 3
        assert event["lastStatus"] == 200
        assert event["completedAt"] is not None
        assert event["nextAttemptAt"] is None
        log = event["attemptLog"]
        assert [a["status"] for a in log] == [500, 500, 200]
        assert len(log[0]["responseBody"]) == 2048  # kept, truncated
        assert log[0]["responseBody"] == long_error[:2048]
        assert log[1]["responseBody"] == "again"
        for attempt in log:
            assert isinstance(attempt["latencyMs"], int)
            assert attempt["latencyMs"] >= 0
            assert attempt["error"] is None
            parse_iso_z(attempt["at"])
        await asyncio.sleep(0.5)  # past the next scheduled slot: nothing more is sent
        assert len(receiver.at("/hooks/flaky")) == 3

    async def test_410_gone_stops_retries(self, hooks: Harness, receiver: Receiver) -> None:
        keys = await hooks.merchant()
        await pay(hooks, keys, receiver.program("/hooks/gone", then=410))
        [delivery] = await receiver.wait_for("/hooks/gone", 1)
        event = await settled(hooks, keys, delivery.webhook_id, "failed")
        assert event["attempts"] == 1
        assert [a["status"] for a in event["attemptLog"]] == [410]
        await asyncio.sleep(0.5)  # past the next schedule slot
        assert len(receiver.at("/hooks/gone")) == 1

    async def test_retry_after_delays_the_next_attempt_beyond_the_schedule(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        url = receiver.program(
            "/hooks/busy", Reply(503, headers={"Retry-After": "2"}, body="busy"), then=200
        )
        await pay(hooks, keys, url)
        first, second = await receiver.wait_for("/hooks/busy", 2, seconds=8)
        assert second.at - first.at >= 2.0, second.at - first.at  # the schedule says 0.3 s
        assert second.webhook_id == first.webhook_id
        event = await settled(hooks, keys, first.webhook_id, "succeeded")
        assert [a["status"] for a in event["attemptLog"]] == [503, 200]

    async def test_a_timeout_and_a_redirect_are_failures(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        elsewhere = receiver.program("/hooks/elsewhere")
        url = receiver.program(
            "/hooks/slow", HANG, Reply(307, headers={"Location": elsewhere}), then=200
        )
        await pay(hooks, keys, url)
        deliveries = await receiver.wait_for("/hooks/slow", 3, seconds=8)
        event = await settled(hooks, keys, deliveries[0].webhook_id, "succeeded")
        timed_out, redirected, ok = event["attemptLog"]
        assert timed_out["status"] is None
        assert "Timeout" in timed_out["error"]
        assert timed_out["latencyMs"] >= 900  # the 1 s timeout of these tests
        assert redirected["status"] == 307
        assert ok["status"] == 200
        assert receiver.at("/hooks/elsewhere") == []  # redirects are not followed


class TestReplay:
    async def test_an_exhausted_event_is_failed_and_replays_with_the_same_id(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        url = receiver.program("/hooks/down", then=500)
        reference = await pay(hooks, keys, url)
        deliveries = await receiver.wait_for("/hooks/down", 3)
        event_id = deliveries[0].webhook_id
        event = await settled(hooks, keys, event_id, "failed")
        assert event["attempts"] == 3
        assert event["nextAttemptAt"] is None
        await asyncio.sleep(0.5)
        assert len(receiver.at("/hooks/down")) == 3  # the schedule is spent

        receiver.program("/hooks/down", then=200)  # the merchant fixed its endpoint
        replayed = await hooks.client.post(f"/webhooks/events/{event_id}/replay", headers=keys.test)
        assert replayed.status_code == 200, replayed.text
        assert replayed.json()["id"] == event_id
        again = (await receiver.wait_for("/hooks/down", 4))[3]
        assert again.webhook_id == event_id
        assert again.body == deliveries[0].body
        assert_verifies(again, keys.webhook_secret)
        event = await settled(hooks, keys, event_id, "succeeded")
        assert [a["status"] for a in event["attemptLog"]] == [500, 500, 500, 200]
        assert (await only_event(hooks, keys, reference))["state"] == "succeeded"

    async def test_replay_every_failed_event_since_a_time(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        other = await hooks.merchant("Other")
        since = datetime.now(UTC) - timedelta(seconds=5)
        url = receiver.program("/hooks/batch", then=410)
        other_url = receiver.program("/hooks/other", then=410)
        references = [await pay(hooks, keys, url) for _ in range(2)]
        await pay(hooks, other, other_url)
        await receiver.wait_for("/hooks/batch", 2)
        await receiver.wait_for("/hooks/other", 1)
        ids = {(await only_event(hooks, keys, ref))["id"] for ref in references}
        for event_id in ids:
            await settled(hooks, keys, event_id, "failed")

        later = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
        none = await hooks.client.post(
            "/webhooks/events/replay", json={"since": later}, headers=keys.test
        )
        assert none.status_code == 200, none.text
        assert none.json() == {"replayed": []}

        receiver.program("/hooks/batch", then=200)
        replayed = await hooks.client.post(
            "/webhooks/events/replay",
            json={"since": since.isoformat().replace("+00:00", "Z")},
            headers=keys.test,
        )
        assert replayed.status_code == 200, replayed.text
        assert set(replayed.json()["replayed"]) == ids  # only this merchant's, only failed
        deliveries = await receiver.wait_for("/hooks/batch", 4)
        assert {d.webhook_id for d in deliveries[2:]} == ids
        for event_id in ids:
            await settled(hooks, keys, event_id, "succeeded")
        await asyncio.sleep(0.3)
        assert len(receiver.at("/hooks/other")) == 1  # the other merchant's stays failed

    async def test_replay_since_needs_a_time(self, hooks: Harness) -> None:
        keys = await hooks.merchant()
        for body in (
            {},
            {"since": "yesterday"},
            {"since": "2026-01-01T00:00:00"},  # no zone: ambiguous
            {"since": "2026-01-01T00:00:00Z", "x": 1},
        ):
            response = await hooks.client.post(
                "/webhooks/events/replay", json=body, headers=keys.test
            )
            assert_shape_c(response, 400)


class TestIsolation:
    async def test_a_hanging_endpoint_does_not_delay_another_merchant(
        self, fresh_store_url: str, receiver: Receiver, other_receiver: Receiver
    ) -> None:
        # A store and a dispatcher of its own, with a long timeout, so the hang lasts the whole
        # test, and a global pool of 8: were one endpoint allowed to take every slot, its 20
        # events would fill the pool.
        database = Database(fresh_store_url)
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(database.dispose)
            api = await stack.enter_async_context(
                running_payrelay(
                    fresh_store_url,
                    database,
                    webhook_timeout=timedelta(seconds=20),
                    webhook_concurrency=8,
                    webhook_endpoint_concurrency=4,
                )
            )
            stuck = await api.merchant("Stuck")
            healthy = await api.merchant("Healthy")
            try:
                hang_url = receiver.program("/hooks/hang", then=HANG)
                await insert_momo_events(api.database, stuck.merchant_id, hang_url, 20)
                await receiver.wait_for("/hooks/hang", 4)

                await pay(api, healthy, other_receiver.program("/hooks/healthy"))
                started = time.monotonic()  # the event is committed
                [delivery] = await other_receiver.wait_for("/hooks/healthy", 1, seconds=5)
                assert delivery.at - started < 1.0, delivery.at - started
                assert_verifies(delivery, healthy.webhook_secret)

                # More healthy events while the hang goes on, straight from the outbox.
                started = time.monotonic()
                healthy_url = other_receiver.url("/hooks/healthy")
                await insert_momo_events(api.database, healthy.merchant_id, healthy_url, 5)
                deliveries = await other_receiver.wait_for("/hooks/healthy", 6, seconds=5)
                assert deliveries[-1].at - started < 1.0, deliveries[-1].at - started

                # The hanging endpoint held exactly its own 4 slots, no more.
                assert len(receiver.at("/hooks/hang")) == 4
                pending = [e for e in await _events(api, stuck) if e["state"] == "pending"]
                assert len(pending) == 20
            finally:
                await retire(api.database, stuck.merchant_id)

    async def test_hanging_endpoints_are_paused_and_cannot_hold_the_pool(
        self, fresh_store_url: str, other_receiver: Receiver
    ) -> None:
        # Three hanging endpoints with 10 events each want 12 slots of a pool of 8. Unpaused,
        # their older events would take every slot that frees for seconds to come. Paused after
        # their first silence (1 s timeout), they leave the pool to a healthy merchant at once.
        database = Database(fresh_store_url)
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(database.dispose)
            hanging = [await stack.enter_async_context(silent_endpoint()) for _ in range(3)]
            api = await stack.enter_async_context(
                running_payrelay(
                    fresh_store_url,
                    database,
                    webhook_concurrency=8,
                    webhook_endpoint_concurrency=4,
                    webhook_silent_pause=timedelta(seconds=30),
                )
            )
            stuck = await api.merchant("Stuck")
            healthy = await api.merchant("Healthy")
            try:
                for endpoint in hanging:
                    await insert_momo_events(api.database, stuck.merchant_id, endpoint.url, 10)
                await asyncio.sleep(1.5)  # the first round has timed out by now

                started = time.monotonic()
                healthy_url = other_receiver.program("/hooks/healthy")
                await insert_momo_events(api.database, healthy.merchant_id, healthy_url, 5)
                deliveries = await other_receiver.wait_for("/hooks/healthy", 5, seconds=8)
                assert deliveries[-1].at - started < 0.8, deliveries[-1].at - started

                # Each hanging endpoint got one round (4 at most) and was then left alone.
                assert all(1 <= endpoint.connections <= 4 for endpoint in hanging), [
                    endpoint.connections for endpoint in hanging
                ]
            finally:
                await retire(api.database, stuck.merchant_id)


class TestLease:
    def test_a_lease_shorter_than_a_delivery_is_refused_at_start_up(self) -> None:
        # Otherwise the lease could run out while the receiver is still answering, and another
        # worker would claim and send the same event a second time.
        with pytest.raises(pydantic.ValidationError, match="webhook_lease"):
            Settings(
                webhook_lease=timedelta(milliseconds=500), webhook_timeout=timedelta(seconds=5)
            )


async def _events(api: Harness, keys: MerchantKeys) -> list[dict[str, Any]]:
    response = await api.client.get("/webhooks/events", params={"limit": 100}, headers=keys.test)
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


class TestScoping:
    async def test_events_are_the_merchants_own_and_per_mode(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        owner = await hooks.merchant("Owner")
        stranger = await hooks.merchant("Stranger")
        url = receiver.program("/hooks/owner")
        first = await pay(hooks, owner, url)
        second = await pay(hooks, owner, url, outcome="decline")
        await receiver.wait_for("/hooks/owner", 2)

        event = await only_event(hooks, owner, first)
        assert event["reference"] == first
        assert event["type"] == "payment.processed"
        declined = await only_event(hooks, owner, second)
        assert declined["type"] == "payment.failed"
        every = await _events(hooks, owner)
        assert {e["reference"] for e in every} == {first, second}

        path = f"/webhooks/events/{event['id']}"
        for headers in (stranger.test, stranger.live, owner.live):
            assert_shape_c(await hooks.client.get(path, headers=headers), 404)
            assert_shape_c(await hooks.client.post(f"{path}/replay", headers=headers), 404)
        unknown = await hooks.client.get("/webhooks/events/evt_nosuchevent", headers=owner.test)
        foreign = await hooks.client.get(path, headers=stranger.test)
        assert unknown.json()["message"] == foreign.json()["message"]
        assert await _events(hooks, stranger) == []
        live = await hooks.client.get(
            "/webhooks/events", params={"reference": first}, headers=owner.live
        )
        assert live.json() == {"data": []}
        assert_shape_c(await hooks.client.get("/webhooks/events"), 401)
        assert_shape_c(await hooks.client.get(path), 401)
        assert len(receiver.at("/hooks/owner")) == 2  # the refused replays sent nothing

    async def test_a_transfer_reaches_its_final_status_once_and_has_one_event(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        reference = await pay(hooks, keys, receiver.program("/hooks/once"))
        again = await hooks.client.post(f"/sandbox/transfers/{reference}/pay", headers=keys.test)
        assert again.status_code in (200, 409), again.text
        await receiver.wait_for("/hooks/once", 1)
        await asyncio.sleep(0.3)
        assert len(receiver.at("/hooks/once")) == 1
        assert await count_events(hooks.database, keys.merchant_id) == 1


class TestSecretRotation:
    async def test_during_the_overlap_both_secrets_sign(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        new, old_until = await rotate_webhook_secret(
            hooks.database, hooks.secret, keys.merchant_id, overlap=timedelta(hours=1)
        )
        assert new.startswith("whsec_")
        assert new != keys.webhook_secret
        assert timedelta(minutes=59) < old_until - datetime.now(UTC) <= timedelta(hours=1)
        await pay(hooks, keys, receiver.program("/hooks/rotated"))
        [delivery] = await receiver.wait_for("/hooks/rotated", 1)
        sigs = signatures(delivery)
        assert len(sigs) == 2
        assert all(re.fullmatch(r"v1,[A-Za-z0-9+/]+=*", s) for s in sigs), sigs
        assert len(set(sigs)) == 2
        assert_verifies(delivery, keys.webhook_secret, new)
        # Each signature alone is the one its secret makes.
        for secret in (keys.webhook_secret, new):
            alone = [s for s in sigs if _verifies_alone(delivery, secret, s)]
            assert len(alone) == 1

    async def test_after_a_zero_overlap_only_the_new_secret_signs(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        keys = await hooks.merchant()
        new, _ = await rotate_webhook_secret(
            hooks.database, hooks.secret, keys.merchant_id, overlap=timedelta(0)
        )
        await pay(hooks, keys, receiver.program("/hooks/rotated-now"))
        [delivery] = await receiver.wait_for("/hooks/rotated-now", 1)
        assert len(signatures(delivery)) == 1
        assert_verifies(delivery, new)
        with pytest.raises(WebhookVerificationError):
            verify_webhook(keys.webhook_secret, delivery.headers, delivery.body)


def _verifies_alone(delivery: Delivery, secret: str, signature: str) -> bool:
    headers = {**delivery.headers, "webhook-signature": signature}
    try:
        Webhook(secret).verify(delivery.body, headers)
    except WebhookVerificationError:
        return False
    return True


class TestMomo:
    @pytest.mark.parametrize(
        ("result", "event_type", "status"),
        [
            ("succeed", "momo.successful", "Successful"),
            ("fail", "momo.unsuccessful", "Unsuccessful"),
        ],
    )
    async def test_a_settled_momo_transaction_is_delivered(
        self, hooks: Harness, receiver: Receiver, result: str, event_type: str, status: str
    ) -> None:
        keys = await hooks.merchant()
        path = f"/hooks/momo-{result}"
        created = await hooks.client.post(
            "/sandbox/momo", json={"webhookUrl": receiver.url(path)}, headers=keys.test
        )
        assert created.status_code == 201, created.text
        transaction_id = created.json()["transactionId"]
        done = await hooks.client.post(
            f"/sandbox/momo/{transaction_id}/{result}", headers=keys.test
        )
        assert done.status_code == 200, done.text
        [delivery] = await receiver.wait_for(path, 1)
        event = assert_verifies(delivery, keys.webhook_secret)
        assert event["type"] == event_type
        assert event["data"] == {
            "transactionId": transaction_id,
            "status": status,
            "confirmationID": done.json()["confirmationID"],
        }
        if status == "Successful":
            assert re.fullmatch(r"[A-Z0-9]{10}", event["data"]["confirmationID"])
        else:
            assert event["data"]["confirmationID"] == ""
        assert (await only_event(hooks, keys, transaction_id))["id"] == delivery.webhook_id

    async def test_a_momo_transaction_without_a_url_is_recorded_as_skipped(
        self, hooks: Harness
    ) -> None:
        keys = await hooks.merchant()
        created = await hooks.client.post("/sandbox/momo", json={}, headers=keys.test)
        transaction_id = created.json()["transactionId"]
        await hooks.client.post(f"/sandbox/momo/{transaction_id}/succeed", headers=keys.test)
        event = await only_event(hooks, keys, transaction_id)
        assert event["state"] == "skipped"
        assert event["type"] == "momo.successful"


class TestMetrics:
    async def test_metrics_count_deliveries_and_show_the_queue(
        self, hooks: Harness, receiver: Receiver
    ) -> None:
        before = await _metrics(hooks)
        keys = await hooks.merchant()
        await pay(hooks, keys, receiver.program("/hooks/metered", 500, then=200))
        [first, _] = await receiver.wait_for("/hooks/metered", 2)
        await settled(hooks, keys, first.webhook_id, "succeeded")

        # An event not yet due sits in the queue.
        parked = receiver.program("/hooks/parked")
        [event_id] = await insert_momo_events(hooks.database, keys.merchant_id, parked, 1)
        async with hooks.database.write() as session:
            row = await session.get(WebhookEvent, event_id)
            assert row is not None
            row.next_attempt_at = datetime.now(UTC) + timedelta(hours=1)
        try:
            after = await _metrics(hooks)
            succeeded = 'payrelay_webhook_deliveries_total{outcome="succeeded"}'
            failed = 'payrelay_webhook_deliveries_total{outcome="failed"}'
            assert after[succeeded] >= before.get(succeeded, 0) + 1
            assert after[failed] >= before.get(failed, 0) + 1
            assert after["payrelay_webhook_queue_depth"] >= 1
            assert after["payrelay_webhook_attempt_seconds_count"] >= 2
        finally:
            await retire(hooks.database, keys.merchant_id)


async def _metrics(api: Harness) -> dict[str, float]:
    response = await api.client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    assert "# TYPE payrelay_webhook_deliveries_total counter" in response.text
    assert "# TYPE payrelay_webhook_queue_depth gauge" in response.text
    values = {}
    for line in response.text.splitlines():
        if line.startswith("payrelay_webhook"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values
