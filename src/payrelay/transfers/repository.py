"""Queries for transfers. Every lookup by reference is scoped to one merchant and mode."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import bindparam, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from payrelay.auth.dependencies import Caller, keyed
from payrelay.db.models import Transfer, TransferTransition
from payrelay.transfers.schemas import TransferStatus
from payrelay.webhooks import outbox

# Payment status: the key and the merchant's transfer by reference, in one round trip.
STATUS_BY_KEY = keyed(
    Transfer,
    Transfer.reference == bindparam("reference"),
    Transfer.status,
    Transfer.status_changed_at,
    Transfer.expires_at,
    Transfer.amount_cents,
    Transfer.payment_count,
)

# An identical retry of a create is answered from the stored fingerprint and link.
REPLAY_BY_REFERENCE = select(Transfer.request_fingerprint, Transfer.link).where(
    Transfer.merchant_id == bindparam("merchant_id"),
    Transfer.mode == bindparam("mode"),
    Transfer.reference == bindparam("reference"),
)


class TransferRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def by_reference(
        self, caller: Caller, reference: str, *, for_update: bool = False
    ) -> Transfer | None:
        if "\x00" in reference:
            return None  # never stored, and PostgreSQL refuses NUL in a query parameter
        statement = select(Transfer).where(
            Transfer.merchant_id == caller.merchant_id,
            Transfer.mode == caller.mode.value,
            Transfer.reference == reference,
        )
        if for_update:
            statement = statement.with_for_update()
        return (await self.session.scalars(statement)).first()

    async def by_id(self, transfer_id: str, *, for_update: bool = False) -> Transfer | None:
        if "\x00" in transfer_id:
            return None  # never stored, and PostgreSQL refuses NUL in a query parameter
        statement = select(Transfer).where(Transfer.id == transfer_id)
        if for_update:
            statement = statement.with_for_update()
        return (await self.session.scalars(statement)).first()

    async def reference_taken(self, caller: Caller, reference: str) -> bool:
        statement = select(
            exists().where(
                Transfer.merchant_id == caller.merchant_id,
                Transfer.mode == caller.mode.value,
                Transfer.reference == reference,
            )
        )
        return bool(await self.session.scalar(statement))

    async def expire_due(self, now: datetime, limit: int) -> Sequence[str]:
        """Mark up to ``limit`` overdue pending transfers expired; returns their ids.

        The status guard in the UPDATE makes this safe to run from several processes at once.
        """
        due = (
            select(Transfer.id)
            .where(
                Transfer.status == TransferStatus.PENDING,
                Transfer.expires_at <= now,
                # Issuer-backed transfers expire through the reconciler, which asks first.
                Transfer.trade_no.is_(None),
            )
            .limit(limit)
        )
        result = await self.session.execute(
            update(Transfer)
            .where(Transfer.id.in_(due), Transfer.status == TransferStatus.PENDING)
            .values(status=TransferStatus.EXPIRED, status_changed_at=Transfer.expires_at)
            .returning(Transfer.id, Transfer.expires_at)
            .execution_options(synchronize_session=False)
        )
        rows = result.all()
        for transfer_id, expired_at in rows:
            self.session.add(
                TransferTransition(
                    transfer_id=transfer_id,
                    from_status=TransferStatus.PENDING,
                    to_status=TransferStatus.EXPIRED,
                    cause="expiry",
                    at=expired_at,
                )
            )
        if rows:
            expired = await self.session.scalars(
                select(Transfer).where(Transfer.id.in_([row[0] for row in rows]))
            )
            for transfer in expired:
                outbox.transfer_changed(
                    self.session, transfer, TransferStatus.EXPIRED, transfer.expires_at
                )
        await self.session.flush()
        return [row[0] for row in rows]

    async def transitions(self, transfer_id: str) -> list[TransferTransition]:
        result = await self.session.scalars(
            select(TransferTransition)
            .where(TransferTransition.transfer_id == transfer_id)
            .order_by(TransferTransition.id)
        )
        return list(result)
