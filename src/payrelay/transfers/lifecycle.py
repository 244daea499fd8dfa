"""The transfer state machine: which changes are allowed, and how each one is recorded."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy.ext.asyncio import AsyncSession

from payrelay.db.models import Transfer, TransferTransition
from payrelay.errors import Conflict
from payrelay.transfers.schemas import TransferStatus
from payrelay.webhooks import outbox


class Cause(StrEnum):
    CREATE = "create"
    SANDBOX = "sandbox"
    EXPIRY = "expiry"
    NOTIFICATION = "notification"
    POLL = "poll"


# An expired transfer can still become processed: if the payer's money moved after our expiry,
# the payment is real and is flagged late rather than lost.
ALLOWED: dict[TransferStatus, frozenset[TransferStatus]] = {
    TransferStatus.PENDING: frozenset(
        {TransferStatus.PROCESSED, TransferStatus.FAILED, TransferStatus.EXPIRED}
    ),
    TransferStatus.EXPIRED: frozenset({TransferStatus.PROCESSED}),
    TransferStatus.PROCESSED: frozenset(),
    TransferStatus.FAILED: frozenset(),
}


def effective_status(transfer: Transfer, now: datetime) -> tuple[TransferStatus, datetime]:
    """Status as a reader should see it: a pending transfer past its expiry is expired, even
    before the sweeper has written that down."""
    return status_as_seen(transfer.status, transfer.status_changed_at, transfer.expires_at, now)


def status_as_seen(
    stored: str, changed_at: datetime, expires_at: datetime, now: datetime
) -> tuple[TransferStatus, datetime]:
    """``effective_status`` on the stored columns, for reads that load no ORM object."""
    status = TransferStatus(stored)
    if status is TransferStatus.PENDING and expires_at <= now:
        return TransferStatus.EXPIRED, expires_at
    return status, changed_at


def transition(
    session: AsyncSession,
    transfer: Transfer,
    target: TransferStatus,
    cause: Cause,
    now: datetime,
) -> None:
    """Move ``transfer`` to ``target`` and record why. Refuses anything the machine forbids."""
    current, _ = effective_status(transfer, now)
    if current is TransferStatus.EXPIRED and transfer.status == TransferStatus.PENDING:
        _record(session, transfer, TransferStatus.EXPIRED, Cause.EXPIRY, transfer.expires_at)
    if target not in ALLOWED[current]:
        raise Conflict(f"The transfer is already {current.value}; it cannot become {target.value}.")
    if current is TransferStatus.EXPIRED and target is TransferStatus.PROCESSED:
        transfer.paid_late = True
    if target is TransferStatus.PROCESSED:
        transfer.payment_count += 1
    _record(session, transfer, target, cause, now)


def record_expiry(session: AsyncSession, transfer: Transfer, now: datetime) -> bool:
    """Write down that an overdue pending transfer expired, at the moment it expired."""
    if transfer.status != TransferStatus.PENDING or transfer.expires_at > now:
        return False
    _record(session, transfer, TransferStatus.EXPIRED, Cause.EXPIRY, transfer.expires_at)
    return True


def _record(
    session: AsyncSession,
    transfer: Transfer,
    target: TransferStatus,
    cause: Cause,
    at: datetime,
) -> None:
    session.add(
        TransferTransition(
            transfer_id=transfer.id,
            from_status=transfer.status,
            to_status=target.value,
            cause=cause.value,
            at=at,
        )
    )
    transfer.status = target.value
    transfer.status_changed_at = at
    outbox.transfer_changed(session, transfer, target.value, at)
