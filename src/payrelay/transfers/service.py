"""Use cases of transfer requests: create, read status, issue a fresh reference."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError

from payrelay.auth.dependencies import Caller, Credentials, admit_with_row, authenticate
from payrelay.auth.keys import Mode
from payrelay.context import AppContext
from payrelay.db.models import Transfer, TransferTransition
from payrelay.db.types import utcnow
from payrelay.errors import BadRequest, NotFound, ReferenceReused, ValidationFailed
from payrelay.issuers.base import Issuer
from payrelay.kit.ids import new_id
from payrelay.kit.locks import KeyedLocks
from payrelay.kit.validation import CENT, plain_text, raise_field_errors
from payrelay.transfers.lifecycle import Cause, status_as_seen
from payrelay.transfers.opening import OpenedOrder, check_pair, open_order, require_connector
from payrelay.transfers.repository import (
    REPLAY_BY_REFERENCE,
    STATUS_BY_KEY,
    TransferRepository,
)
from payrelay.transfers.schemas import (
    REFERENCE_MAX,
    PaymentStatusOut,
    TransferRequestIn,
    TransferStatus,
)
from payrelay.webhooks.ssrf import UnsafeUrl, UrlPolicy, check_url


@dataclass(frozen=True)
class Created:
    link: str
    replayed: bool


def parse_transfer_request(context: AppContext, body: dict[str, Any]) -> TransferRequestIn:
    try:
        return TransferRequestIn.model_validate(
            body, context={"max_amount": context.settings.max_amount}
        )
    except ValidationError as exc:
        raise raise_field_errors(exc) from None


def sandbox_link(context: AppContext, transfer_id: str) -> str:
    return f"{context.settings.base_url}/sandbox/checkout/{transfer_id}"


async def create_transfer(
    context: AppContext, caller: Caller, request: TransferRequestIn
) -> Created:
    """Open the order at the issuer, then store the transfer; or replay an identical retry.

    An identical retry is answered from the store before the issuer is asked again. Creates of
    one reference in this process are serialised, and across processes the unique constraint on
    (merchant, mode, reference) decides: exactly one insert wins, every other request reads it.
    """
    check_pair(request)
    require_connector(context, caller, Issuer(request.issuer))
    if caller.mode is Mode.LIVE:
        await check_webhook_url(context, request.webhookUrl)
    fingerprint = request.fingerprint()
    async with _creating.hold((caller.merchant_id, caller.mode.value, request.reference)):
        replay = await _replay(context, caller, request.reference, fingerprint)
        if replay is not None:
            return replay
        now = utcnow()
        expires_at = now + context.settings.default_expiry
        opened = await open_order(context, caller, request, expires_at)
        transfer_id = new_id("tr")
        transfer = _transfer_row(
            context, caller, request, fingerprint, transfer_id, now, expires_at, opened
        )
        created = {
            "transfer_id": transfer_id,
            "from_status": None,
            "to_status": TransferStatus.PENDING.value,
            "cause": Cause.CREATE.value,
            "at": now,
        }
        try:
            await context.database.inserts.insert(
                (Transfer, transfer), (TransferTransition, created)
            )
        except IntegrityError:
            replay = await _replay(context, caller, request.reference, fingerprint)
            if replay is None:
                raise
            return replay
        return Created(transfer["link"], replayed=False)


_creating = KeyedLocks()


async def check_webhook_url(context: AppContext, url: str) -> None:
    """Live mode: the webhook must be https and must not reach an internal address. Checked
    here and again at every delivery against the address actually dialled."""
    policy = UrlPolicy.for_mode(True, context.settings.webhook_allowed_networks)
    try:
        await check_url(url, policy)
    except UnsafeUrl as exc:
        raise ValidationFailed({"webhookUrl": str(exc)}) from None


async def _replay(
    context: AppContext, caller: Caller, reference: str, fingerprint: str
) -> Created | None:
    existing = await context.database.points.fetch_one(
        REPLAY_BY_REFERENCE,
        {"merchant_id": caller.merchant_id, "mode": caller.mode.value, "reference": reference},
    )
    if existing is None:
        return None
    stored_fingerprint, link = existing
    if stored_fingerprint != fingerprint:
        raise ReferenceReused(context.settings.base_url)
    return Created(link, replayed=True)


def _transfer_row(
    context: AppContext,
    caller: Caller,
    request: TransferRequestIn,
    fingerprint: str,
    transfer_id: str,
    now: datetime,
    expires_at: datetime,
    opened: OpenedOrder,
) -> dict[str, Any]:
    """The new transfer's columns, for a Core insert (payrelay.db.groupcommit)."""
    # Test mode answers payrelay's own checkout page, whose buttons drive the issuer simulator;
    # live mode answers the issuer's link.
    link = sandbox_link(context, transfer_id) if caller.mode is Mode.TEST else opened.link
    return {
        "id": transfer_id,
        "merchant_id": caller.merchant_id,
        "mode": caller.mode.value,
        "reference": request.reference,
        "request_fingerprint": fingerprint,
        "recipient": request.recipient,
        "amount_cents": int(request.amount / CENT),
        "issuer": request.issuer,
        "acquirer": request.acquirerMerchantName,
        "issuer_merchant_id": request.merchantID,
        "description": request.description,
        "terminal_type": request.terminalType,
        "success_url": request.successUrl,
        "failed_url": request.failedUrl,
        "webhook_url": request.webhookUrl,
        "currency": request.currency,
        "custom_reference": request.customReference,
        "merchant_category_code": request.merchantCategoryCode,
        "goods_type": request.goodsType,
        "link": link,
        "status": TransferStatus.PENDING.value,
        "status_changed_at": now,
        "expires_at": expires_at,
        "created_at": now,
        "paid_late": False,
        "payment_count": 0,
        "trade_no": opened.trade_no,
        "issuer_order_id": opened.issuer_order_id,
        "issuer_link": opened.link,
        "issuer_details": opened.details_json,
        "pay_currency": opened.priced.pay_currency,
        "pay_amount": opened.priced.pay_amount,
        "rate": opened.priced.rate,
        "rate_at": opened.priced.rate_at,
        "last_polled_at": None,
        "next_poll_at": None,
    }


def validate_path_reference(reference: str) -> str:
    if not 1 <= len(reference) <= REFERENCE_MAX:
        raise BadRequest(
            f"The reference must be 1 to {REFERENCE_MAX} characters.",
            details={"reference": f"must be 1 to {REFERENCE_MAX} characters"},
        )
    try:
        plain_text(reference)
    except ValueError as exc:
        # No stored reference can contain these; PostgreSQL would even refuse a NUL in the query.
        raise BadRequest(f"The reference {exc}.", details={"reference": str(exc)}) from None
    return reference


def is_valid_path_reference(reference: str) -> bool:
    try:
        validate_path_reference(reference)
    except BadRequest:
        return False
    return True


async def payment_status(
    context: AppContext, presented: Credentials, reference: str
) -> PaymentStatusOut:
    """One round trip reads the key and the row; a bad key answers 401 before a bad reference."""
    if not is_valid_path_reference(reference):
        await authenticate(presented, context)
        validate_path_reference(reference)
    _caller, row = await admit_with_row(context, presented, STATUS_BY_KEY, {"reference": reference})
    if row is None:
        raise NotFound("No payment with this reference.")
    stored_status, changed_at, expires_at, amount_cents, payment_count = row
    if payment_count > 1:
        # The payer paid twice for one reference: the merchant must refund one payment and
        # must not treat the reference as settled once.
        raise ReferenceReused(
            context.settings.base_url,
            "This reference was paid more than once and cannot be reused; the duplicate "
            "payment is held for refund. Obtain a new reference from "
            f"{context.settings.base_url}/tx/getNewReference.",
        )
    status, changed_at = status_as_seen(stored_status, changed_at, expires_at, utcnow())
    return PaymentStatusOut(
        status=status, timestamp=changed_at, amount=Decimal(amount_cents) * CENT
    )


async def new_reference(context: AppContext, caller: Caller) -> str:
    """A random reference this merchant has never used (128 bits; the check is belt and braces)."""
    async with context.database.read() as session:
        repository = TransferRepository(session)
        while True:
            candidate = secrets.token_urlsafe(16)
            if not await repository.reference_taken(caller, candidate):
                return candidate
