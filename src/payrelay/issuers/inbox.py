"""Verified issuer notifications go through an inbox: recorded once, applied once, acked fast."""

from __future__ import annotations

from collections.abc import Mapping

import structlog
from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from payrelay.auth.keys import Mode
from payrelay.context import AppContext
from payrelay.db.models import IssuerEvent, Transfer
from payrelay.db.types import utcnow
from payrelay.errors import NotFound, ServiceUnavailable, Unauthorized
from payrelay.issuers.base import (
    Acknowledgement,
    InvalidNotification,
    Issuer,
    IssuerConnector,
    IssuerError,
    IssuerNotification,
    OrderState,
)
from payrelay.issuers.orders import order_request_for
from payrelay.transfers.lifecycle import Cause
from payrelay.transfers.settlement import apply_issuer_state

log = structlog.get_logger("payrelay.issuers.inbox")


async def _verify(
    context: AppContext, issuer: Issuer, headers: Mapping[str, str], body: bytes
) -> tuple[Mode, IssuerConnector, IssuerNotification | None]:
    candidates = list(context.connectors.pushing(issuer))
    if not candidates:
        raise NotFound(f"{issuer.value} does not send notifications here.")
    for mode, connector in candidates:
        try:
            return mode, connector, await connector.verify_notification(headers, body)
        except InvalidNotification:
            continue
        except IssuerError as exc:
            # We could not fetch what we need to verify (e.g. the signing certificate); the
            # issuer retries on a non-2xx, so nothing is lost by refusing now.
            raise ServiceUnavailable("Cannot verify the notification right now.") from exc
    log.warning("notification.rejected", issuer=issuer.value, reason="signature")
    raise Unauthorized("The notification signature does not verify.")


async def _record(
    session: AsyncSession, issuer: Issuer, mode: Mode, note: IssuerNotification, body: bytes
) -> bool:
    """Insert the inbox row; False if this event was already recorded."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = (
        insert(IssuerEvent)
        .values(
            issuer=issuer.value,
            mode=mode.value,
            event_key=note.event_key,
            trade_no=note.trade_no,
            state=note.state.value,
            raw_status=note.raw_status[:64],
            body=body.decode("utf-8", errors="replace"),
            received_at=utcnow(),
        )
        .on_conflict_do_nothing(index_elements=["issuer", "event_key"])
        .returning(IssuerEvent.id)
    )
    return (await session.execute(statement)).first() is not None


async def receive(
    context: AppContext, issuer: Issuer, headers: Mapping[str, str], body: bytes
) -> Acknowledgement:
    mode, connector, note = await _verify(context, issuer, headers, body)
    if note is None:
        return connector.acknowledgement()
    state = note.state
    if state in (OrderState.FAILED, OrderState.EXPIRED):
        state = await _confirm(connector, context, issuer, mode, note)
    async with context.database.write() as session:
        if not await _record(session, issuer, mode, note, body):
            return connector.acknowledgement()
        transfer = await _transfer_for(session, issuer, mode, note)
        if transfer is None:
            log.warning("notification.unknown_order", issuer=issuer.value, trade_no=note.trade_no)
            return connector.acknowledgement()
        await session.execute(
            update(IssuerEvent)
            .where(IssuerEvent.issuer == issuer.value, IssuerEvent.event_key == note.event_key)
            .values(transfer_id=transfer.id)
        )
        await apply_issuer_state(
            session, transfer, state, note.payments, Cause.NOTIFICATION, utcnow()
        )
    return connector.acknowledgement()


async def _confirm(
    connector: IssuerConnector,
    context: AppContext,
    issuer: Issuer,
    mode: Mode,
    note: IssuerNotification,
) -> OrderState:
    """A closing notification can mean cancelled or expired; the order query says which."""
    async with context.database.read() as session:
        transfer = await _transfer_for(session, issuer, mode, note)
    if transfer is None:
        return note.state
    try:
        report = await connector.query_order(order_request_for(transfer), transfer.issuer_order_id)
    except IssuerError:
        return note.state
    if report.state in (OrderState.PAID, OrderState.FAILED, OrderState.EXPIRED):
        return report.state
    return note.state


async def _transfer_for(
    session: AsyncSession, issuer: Issuer, mode: Mode, note: IssuerNotification
) -> Transfer | None:
    if not note.trade_no and not note.issuer_order_id:
        return None
    statement = select(Transfer).where(Transfer.issuer == issuer.value, Transfer.mode == mode.value)
    if note.trade_no:
        statement = statement.where(Transfer.trade_no == note.trade_no)
    else:
        statement = statement.where(Transfer.issuer_order_id == note.issuer_order_id)
    return (await session.scalars(statement.with_for_update())).first()
