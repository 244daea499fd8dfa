"""Queries for webhook events, always scoped to one merchant and mode."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from payrelay.db.models import WebhookAttempt, WebhookEvent
from payrelay.webhooks.outbox import EventState


class WebhookRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def list(
        self,
        merchant_id: str,
        mode: str,
        *,
        reference: str | None = None,
        state: str | None = None,
        limit: int = 50,
    ) -> Sequence[WebhookEvent]:
        statement = select(WebhookEvent).where(
            WebhookEvent.merchant_id == merchant_id, WebhookEvent.mode == mode
        )
        if reference is not None:
            statement = statement.where(WebhookEvent.reference == reference)
        if state is not None:
            statement = statement.where(WebhookEvent.state == state)
        statement = statement.order_by(WebhookEvent.created_at.desc()).limit(limit)
        return list(await self.session.scalars(statement))

    async def get(
        self, event_id: str, merchant_id: str | None = None, mode: str | None = None
    ) -> WebhookEvent | None:
        statement = select(WebhookEvent).where(WebhookEvent.id == event_id)
        if merchant_id is not None:
            statement = statement.where(WebhookEvent.merchant_id == merchant_id)
        if mode is not None:
            statement = statement.where(WebhookEvent.mode == mode)
        return (await self.session.scalars(statement)).first()

    async def attempts(self, event_id: str) -> Sequence[WebhookAttempt]:
        return list(
            await self.session.scalars(
                select(WebhookAttempt)
                .where(WebhookAttempt.event_id == event_id)
                .order_by(WebhookAttempt.id)
            )
        )

    async def failed_since(
        self, merchant_id: str, mode: str | None, since: datetime
    ) -> Sequence[WebhookEvent]:
        statement = select(WebhookEvent).where(
            WebhookEvent.merchant_id == merchant_id,
            WebhookEvent.state == EventState.FAILED,
            WebhookEvent.created_at >= since,
        )
        if mode is not None:
            statement = statement.where(WebhookEvent.mode == mode)
        return list(await self.session.scalars(statement))
