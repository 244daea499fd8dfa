"""Mobile money status. Test mode reads the sandbox; live mode needs the acquirer connector."""

from __future__ import annotations

from payrelay.auth.dependencies import Caller
from payrelay.auth.keys import Mode
from payrelay.context import AppContext
from payrelay.errors import BadRequest, NotFound, ServiceUnavailable, Shape
from payrelay.momo.repository import MomoRepository
from payrelay.momo.schemas import (
    TRANSACTION_ID_MESSAGE,
    MomoStatus,
    MomoStatusOut,
    is_valid_transaction_id,
)


def check_transaction_id(transaction_id: str) -> None:
    if not is_valid_transaction_id(transaction_id):
        raise BadRequest(TRANSACTION_ID_MESSAGE, shape=Shape.B)


async def momo_status(context: AppContext, caller: Caller, transaction_id: str) -> MomoStatusOut:
    check_transaction_id(transaction_id)
    if caller.mode is Mode.LIVE:
        raise ServiceUnavailable(
            "The mobile money provider is unavailable.",
            details="The Paystack mobile money connector is not configured for live mode.",
            shape=Shape.A,
        )
    async with context.database.read() as session:
        row = await MomoRepository(session).get(caller, transaction_id)
    if row is None:
        raise NotFound("No mobile money transaction with this transactionId.", shape=Shape.B)
    return MomoStatusOut(status=MomoStatus(row.status), confirmationID=row.confirmation_id)
