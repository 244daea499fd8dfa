"""Background sweeper that writes down expiry of overdue pending transfers.

Readers already see an overdue transfer as expired; the sweeper makes it durable and records the
transition, which later issues hang webhooks and issuer close-out on.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

import structlog

from payrelay.db.engine import Database
from payrelay.db.types import utcnow
from payrelay.transfers.repository import TransferRepository

BATCH = 500
log = structlog.get_logger("payrelay.expiry")


async def expire_due(database: Database, now: datetime | None = None) -> int:
    """Expire every overdue pending transfer, in batches; returns how many changed."""
    now = now or utcnow()
    total = 0
    while True:
        async with database.write() as session:
            expired = await TransferRepository(session).expire_due(now, BATCH)
        total += len(expired)
        if len(expired) < BATCH:
            return total


async def run_expiry_loop(database: Database, interval_seconds: float) -> None:
    while True:
        try:
            count = await expire_due(database)
            if count:
                log.info("transfers.expired", count=count)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("expiry.sweep_failed")
        await asyncio.sleep(interval_seconds)
