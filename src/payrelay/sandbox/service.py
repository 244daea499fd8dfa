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
from payrelay.errors import Conflict, Forbidden, NotFound, ServiceUnavailable, UpstreamError
from payrelay.issuers.base import Issuer
from payrelay.kit.ids import new_id, random_base62
from payrelay.kit.locks import KeyedLocks
from payrelay.momo.repository import MomoRepository
from payrelay.momo.schemas import MomoStatus
from payrelay.momo.service import check_transaction_id
from payrelay.transfers.lifecycle import ALLOWED, effective_status
from payrelay.transfers.repository import TransferRepository
from payrelay.transfers.schemas import TransferStatus
from payrelay.webhooks import outbox
from payrelay.workers.reconciler import reconcile_transfer

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


_settling = KeyedLocks()


async def settle_checkout(context: AppContext, transfer_id: str, outcome: Outcome) -> Transfer:
    """The payer pressed Pay or Decline on the checkout page.

    Pressing the same button twice is harmless: the payer is sent on to the same place.
    """
    async with _settling.hold(transfer_id):
        async with context.database.read() as session:
            transfer = await TransferRepository(session).by_id(transfer_id)
        if transfer is None or transfer.mode != Mode.TEST.value:
            raise NotFound("No sandbox checkout with this id.")
        if transfer.status == TARGET[outcome].value:
            return transfer
        return await _play_payer(context, transfer, outcome)


async def settle_by_reference(
    context: AppContext, caller: Caller, reference: str, outcome: Outcome
) -> Transfer:
    require_test_mode(caller)
    async with _settling.hold((caller.merchant_id, reference)):
        async with context.database.read() as session:
            transfer = await TransferRepository(session).by_reference(caller, reference)
        if transfer is None:
            raise NotFound("No payment with this reference.")
        return await _play_payer(context, transfer, outcome)


async def _play_payer(context: AppContext, transfer: Transfer, outcome: Outcome) -> Transfer:
    """Act as the payer at the issuer's simulator. The outcome comes back the real way: a signed
    notification into the inbox, or (VALR, which pushes nothing) a poll of its history."""
    current, _ = effective_status(transfer, utcnow())
    if TARGET[outcome] not in ALLOWED[current]:
        raise Conflict(
            f"The transfer is already {current.value}; it cannot become {TARGET[outcome].value}."
        )
    issuer = Issuer(transfer.issuer)
    handle = context.simulators.get(issuer)
    if handle is None or transfer.trade_no is None:
        raise ServiceUnavailable(f"The {issuer.value} simulator is not running.")
    if issuer is Issuer.VALR and transfer.issuer_link:
        await handle.client.post("/_control/expect", json={"link": transfer.issuer_link})
    response = await handle.client.post(f"/_control/orders/{transfer.trade_no}/{outcome.value}")
    if response.status_code != 200:
        raise UpstreamError(
            f"The {issuer.value} simulator refused: {response.text[:200]}",
            details={"issuer": response.text[:200]},
        )
    connector = context.connectors.get(issuer, Mode.TEST)
    if connector is not None and not connector.pushes_notifications:
        await reconcile_transfer(context, transfer, utcnow())
    async with context.database.read() as session:
        settled = await TransferRepository(session).by_id(transfer.id)
    assert settled is not None
    return settled


async def create_momo(
    context: AppContext, caller: Caller, transaction_id: str | None, webhook_url: str | None = None
) -> str:
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
        webhook_url=webhook_url,
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
        outbox.momo_changed(session, row, row.webhook_url, row.status_changed_at)
    return row
