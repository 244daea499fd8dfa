"""Wake the dispatcher the moment a transaction that wrote an event commits."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

WAKE_KEY = "payrelay.webhook_written"


def mark_written(session: Any) -> None:
    """Called by the outbox on an (async or sync) session that just wrote an event."""
    sync = getattr(session, "sync_session", session)
    sync.info[WAKE_KEY] = True


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    if session.info.pop(WAKE_KEY, False):
        from payrelay.webhooks.dispatcher import WAKE

        WAKE.set()
