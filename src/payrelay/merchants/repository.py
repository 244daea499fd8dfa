"""Queries for merchants and their API keys."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from payrelay.db.models import ApiKey, Merchant


class MerchantRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, merchant_id: str) -> Merchant | None:
        return await self.session.get(Merchant, merchant_id)

    async def add(self, row: Merchant | ApiKey) -> None:
        self.session.add(row)
        await self.session.flush()

    async def keys_of(self, merchant_id: str) -> list[ApiKey]:
        result = await self.session.scalars(
            select(ApiKey).where(ApiKey.merchant_id == merchant_id).order_by(ApiKey.created_at)
        )
        return list(result)

    async def get_key(self, key_id: str) -> ApiKey | None:
        return await self.session.get(ApiKey, key_id)
