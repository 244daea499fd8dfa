"""Poll issuers for transfers still open, so a lost notification still ends correctly.

At expiry the issuer is asked first: money that moved wins (processed, flagged late if after
our expiry); otherwise the order is closed where the issuer allows it and the transfer expires.
VALR sends no notifications at all, so for VALR this loop is how payments are found, and a
settled VALR transfer keeps being watched until its expiry so a second credit is caught as a
duplicate payment.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import structlog
from sqlalchemy import or_, select

from payrelay.auth.keys import Mode
from payrelay.context import AppContext
from payrelay.db.models import Transfer
from payrelay.db.types import utcnow
from payrelay.issuers.base import Issuer, IssuerError, OrderReport, OrderState
from payrelay.issuers.orders import order_request_for
from payrelay.transfers.lifecycle import Cause, record_expiry
from payrelay.transfers.repository import TransferRepository
from payrelay.transfers.schemas import TransferStatus
from payrelay.transfers.settlement import apply_issuer_state

BATCH = 100
CONCURRENT_POLLS = 8  # issuer queries in flight at once, per process
MAX_POLL_DELAY = timedelta(minutes=5)
log = structlog.get_logger("payrelay.reconciler")


def next_poll(transfer: Transfer, now: datetime, interval: timedelta, pushes: bool) -> datetime:
    """When to ask the issuer again. Issuers that push are polled only as a backstop, backing off
    as the transfer ages (a quarter of its age, at most 5 minutes); VALR, which pushes nothing,
    every interval while pending. A pending transfer is always asked again at its expiry."""
    if pushes or transfer.status != TransferStatus.PENDING:
        age = now - transfer.created_at
        delay = min(max(age / 4, interval), MAX_POLL_DELAY)
    else:
        delay = interval
    at = now + delay
    if transfer.status == TransferStatus.PENDING and now < transfer.expires_at < at:
        at = transfer.expires_at
    return at


async def _due(context: AppContext, now: datetime, modes: tuple[Mode, ...]) -> list[Transfer]:
    """Transfers whose issuer should be asked again now."""
    async with context.database.read() as session:
        result = await session.scalars(
            select(Transfer)
            .where(
                Transfer.trade_no.is_not(None),
                Transfer.mode.in_([mode.value for mode in modes]),
                or_(
                    Transfer.status == TransferStatus.PENDING,
                    # VALR pushes nothing: keep watching a settled or expired VALR transfer for
                    # a while, so a second credit (duplicate) or a late one is still found.
                    (Transfer.issuer == Issuer.VALR.value)
                    & Transfer.status.in_((TransferStatus.PROCESSED, TransferStatus.EXPIRED))
                    & (Transfer.expires_at > now - context.settings.late_payment_window),
                ),
                or_(Transfer.next_poll_at.is_(None), Transfer.next_poll_at <= now),
            )
            # Never-polled first, then the most overdue poll, so a backlog cannot starve anyone.
            .order_by(Transfer.next_poll_at.is_not(None), Transfer.next_poll_at)
            .limit(BATCH)
        )
        return list(result)


async def reconcile_transfer(context: AppContext, transfer: Transfer, now: datetime) -> bool:
    """Poll one transfer's order and apply the answer; True if the transfer's status changed."""
    connector = context.connectors.get(Issuer(transfer.issuer), Mode(transfer.mode))
    if connector is None:
        return False
    order = order_request_for(transfer)
    report: OrderReport | None
    try:
        report = await connector.query_order(order, transfer.issuer_order_id)
    except IssuerError as exc:
        log.info(
            "reconcile.query_failed",
            transfer_id=transfer.id,
            issuer=transfer.issuer,
            error=type(exc).__name__,
            detail=str(exc)[:200],
        )
        report = None
    if report is not None and "UNDERPAID" in report.raw_status:
        log.warning(
            "reconcile.underpaid",
            transfer_id=transfer.id,
            issuer=transfer.issuer,
            raw_status=report.raw_status[:200],
        )
    overdue = transfer.expires_at <= now
    if overdue and connector.supports_close and (report is None or _still_open(report)):
        try:
            await connector.close_order(order, transfer.issuer_order_id)
        except IssuerError:
            log.info("reconcile.close_failed", transfer_id=transfer.id)
    async with context.database.write() as session:
        row = await TransferRepository(session).by_id(transfer.id, for_update=True)
        if row is None:
            return False
        row.last_polled_at = now
        before = row.status
        if report is not None and not _still_open(report):
            await apply_issuer_state(session, row, report.state, report.payments, Cause.POLL, now)
        if overdue and report is not None:
            # The issuer was asked and no money moved: the transfer ends as expired.
            record_expiry(session, row, now)
        row.next_poll_at = next_poll(
            row, now, context.settings.reconcile_interval, connector.pushes_notifications
        )
        return row.status != before


def _still_open(report: OrderReport) -> bool:
    return report.state in (OrderState.PENDING, OrderState.NOT_FOUND)


async def reconcile_once(
    context: AppContext, now: datetime | None = None, modes: tuple[Mode, ...] = tuple(Mode)
) -> int:
    """One pass over the transfers due for a poll; returns how many changed status."""
    now = now or utcnow()
    due = await _due(context, now, modes)
    gate = asyncio.Semaphore(CONCURRENT_POLLS)

    async def poll(transfer: Transfer) -> bool:
        async with gate:
            return await reconcile_transfer(context, transfer, now)

    return sum(await asyncio.gather(*(poll(transfer) for transfer in due)))


async def run_reconciler_loop(context: AppContext, modes: tuple[Mode, ...] = tuple(Mode)) -> None:
    """Test-mode orders live in the simulators of the serving process, so a standalone worker
    reconciles live mode only."""
    interval = context.settings.reconcile_interval.total_seconds()
    while True:
        try:
            await reconcile_once(context, modes=modes)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("reconcile.pass_failed")
        await asyncio.sleep(interval)
