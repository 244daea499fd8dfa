"""Delivers webhook events: at least once, on the published schedule, one endpoint never
holding up another.

Events are claimed with a lease (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so any number of
workers share the queue; on SQLite one process dispatches). A worker that dies mid-delivery
leaves its lease to expire and the event is sent again with the same ``webhook-id``: consumers
deduplicate on it. Per endpoint at most ``webhook_endpoint_concurrency`` deliveries are in
flight, and an endpoint at its limit is not claimed for, so a hanging receiver costs only its
own slots.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import random
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
import structlog
from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from payrelay.context import AppContext
from payrelay.db.models import WebhookAttempt, WebhookEvent
from payrelay.db.types import utcnow
from payrelay.webhooks import metrics, secrets, signing
from payrelay.webhooks.outbox import EventState
from payrelay.webhooks.pause import EndpointPauses
from payrelay.webhooks.ssrf import GuardedTransport, UnsafeUrl, UrlPolicy

log = structlog.get_logger("payrelay.webhooks")

RESPONSE_KEEP_CHARS = 2048
MAX_RETRY_AFTER = timedelta(hours=24)
WAKE = asyncio.Event()


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    latency_ms: int
    body: str
    error: str | None
    retry_after: timedelta | None
    refused: bool = False  # by our own SSRF policy: nothing was sent, no slot was held

    @property
    def silent(self) -> bool:
        """Nothing came back: a timeout or a connection failure."""
        return self.status_code is None and not self.refused

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def gone(self) -> bool:
        return self.status_code == 410


def next_delay(schedule: list[float], attempts_made: int, jitter: float = 0.1) -> float | None:
    """Seconds until the next attempt after ``attempts_made`` attempts; None when exhausted."""
    if attempts_made >= len(schedule):
        return None
    base = schedule[attempts_made]
    return base * random.uniform(1 - jitter, 1 + jitter) if base else 0.0  # noqa: S311


def parse_retry_after(value: str | None, now: datetime) -> timedelta | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        delay = timedelta(seconds=int(value))
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        delay = when - now
    return min(max(delay, timedelta(0)), MAX_RETRY_AFTER)


def clean_body(text: str) -> str:
    # NUL cannot be stored in PostgreSQL text, and a receiver's page is not ours to keep whole.
    return text.replace("\x00", "")[:RESPONSE_KEEP_CHARS]


class Dispatcher:
    def __init__(self, context: AppContext) -> None:
        self.context = context
        settings = context.settings
        self.schedule = settings.webhook_delays
        self.lease = settings.webhook_lease
        self.pauses = EndpointPauses(
            settings.webhook_silent_pause, settings.webhook_endpoint_concurrency
        )
        self.global_slots = asyncio.Semaphore(settings.webhook_concurrency)
        self.in_flight: Counter[str] = Counter()
        # Events this process is sending now. Never claimed again while in flight, even once
        # their lease has run out (a receiver slower than the lease), so that one dispatcher
        # cannot send the same event twice at once.
        self.sending: set[str] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        timeout = httpx.Timeout(settings.webhook_timeout.total_seconds())
        allow = settings.webhook_allowed_networks
        self.clients = {
            mode: httpx.AsyncClient(
                transport=GuardedTransport(UrlPolicy.for_mode(mode == "live", allow)),
                timeout=timeout,
                follow_redirects=False,
            )
            for mode in ("test", "live")
        }

    async def aclose(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for client in self.clients.values():
            await client.aclose()

    async def run(self) -> None:
        poll = self.context.settings.webhook_poll_interval.total_seconds()
        while True:
            # Cleared before the claim, not after: an event committed while the claim runs
            # sets it again, so the wait below returns at once instead of after a poll.
            WAKE.clear()
            try:
                claimed = await self.dispatch_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("webhooks.dispatch_failed")
                claimed = 0
            if claimed:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(WAKE.wait(), poll)

    async def dispatch_once(self) -> int:
        """Claim what is due and start delivering it; returns how many events were claimed."""
        free = self.context.settings.webhook_concurrency - len(self.tasks)
        if free <= 0:
            return 0
        events = await self.claim(free)
        for event in events:
            self.in_flight[event.endpoint] += 1
            self.sending.add(event.id)
            task = asyncio.create_task(self._deliver_and_record(event))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        return len(events)

    def _excluded(self, now: datetime) -> list[str]:
        """Endpoints not to claim for: paused, or already at their concurrency limit."""
        full = [ep for ep, count in self.in_flight.items() if count >= self.pauses.limit(ep)]
        return [*full, *self.pauses.paused(now)]

    async def claim(self, limit: int, now: datetime | None = None) -> list[WebhookEvent]:
        now = now or utcnow()
        database = self.context.database
        async with database.write() as session:
            statement = (
                select(WebhookEvent)
                .where(
                    WebhookEvent.state == EventState.PENDING,
                    WebhookEvent.next_attempt_at <= now,
                    or_(WebhookEvent.lease_until.is_(None), WebhookEvent.lease_until < now),
                )
                .order_by(WebhookEvent.next_attempt_at)
                .limit(limit * 2)
            )
            excluded = self._excluded(now)
            if excluded:
                statement = statement.where(WebhookEvent.endpoint.not_in(excluded))
            if self.sending:
                statement = statement.where(WebhookEvent.id.not_in(self.sending))
            if not database.is_sqlite:
                statement = statement.with_for_update(skip_locked=True)
            candidates = list(await session.scalars(statement))
            chosen = list(self._fair_share(candidates, limit))
            for event in chosen:
                event.lease_until = now + self.lease
        return chosen

    def _fair_share(self, events: Iterable[WebhookEvent], limit: int) -> Iterable[WebhookEvent]:
        """At most the endpoint's free slots each, so one busy endpoint cannot fill the batch."""
        taken: Counter[str] = Counter()
        count = 0
        for event in events:
            if count >= limit:
                return
            limit_here = self.pauses.limit(event.endpoint)
            if self.in_flight[event.endpoint] + taken[event.endpoint] >= limit_here:
                continue
            taken[event.endpoint] += 1
            count += 1
            yield event

    async def _deliver_and_record(self, event: WebhookEvent) -> None:
        try:
            async with self.global_slots:
                outcome = await self.deliver(event)
            self.pauses.record(event.endpoint, not outcome.silent, utcnow())
            await self.record(event, outcome)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("webhooks.delivery_failed", event_id=event.id)
        finally:
            self.sending.discard(event.id)
            self.in_flight[event.endpoint] -= 1
            if self.in_flight[event.endpoint] <= 0:
                del self.in_flight[event.endpoint]
            WAKE.set()  # a slot is free: look for more work at once

    async def deliver(self, event: WebhookEvent) -> Outcome:
        now = utcnow()
        database, server_secret = self.context.database, self.context.key_secret
        # A read: on SQLite it must not queue behind every other write for the one writer.
        async with database.read() as session:
            keys = await secrets.signing_now(session, server_secret, event.merchant_id, now)
        if not keys:
            async with database.write() as session:
                keys = await secrets.active(session, server_secret, event.merchant_id, now)
        headers = signing.delivery_headers(keys, event.id, now, event.payload)
        started = time.perf_counter()
        try:
            response = await self.clients[event.mode].post(
                event.url, content=event.payload.encode(), headers=headers
            )
        except UnsafeUrl as exc:
            return Outcome(None, _ms(started), "", f"refused: {exc}", None, refused=True)
        except httpx.HTTPError as exc:
            return Outcome(None, _ms(started), "", f"{type(exc).__name__}: {exc}"[:500], None)
        retry_after = parse_retry_after(response.headers.get("retry-after"), utcnow())
        return Outcome(
            response.status_code, _ms(started), clean_body(response.text), None, retry_after
        )

    async def record(self, event: WebhookEvent, outcome: Outcome) -> None:
        now = utcnow()
        async with self.context.database.write() as session:
            row = await session.get(WebhookEvent, event.id, with_for_update=True)
            if row is None:
                return
            session.add(
                WebhookAttempt(
                    event_id=row.id,
                    attempted_at=now,
                    status_code=outcome.status_code,
                    latency_ms=outcome.latency_ms,
                    response_body=outcome.body,
                    error=outcome.error,
                )
            )
            row.attempt_count += 1
            row.last_status = outcome.status_code
            row.lease_until = None
            self._schedule(row, outcome, now)
        metrics.record_attempt(outcome.succeeded, outcome.gone, outcome.latency_ms)

    def _schedule(self, row: WebhookEvent, outcome: Outcome, now: datetime) -> None:
        if outcome.succeeded:
            row.state, row.completed_at, row.next_attempt_at = EventState.SUCCEEDED, now, None
            return
        delay = None if outcome.gone else next_delay(self.schedule, row.attempt_count)
        if delay is None:
            # 410 Gone, or the schedule is spent: failed, and replayable.
            row.state, row.completed_at, row.next_attempt_at = EventState.FAILED, now, None
            return
        wait = timedelta(seconds=delay)
        if outcome.retry_after is not None:
            wait = max(wait, outcome.retry_after)
        row.next_attempt_at = now + wait


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


async def queue_depth(session: AsyncSession) -> int:
    count = await session.scalar(
        select(func.count()).where(WebhookEvent.state == EventState.PENDING)
    )
    return int(count or 0)


async def replay(session: AsyncSession, event: WebhookEvent, now: datetime) -> None:
    """Send the event again from the start of the schedule, with the same id."""
    await session.execute(
        update(WebhookEvent)
        .where(WebhookEvent.id == event.id)
        .values(
            state=EventState.PENDING,
            next_attempt_at=now,
            lease_until=None,
            completed_at=None,
            attempt_count=0,
        )
    )
