"""The reconciler's poll schedule: a backstop that backs off, but never sleeps past expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from payrelay.db.models import Transfer
from payrelay.workers.reconciler import MAX_POLL_DELAY, next_poll

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
INTERVAL = timedelta(seconds=10)


def transfer(age: timedelta, expires_in: timedelta, status: str = "pending") -> Transfer:
    return Transfer(status=status, created_at=NOW - age, expires_at=NOW + expires_in)


def test_a_young_transfer_is_polled_every_interval() -> None:
    row = transfer(timedelta(seconds=5), timedelta(minutes=15))
    assert next_poll(row, NOW, INTERVAL, pushes=True) == NOW + INTERVAL


def test_pushing_issuers_back_off_with_age_up_to_a_cap() -> None:
    row = transfer(timedelta(minutes=8), timedelta(hours=2))
    assert next_poll(row, NOW, INTERVAL, pushes=True) == NOW + timedelta(minutes=2)
    old = transfer(timedelta(hours=3), timedelta(hours=2))
    assert next_poll(old, NOW, INTERVAL, pushes=True) == NOW + MAX_POLL_DELAY


def test_valr_is_polled_every_interval_while_pending() -> None:
    row = transfer(timedelta(minutes=8), timedelta(hours=2))
    assert next_poll(row, NOW, INTERVAL, pushes=False) == NOW + INTERVAL


def test_a_pending_transfer_is_asked_again_at_its_expiry() -> None:
    row = transfer(timedelta(minutes=14), timedelta(seconds=30))
    assert next_poll(row, NOW, INTERVAL, pushes=True) == row.expires_at


def test_a_settled_valr_transfer_is_watched_with_backoff() -> None:
    row = transfer(timedelta(minutes=20), -timedelta(minutes=5), status="processed")
    assert next_poll(row, NOW, INTERVAL, pushes=False) == NOW + timedelta(minutes=5)
