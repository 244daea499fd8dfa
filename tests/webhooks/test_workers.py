"""Real `payrelay worker` processes: a crash mid-delivery, and two workers sharing the queue.

Each test has a store of its own; the test process writes events into it exactly as the outbox
does (in one transaction with the state change), and the workers deliver them to a real local
receiver. The workers run with a 2 s lease and a short schedule.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from payrelay.db.engine import Database
from payrelay.merchants import service as merchants
from payrelay.webhooks.verify import verify_webhook
from tests.harness import KEY_SECRET
from tests.webhooks.support import (
    HANG,
    Receiver,
    Worker,
    count_events,
    event_row,
    events_of,
    eventually,
    eventually_async,
    insert_momo_events,
    start_worker,
)

STARTUP_SECONDS = 40  # a cold interpreter importing payrelay, on a busy two-core machine


async def _started(worker: Worker) -> None:
    await eventually(worker.started, STARTUP_SECONDS, "the worker to start")


async def test_a_worker_killed_mid_delivery_leads_to_a_redelivery_with_the_same_id(
    fresh_store_url: str, receiver: Receiver, tmp_path: Path
) -> None:
    database = Database(fresh_store_url)
    workers: list[Worker] = []
    try:
        merchant, secret = await merchants.onboard(database, KEY_SECRET.encode(), "Crashy")
        url = receiver.program("/hooks/crash", HANG, then=200)  # the first request hangs
        [event_id] = await insert_momo_events(database, merchant.id, url, 1)

        first = start_worker(fresh_store_url, tmp_path, "first")
        workers.append(first)
        await receiver.wait_for("/hooks/crash", 1, seconds=STARTUP_SECONDS)
        assert first.process.poll() is None, first.output()
        leased = await event_row(database, event_id)
        assert leased.state == "pending"
        assert leased.lease_until is not None  # claimed, being sent, nothing recorded yet
        first.kill()  # between sending and recording

        second = start_worker(fresh_store_url, tmp_path, "second")
        workers.append(second)
        deliveries = await receiver.wait_for("/hooks/crash", 2, seconds=STARTUP_SECONDS)
        assert {d.webhook_id for d in deliveries} == {event_id}
        assert len({d.body for d in deliveries}) == 1
        for delivery in deliveries:
            assert verify_webhook(secret, delivery.headers, delivery.body)["id"] == event_id

        async def succeeded() -> bool:
            return (await event_row(database, event_id)).state == "succeeded"

        await eventually_async(succeeded, 10, "the redelivery to be recorded")
        row = await event_row(database, event_id)
        assert row.attempt_count == 1  # the killed worker's attempt was never recorded
        assert row.last_status == 200
        assert await count_events(database, merchant.id) == 1  # exactly one event
        assert second.process.poll() is None, second.output()
    finally:
        for worker in workers:
            worker.stop()
        await database.dispose()


async def test_two_workers_on_postgresql_deliver_each_event_exactly_once(
    fresh_store_url: str, receiver: Receiver, tmp_path: Path
) -> None:
    if fresh_store_url.startswith("sqlite"):
        pytest.skip("SQLite has one dispatching process; workers share a queue on PostgreSQL")
    database = Database(fresh_store_url)
    workers = [start_worker(fresh_store_url, tmp_path, name) for name in ("one", "two")]
    try:
        merchant, secret = await merchants.onboard(database, KEY_SECRET.encode(), "Busy")
        for worker in workers:
            await _started(worker)
        url = receiver.program("/hooks/count")
        ids = await insert_momo_events(database, merchant.id, url, 50)

        await receiver.wait_for("/hooks/count", 50, seconds=30)

        async def all_succeeded() -> bool:
            events = await events_of(database, merchant.id)
            return all(event.state == "succeeded" for event in events)

        await eventually_async(all_succeeded, 10, "every event to be recorded as succeeded")
        deliveries = receiver.at("/hooks/count")
        received = Counter(d.webhook_id for d in deliveries)
        assert set(received) == set(ids)  # no event lost
        assert max(received.values()) == 1, received.most_common(3)  # none sent twice
        assert all(event.attempt_count == 1 for event in await events_of(database, merchant.id))
        for delivery in deliveries[:3]:
            verify_webhook(secret, delivery.headers, delivery.body)
        for worker in workers:
            assert worker.process.poll() is None, worker.output()
    finally:
        for worker in workers:
            worker.stop()
        await database.dispose()
