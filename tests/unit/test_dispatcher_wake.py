"""The dispatcher never sleeps through a wake-up that arrives while it is claiming."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from payrelay.context import AppContext
from payrelay.db.engine import Database
from payrelay.webhooks.dispatcher import WAKE, Dispatcher
from tests.conftest import make_settings


async def test_an_event_committed_during_an_empty_claim_is_claimed_at_once(
    sqlite_url: str,
) -> None:
    settings = make_settings(sqlite_url, webhook_poll_interval=timedelta(seconds=30))
    database = Database(sqlite_url)
    context = AppContext(settings, database, b"k" * 32)
    dispatcher = Dispatcher(context)
    claims: list[float] = []
    second_claim = asyncio.Event()

    async def claim(limit: int, now: Any = None) -> list[Any]:
        claims.append(asyncio.get_running_loop().time())
        if len(claims) == 1:
            WAKE.set()  # what the outbox's after-commit hook does, mid-claim
        else:
            second_claim.set()
        return []

    dispatcher.claim = claim  # type: ignore[method-assign]
    running = asyncio.create_task(dispatcher.run())
    try:
        # With a 30 s poll, only the wake-up can bring the second claim this soon.
        await asyncio.wait_for(second_claim.wait(), timeout=2)
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await dispatcher.aclose()
        await database.dispose()
    assert len(claims) >= 2
