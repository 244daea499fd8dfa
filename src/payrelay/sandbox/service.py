"""The built-in sandbox: it stands in for every issuer and the mobile money provider."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy.exc import IntegrityError

from payrelay.auth.dependencies import Caller
from payrelay.auth.keys import Mode
from payrelay.context import AppContext
from payrelay.db.models import Merchant, MomoTransaction, Transfer
from payrelay.db.types import utcnow
from payrelay.errors import Conflict, Forbidden, NotFound
from payrelay.kit.ids import new_id, random_base62
from payrelay.momo.repository import MomoRepository
from payrelay.momo.schemas import MomoStatus
from payrelay.momo.service import check_transaction_id
from payrelay.transfers.lifecycle import Cause, effective_status, transition
from payrelay.transfers.repository import TransferRepository
from payrelay.transfers.schemas import TransferStatus

CONFIRMATION_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


class Outcome(StrEnum):
    PAY = "pay"
    DECLINE = "decline"


TARGET = {Outcome.PAY: TransferStatus.PROCESSED, Outcome.DECLINE: TransferStatus.FAILED}


@dataclass(frozen=True)
class CheckoutView:
    transfer: Transfer
    merchant_name: str
    status: TransferStatus


def require_test_mode(caller: Caller) -> None:
    if caller.mode is not Mode.TEST:
        raise Forbidden("Sandbox operations accept test keys only.")


async def checkout_view(context: AppContext, transfer_id: str) -> CheckoutView:
    async with context.database.read() as session:
        transfer = await TransferRepository(session).by_id(transfer_id)
        if transfer is None or transfer.mode != Mode.TEST.value:
            raise NotFound("No sandbox checkout with this id.")
        merchant = await session.get(Merchant, transfer.merchant_id)
    status, _ = effective_status(transfer, utcnow())
    return CheckoutView(transfer, merchant.name if merchant else "", status)


async def settle_checkout(context: AppContext, transfer_id: str, outcome: Outcome) -> Transfer:
    """The payer pressed Pay or Decline on the checkout page.

    Pressing the same button twice is harmless: the payer is sent on to the same place.
    """
    async with context.database.write() as session:
        transfer = await TransferRepository(session).by_id(transfer_id, for_update=True)
        if transfer is None or transfer.mode != Mode.TEST.value:
            raise NotFound("No sandbox checkout with this id.")
        if transfer.status != TARGET[outcome].value:
            transition(session, transfer, TARGET[outcome], Cause.SANDBOX, utcnow())
    return transfer


async def settle_by_reference(
    context: AppContext, caller: Caller, reference: str, outcome: Outcome
) -> Transfer:
    require_test_mode(caller)
    async with context.database.write() as session:
        transfer = await TransferRepository(session).by_reference(
            caller, reference, for_update=True
        )
        if transfer is None:
            raise NotFound("No payment with this reference.")
        transition(session, transfer, TARGET[outcome], Cause.SANDBOX, utcnow())
    return transfer


async def create_momo(context: AppContext, caller: Caller, transaction_id: str | None) -> str:
    require_test_mode(caller)
    if transaction_id is None:
        transaction_id = random_base62(12)
    else:
        check_transaction_id(transaction_id)
    now = utcnow()
    row = MomoTransaction(
        id=new_id("momo"),
        merchant_id=caller.merchant_id,
        mode=caller.mode.value,
        transaction_id=transaction_id,
        status=MomoStatus.PENDING.value,
        confirmation_id="",
        created_at=now,
        status_changed_at=now,
    )
    try:
        async with context.database.write() as session:
            await MomoRepository(session).add(row)
    except IntegrityError:
        raise Conflict("A mobile money transaction with this transactionId exists.") from None
    return transaction_id


async def settle_momo(
    context: AppContext, caller: Caller, transaction_id: str, target: MomoStatus
) -> MomoTransaction:
    require_test_mode(caller)
    check_transaction_id(transaction_id)
    async with context.database.write() as session:
        row = await MomoRepository(session).get(caller, transaction_id, for_update=True)
        if row is None:
            raise NotFound("No mobile money transaction with this transactionId.")
        if row.status != MomoStatus.PENDING.value:
            raise Conflict(f"The transaction is already {row.status}.")
        row.status = target.value
        row.status_changed_at = utcnow()
        if target is MomoStatus.SUCCESSFUL:
            row.confirmation_id = "".join(secrets.choice(CONFIRMATION_ALPHABET) for _ in range(10))
    return row
