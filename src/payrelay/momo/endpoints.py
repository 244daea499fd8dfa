"""HTTP surface of mobile money status."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from payrelay.auth.dependencies import Credentialed
from payrelay.context import AppContext, get_context
from payrelay.errors import Shape, error_responses
from payrelay.kit.jsonio import ExactJSONResponse
from payrelay.momo import service
from payrelay.momo.schemas import MomoStatusOut

router = APIRouter(tags=["mobile money"])
PREFIX = "/momo/"


@router.get(
    "/momo/{transactionId:path}",
    response_model=MomoStatusOut,
    summary="Get mobile money status",
    responses=error_responses(
        (400, Shape.B, "transactionId is not 5 to 15 ASCII letters and digits"),
        (401, Shape.C, "no, unknown, revoked or expired API key"),
        (404, Shape.B, "no such transaction for this merchant and mode"),
        (429, Shape.C, "rate limited; see Retry-After"),
        (502, Shape.A, "the mobile money provider failed"),
        (503, Shape.A, "the mobile money provider is unavailable or not configured"),
    ),
)
async def get_momo_status(
    transactionId: str,
    request: Request,
    presented: Credentialed,
    context: Annotated[AppContext, Depends(get_context)],
) -> ExactJSONResponse:
    """Status (Pending, Successful or Unsuccessful) and confirmationID of a transaction."""
    # The route pattern ends in "$", which also matches before a trailing newline, so
    # "/momo/abcde%0A" arrives as "abcde". Validate the identifier exactly as it was sent.
    path: str = request.scope["path"]
    sent = path[path.index(PREFIX) + len(PREFIX) :]
    result = await service.momo_status(context, presented, sent)
    return ExactJSONResponse(
        {"status": result.status.value, "confirmationID": result.confirmationID}
    )
