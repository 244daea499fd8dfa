"""Where issuers push notifications. Verification fails closed; the ack is the issuer's own."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from payrelay.context import AppContext, get_context
from payrelay.errors import NotFound, Shape, error_responses
from payrelay.issuers import inbox
from payrelay.issuers.base import Issuer

router = APIRouter(prefix="/issuers", tags=["issuer notifications"])

SLUGS = {issuer.slug: issuer for issuer in Issuer}


@router.post(
    "/{issuer}/notifications",
    summary="Receive an issuer notification",
    responses=error_responses(
        (401, Shape.C, "the signature does not verify; nothing changes"),
        (404, Shape.C, "unknown issuer, or one that sends no notifications"),
        (413, Shape.C, "body over 64 KiB"),
        (503, Shape.C, "the verification key cannot be fetched now; the issuer retries"),
    ),
)
async def receive_notification(
    issuer: str, request: Request, context: Annotated[AppContext, Depends(get_context)]
) -> Response:
    """Verify, record once in the inbox, apply, and answer with the issuer's acknowledgement.

    Duplicates and out-of-order deliveries are harmless: each event is recorded once and a final
    state never moves backwards."""
    known = SLUGS.get(issuer)
    if known is None:
        raise NotFound("No such issuer.")
    body = await request.body()
    ack = await inbox.receive(context, known, request.headers, body)
    return Response(ack.body, status_code=ack.status_code, media_type=ack.media_type)
