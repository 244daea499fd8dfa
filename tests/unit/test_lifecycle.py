"""The transfer state machine, without a database: transitions are recorded on a fake session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from payrelay.db.models import Transfer, TransferTransition, WebhookEvent
from payrelay.errors import Conflict
from payrelay.transfers.lifecycle import ALLOWED, Cause, effective_status, transition
from payrelay.transfers.schemas import TransferStatus

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


class RecordingSession:
    def __init__(self) -> None:
        self.added: list[Any] = []
        self.info: dict[str, Any] = {}

    @property
    def transitions(self) -> list[TransferTransition]:
        return [row for row in self.added if isinstance(row, TransferTransition)]

    @property
    def events(self) -> list[WebhookEvent]:
        return [row for row in self.added if isinstance(row, WebhookEvent)]

    def add(self, row: Any) -> None:
        self.added.append(row)


def transfer(status: TransferStatus, expires_in: timedelta = timedelta(minutes=5)) -> Transfer:
    return Transfer(
        id="tr_x",
        status=status.value,
        status_changed_at=NOW - timedelta(minutes=1),
        expires_at=NOW + expires_in,
        paid_late=False,
        payment_count=0,
        merchant_id="mer_x",
        mode="test",
        reference="order-0000001",
        amount_cents=14990,
        issuer="Binance",
        webhook_url="https://shop.example/hook",
    )


def test_every_status_has_a_rule() -> None:
    assert set(ALLOWED) == set(TransferStatus)


def test_overdue_pending_reads_as_expired_at_its_expiry() -> None:
    row = transfer(TransferStatus.PENDING, expires_in=-timedelta(seconds=1))
    assert effective_status(row, NOW) == (TransferStatus.EXPIRED, row.expires_at)


@pytest.mark.parametrize("target", [TransferStatus.PROCESSED, TransferStatus.FAILED])
def test_pending_settles_and_is_recorded(target: TransferStatus) -> None:
    session, row = RecordingSession(), transfer(TransferStatus.PENDING)
    transition(session, row, target, Cause.SANDBOX, NOW)  # type: ignore[arg-type]
    assert row.status == target.value
    assert row.status_changed_at == NOW
    (recorded,) = session.transitions
    (event,) = session.events  # the outbox row, in the same unit of work
    assert event.type == f"payment.{target.value}"
    assert (recorded.from_status, recorded.to_status, recorded.cause) == (
        "pending",
        target.value,
        "sandbox",
    )


def test_payment_after_expiry_is_processed_late_with_both_transitions() -> None:
    session = RecordingSession()
    row = transfer(TransferStatus.PENDING, expires_in=-timedelta(minutes=1))
    transition(session, row, TransferStatus.PROCESSED, Cause.SANDBOX, NOW)  # type: ignore[arg-type]
    assert row.status == "processed"
    assert row.paid_late is True
    assert [e.type for e in session.events] == ["payment.expired", "payment.processed"]
    assert [(t.from_status, t.to_status, t.cause) for t in session.transitions] == [
        ("pending", "expired", "expiry"),
        ("expired", "processed", "sandbox"),
    ]


@pytest.mark.parametrize(
    ("start", "target"),
    [
        (TransferStatus.PROCESSED, TransferStatus.FAILED),
        (TransferStatus.FAILED, TransferStatus.PROCESSED),
        (TransferStatus.EXPIRED, TransferStatus.FAILED),
        (TransferStatus.PROCESSED, TransferStatus.PROCESSED),
    ],
)
def test_final_states_do_not_change(start: TransferStatus, target: TransferStatus) -> None:
    session, row = RecordingSession(), transfer(start)
    with pytest.raises(Conflict):
        transition(session, row, target, Cause.SANDBOX, NOW)  # type: ignore[arg-type]
    assert row.status == start.value
    assert session.added == []
