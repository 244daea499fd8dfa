"""HTTP surface of transfer requests. Thin: parse, call one service function, render."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from starlette.convertors import Convertor, register_url_convertor

from payrelay.auth.dependencies import Authenticated, Credentialed
from payrelay.context import AppContext, get_context
from payrelay.db.types import iso_utc
from payrelay.errors import BadRequest, Shape, error_responses
from payrelay.kit.jsonio import ExactJSONResponse, read_json_object
from payrelay.transfers import service
from payrelay.transfers.schemas import (
    NewReference,
    PaymentStatusOut,
    TransferCreated,
    TransferRequestIn,
)


class AnyTextConvertor(Convertor[str]):
    """Like Starlette's ``path``, but across line breaks too. ``path`` is ``.*``, which stops at
    a newline, and the route's ``$`` matches before a trailing one, so "/abc%0A" would arrive as
    "abc" and name another reference. This takes the segment exactly as sent."""

    regex = "(?s:.*)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("text", AnyTextConvertor())

router = APIRouter(prefix="/tx", tags=["transfers"])
Context = Annotated[AppContext, Depends(get_context)]

AUTH_ERRORS = (
    (401, Shape.C, "no, unknown, revoked or expired API key"),
    (429, Shape.C, "rate limited; see Retry-After"),
    (500, Shape.C, "server fault"),
)


@router.post(
    "/createTransferRequest",
    response_model=TransferCreated,
    summary="Create a transfer request",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": TransferRequestIn.model_json_schema()}},
        }
    },
    responses=error_responses(
        (400, Shape.C, "malformed JSON, wrong Content-Type, or invalid fields (all named)"),
        *AUTH_ERRORS,
        (409, Shape.D, "the reference was already used with a different body"),
        (413, Shape.C, "body over 64 KiB"),
        (502, Shape.C, "the issuer refused the order"),
        (503, Shape.C, "the issuer connector is not configured (live mode)"),
        (504, Shape.C, "the issuer did not answer in time"),
    ),
)
async def create_transfer_request(
    request: Request, caller: Authenticated, context: Context
) -> ExactJSONResponse:
    """Open a transfer request and answer with the link that carries the payer through payment.

    Retrying with the same reference and an identical body is safe: it answers the same link and
    opens nothing new."""
    body: dict[str, Any] = await read_json_object(request)
    transfer_request = service.parse_transfer_request(context, body)
    created = await service.create_transfer(context, caller, transfer_request)
    return ExactJSONResponse(
        {"link": created.link},
        headers={"Idempotent-Replayed": "true"} if created.replayed else None,
    )


@router.get(
    "/payment-status/{reference:text}",
    response_model=PaymentStatusOut,
    summary="Get payment status",
    responses=error_responses(
        (400, Shape.C, "invalid reference"),
        *AUTH_ERRORS,
        (404, Shape.C, "no payment with this reference for this merchant and mode"),
        (409, Shape.D, "the reference was paid more than once"),
    ),
)
async def get_payment_status(
    reference: str, presented: Credentialed, context: Context
) -> ExactJSONResponse:
    """Status (pending, processed, failed or expired), time of the last change, and ZAR amount."""
    result = await service.payment_status(context, presented, reference)
    return ExactJSONResponse(
        {
            "status": result.status.value,
            "timestamp": iso_utc(result.timestamp),
            "amount": result.amount,
        }
    )


@router.get(
    "/getNewReference",
    response_model=NewReference,
    summary="Get a new, unused reference",
    responses=error_responses(
        (400, Shape.C, "unexpected input"),
        *AUTH_ERRORS,
        (413, Shape.C, "body over 64 KiB"),
    ),
)
async def get_new_reference(
    request: Request, caller: Authenticated, context: Context
) -> ExactJSONResponse:
    """A random URL-safe reference that this merchant has never used."""
    if request.query_params:
        raise BadRequest(
            "This operation takes no parameters.",
            details={name: "unknown parameter" for name in request.query_params},
        )
    return ExactJSONResponse({"reference": await service.new_reference(context, caller)})
