"""Queries for mobile money transactions, always scoped to one merchant and mode."""

from __future__ import annotations

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from payrelay.auth.dependencies import Caller, keyed
from payrelay.db.models import MomoTransaction

# Momo status: the key and the merchant's transaction, in one round trip.
STATUS_BY_KEY = keyed(
    MomoTransaction,
    MomoTransaction.transaction_id == bindparam("transaction_id"),
    MomoTransaction.status,
    MomoTransaction.confirmation_id,
)


class MomoRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(
        self, caller: Caller, transaction_id: str, *, for_update: bool = False
    ) -> MomoTransaction | None:
        statement = select(MomoTransaction).where(
            MomoTransaction.merchant_id == caller.merchant_id,
            MomoTransaction.mode == caller.mode.value,
            MomoTransaction.transaction_id == transaction_id,
        )
        if for_update:
            statement = statement.with_for_update()
        return (await self.session.scalars(statement)).first()

    async def add(self, row: MomoTransaction) -> None:
        self.session.add(row)
        await self.session.flush()
