"""Merchant-facing use cases: inspect deliveries and replay them. Shared by the API and CLI."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from payrelay.db.engine import Database
from payrelay.db.models import WebhookAttempt, WebhookEvent
from payrelay.db.types import iso_utc, utcnow
from payrelay.errors import NotFound
from payrelay.kit.jsonio import loads_exact
from payrelay.webhooks.dispatcher import WAKE, replay
from payrelay.webhooks.repository import WebhookRepository

MAX_LIST = 100


def event_view(event: WebhookEvent) -> dict[str, Any]:
    return {
        "id": event.id,
        "type": event.type,
        "reference": event.reference,
        "url": event.url,
        "state": event.state,
        "attempts": event.attempt_count,
        "lastStatus": event.last_status,
        "createdAt": iso_utc(event.created_at),
        "nextAttemptAt": iso_utc(event.next_attempt_at) if event.next_attempt_at else None,
        "completedAt": iso_utc(event.completed_at) if event.completed_at else None,
        "payload": loads_exact(event.payload.encode()),  # amounts stay exact, as delivered
    }


def attempt_view(attempt: WebhookAttempt) -> dict[str, Any]:
    return {
        "at": iso_utc(attempt.attempted_at),
        "status": attempt.status_code,
        "latencyMs": attempt.latency_ms,
        "responseBody": attempt.response_body,
        "error": attempt.error,
    }


async def list_events(
    database: Database,
    merchant_id: str,
    mode: str,
    *,
    reference: str | None = None,
    state: str | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    async with database.read() as session:
        events = await WebhookRepository(session).list(
            merchant_id, mode, reference=reference, state=state, limit=min(limit, MAX_LIST)
        )
    return [event_view(event) for event in events]


async def show_event(
    database: Database, event_id: str, merchant_id: str | None = None, mode: str | None = None
) -> dict[str, Any]:
    async with database.read() as session:
        repository = WebhookRepository(session)
        event = await repository.get(event_id, merchant_id, mode)
        if event is None:
            raise NotFound("No webhook event with this id.")
        attempts = await repository.attempts(event.id)
    return {**event_view(event), "attemptLog": [attempt_view(a) for a in attempts]}


async def replay_event(
    database: Database, event_id: str, merchant_id: str | None = None, mode: str | None = None
) -> dict[str, Any]:
    async with database.write() as session:
        event = await WebhookRepository(session).get(event_id, merchant_id, mode)
        if event is None:
            raise NotFound("No webhook event with this id.")
        await replay(session, event, utcnow())
    WAKE.set()
    return await show_event(database, event_id, merchant_id, mode)


async def replay_failed_since(
    database: Database, merchant_id: str, mode: str | None, since: datetime
) -> list[str]:
    now = utcnow()
    async with database.write() as session:
        events = await WebhookRepository(session).failed_since(merchant_id, mode, since)
        for event in events:
            await replay(session, event, now)
    WAKE.set()
    return [event.id for event in events]
