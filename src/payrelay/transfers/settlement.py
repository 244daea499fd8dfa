"""Apply what an issuer reports (pushed or polled) to a transfer, inside one transaction.

Only an explicit final answer moves a transfer. Payments are recorded one row each, unique per
issuer payment id, so a repeated report never counts money twice; two distinct payments for one
transfer are a duplicate payment that payment-status answers with 409.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from payrelay.db.models import Transfer, TransferPayment
from payrelay.issuers.base import OrderState, Payment
from payrelay.transfers.lifecycle import Cause, effective_status, transition
from payrelay.transfers.schemas import TransferStatus


async def _record_payments(
    session: AsyncSession, transfer: Transfer, payments: Sequence[Payment], now: datetime
) -> int:
    """Store payments not seen before; returns how many distinct payments the transfer has."""
    known = set(
        await session.scalars(
            select(TransferPayment.payment_id).where(TransferPayment.transfer_id == transfer.id)
        )
    )
    for payment in payments:
        if payment.payment_id in known:
            continue
        known.add(payment.payment_id)
        session.add(
            TransferPayment(
                transfer_id=transfer.id,
                issuer=transfer.issuer,
                payment_id=payment.payment_id,
                amount=payment.amount,
                currency=payment.currency,
                paid_at=payment.paid_at,
                recorded_at=now,
            )
        )
    await session.flush()
    count = await session.scalar(
        select(func.count()).where(TransferPayment.transfer_id == transfer.id)
    )
    return int(count or 0)


async def apply_issuer_state(
    session: AsyncSession,
    transfer: Transfer,
    state: OrderState,
    payments: Sequence[Payment],
    cause: Cause,
    now: datetime,
) -> bool:
    """Move ``transfer`` as the issuer's answer requires; returns True if its status changed."""
    current, _ = effective_status(transfer, now)
    if state is OrderState.PAID:
        count = await _record_payments(session, transfer, payments, now) if payments else 0
        if current is TransferStatus.PROCESSED:
            transfer.payment_count = max(transfer.payment_count, count)
            return False
        if current in (TransferStatus.PENDING, TransferStatus.EXPIRED):
            transition(session, transfer, TransferStatus.PROCESSED, cause, now)
            transfer.payment_count = max(transfer.payment_count, count)
            return True
        # Money moved for a transfer that is already failed: final states do not change, but the
        # payment is kept (above) for refund handling.
        transfer.payment_count = max(transfer.payment_count, count)
        return False
    if current is not TransferStatus.PENDING:
        return False
    if state is OrderState.FAILED:
        transition(session, transfer, TransferStatus.FAILED, cause, now)
        return True
    if state is OrderState.EXPIRED:
        transition(session, transfer, TransferStatus.EXPIRED, cause, now)
        return True
    return False
