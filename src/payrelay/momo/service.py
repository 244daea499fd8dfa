"""Mobile money status. Test mode reads the sandbox; live mode needs the acquirer connector."""

from __future__ import annotations

from payrelay.auth.dependencies import Credentials, admit_with_row, authenticate
from payrelay.auth.keys import Mode
from payrelay.context import AppContext
from payrelay.errors import BadRequest, NotFound, ServiceUnavailable, Shape
from payrelay.momo.repository import STATUS_BY_KEY
from payrelay.momo.schemas import (
    TRANSACTION_ID_MESSAGE,
    MomoStatus,
    MomoStatusOut,
    is_valid_transaction_id,
)


def check_transaction_id(transaction_id: str) -> None:
    if not is_valid_transaction_id(transaction_id):
        raise BadRequest(TRANSACTION_ID_MESSAGE, shape=Shape.B)


async def momo_status(
    context: AppContext, presented: Credentials, transaction_id: str
) -> MomoStatusOut:
    """One round trip reads the key and the row; a bad key answers 401 before anything else."""
    if not is_valid_transaction_id(transaction_id):
        await authenticate(presented, context)
        raise BadRequest(TRANSACTION_ID_MESSAGE, shape=Shape.B)
    if presented.mode is Mode.LIVE:
        await authenticate(presented, context)
        raise ServiceUnavailable(
            "The mobile money provider is unavailable.",
            details="The Paystack mobile money connector is not configured for live mode.",
            shape=Shape.A,
        )
    _caller, row = await admit_with_row(
        context, presented, STATUS_BY_KEY, {"transaction_id": transaction_id}
    )
    if row is None:
        raise NotFound("No mobile money transaction with this transactionId.", shape=Shape.B)
    status, confirmation_id = row
    return MomoStatusOut(status=MomoStatus(status), confirmationID=confirmation_id)
