"""Writing webhook events. Always called inside the transaction that makes the state change, so
a crash can never leave a change without its event, or an event without its change."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncSession

from payrelay.db.models import MomoTransaction, Transfer, WebhookEvent
from payrelay.db.types import iso_utc
from payrelay.kit.ids import new_id
from payrelay.kit.jsonio import dumps_exact
from payrelay.kit.validation import CENT
from payrelay.webhooks.wake import mark_written

TRANSFER_EVENTS = {
    "processed": "payment.processed",
    "failed": "payment.failed",
    "expired": "payment.expired",
}
MOMO_EVENTS = {"Successful": "momo.successful", "Unsuccessful": "momo.unsuccessful"}
MAX_BODY_BYTES = 20 * 1024


class EventState:
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"  # nowhere to deliver it


def endpoint_of(url: str) -> str:
    """``scheme://host:port``: the unit deliveries are limited by."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def transfer_data(transfer: Transfer, status: str, at: datetime) -> dict[str, Any]:
    data: dict[str, Any] = {
        "reference": transfer.reference,
        "status": status,
        "amount": Decimal(transfer.amount_cents) * CENT,
        "currency": "ZAR",
        "issuer": transfer.issuer,
        "customReference": transfer.custom_reference,
        "late": transfer.paid_late,
        "timestamp": iso_utc(at),
    }
    if transfer.pay_currency is not None and transfer.pay_amount is not None:
        data["payCurrency"] = transfer.pay_currency
        data["payAmount"] = transfer.pay_amount
    return data


def momo_data(row: MomoTransaction) -> dict[str, Any]:
    return {
        "transactionId": row.transaction_id,
        "status": row.status,
        "confirmationID": row.confirmation_id,
    }


def build_body(event_id: str, event_type: str, at: datetime, data: dict[str, Any]) -> str:
    body = dumps_exact({"id": event_id, "type": event_type, "timestamp": iso_utc(at), "data": data})
    if len(body) > MAX_BODY_BYTES:
        raise ValueError("webhook body over 20 KB")  # bounded fields make this unreachable
    return body.decode()


def _record(
    session: AsyncSession,
    *,
    merchant_id: str,
    mode: str,
    event_type: str,
    reference: str | None,
    url: str | None,
    data: dict[str, Any],
    at: datetime,
) -> WebhookEvent:
    event_id = new_id("evt")
    event = WebhookEvent(
        id=event_id,
        merchant_id=merchant_id,
        mode=mode,
        type=event_type,
        reference=reference,
        url=url or "",
        endpoint=endpoint_of(url) if url else "",
        payload=build_body(event_id, event_type, at, data),
        created_at=at,
        state=EventState.PENDING if url else EventState.SKIPPED,
        attempt_count=0,
        next_attempt_at=at if url else None,
    )
    session.add(event)
    if url:
        mark_written(session)
    return event


def transfer_changed(session: AsyncSession, transfer: Transfer, status: str, at: datetime) -> None:
    """Record ``payment.<status>`` for a transfer that just reached a final status."""
    event_type = TRANSFER_EVENTS.get(status)
    if event_type is None:
        return
    _record(
        session,
        merchant_id=transfer.merchant_id,
        mode=transfer.mode,
        event_type=event_type,
        reference=transfer.reference,
        url=transfer.webhook_url,
        data=transfer_data(transfer, status, at),
        at=at,
    )


def momo_changed(
    session: AsyncSession, row: MomoTransaction, url: str | None, at: datetime
) -> None:
    event_type = MOMO_EVENTS.get(row.status)
    if event_type is None:
        return
    _record(
        session,
        merchant_id=row.merchant_id,
        mode=row.mode,
        event_type=event_type,
        reference=row.transaction_id,
        url=url,
        data=momo_data(row),
        at=at,
    )
