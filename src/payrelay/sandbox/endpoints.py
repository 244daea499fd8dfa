"""Sandbox HTTP surface: the payer's checkout page and test-key controls for outcomes."""

from __future__ import annotations

import html
from decimal import Decimal
from pathlib import Path
from string import Template
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError

from payrelay.auth.dependencies import Authenticated
from payrelay.context import AppContext, get_context
from payrelay.db.types import iso_utc
from payrelay.errors import BadRequest, Shape, error_responses
from payrelay.kit.jsonio import ExactJSONResponse, read_json_object
from payrelay.kit.validation import CENT, raise_field_errors
from payrelay.momo.schemas import MomoStatus, MomoStatusOut, SandboxMomoCreated, SandboxMomoIn
from payrelay.sandbox import service
from payrelay.sandbox.service import Outcome
from payrelay.transfers.schemas import PaymentStatusOut, TransferStatus

router = APIRouter(prefix="/sandbox", tags=["sandbox (test mode)"])
Context = Annotated[AppContext, Depends(get_context)]
# string.Template ($name), not str.format: the page's inline CSS is full of braces.
TEMPLATE = Template((Path(__file__).parent / "templates" / "checkout.html").read_text())
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "Referrer-Policy": "no-referrer",
}
SANDBOX_ERRORS = error_responses(
    (401, Shape.C, "no or invalid API key"),
    (403, Shape.C, "a live key was used"),
    (404, Shape.C, "unknown reference or transaction"),
    (409, Shape.C, "the object is already in a final state"),
)

ACTIONS = """<div>
  <form method="post" action="/sandbox/checkout/{id}/pay"><button id="pay">Pay</button></form>
  <form method="post" action="/sandbox/checkout/{id}/decline">
    <button id="decline">Decline</button></form>
</div>"""


@router.get("/checkout/{transfer_id}", response_class=HTMLResponse, summary="Checkout page")
async def checkout_page(transfer_id: str, context: Context) -> HTMLResponse:
    """The page a test-mode link opens: it shows the payment, with Pay and Decline."""
    view = await service.checkout_view(context, transfer_id)
    transfer = view.transfer
    if view.status is TransferStatus.PENDING:
        actions = ACTIONS.format(id=html.escape(transfer.id))
    else:
        actions = f'<p class="status" id="status">This payment is {view.status.value}.</p>'
    page = TEMPLATE.substitute(
        merchant=html.escape(view.merchant_name),
        amount=f"{Decimal(transfer.amount_cents) * CENT:,.2f}",
        description=html.escape(transfer.description),
        issuer=html.escape(transfer.issuer),
        currency=html.escape(transfer.currency),
        reference=html.escape(transfer.reference),
        actions=actions,
    )
    return HTMLResponse(page, headers=PAGE_HEADERS)


@router.post("/checkout/{transfer_id}/{outcome}", summary="Press Pay or Decline")
async def checkout_settle(transfer_id: str, outcome: Outcome, context: Context) -> RedirectResponse:
    """Settle the payment and send the payer to successUrl or failedUrl."""
    transfer = await service.settle_checkout(context, transfer_id, outcome)
    target = transfer.success_url if outcome is Outcome.PAY else transfer.failed_url
    return RedirectResponse(target, status_code=303)


@router.post(
    "/transfers/{reference:path}/{outcome}",
    response_model=PaymentStatusOut,
    summary="Pay or decline a test transfer",
    responses=SANDBOX_ERRORS,
)
async def settle_transfer(
    reference: str, outcome: Outcome, caller: Authenticated, context: Context
) -> ExactJSONResponse:
    """Settle a test-mode transfer as the payer would; answers its new payment status."""
    transfer = await service.settle_by_reference(context, caller, reference, outcome)
    return ExactJSONResponse(
        {
            "status": transfer.status,
            "timestamp": iso_utc(transfer.status_changed_at),
            "amount": Decimal(transfer.amount_cents) * CENT,
        }
    )


@router.post(
    "/momo",
    status_code=201,
    response_model=SandboxMomoCreated,
    summary="Create a test mobile money transaction",
    responses={**SANDBOX_ERRORS, 400: error_responses((400, Shape.B, "bad transactionId"))[400]},
)
async def create_momo(
    request: Request, caller: Authenticated, context: Context
) -> ExactJSONResponse:
    """Create a Pending transaction; ``transactionId`` is optional and generated when omitted."""
    request_body = SandboxMomoIn()
    if (await request.body()).strip():
        body = await read_json_object(request)
        try:
            request_body = SandboxMomoIn.model_validate(body)
        except ValidationError as exc:
            raise raise_field_errors(exc) from None
    created = await service.create_momo(
        context, caller, request_body.transactionId, request_body.webhookUrl
    )
    return ExactJSONResponse({"transactionId": created}, status_code=201)


@router.post(
    "/momo/{transactionId}/{result}",
    response_model=MomoStatusOut,
    summary="Settle a test mobile money transaction",
    responses=SANDBOX_ERRORS,
)
async def settle_momo(
    transactionId: str,
    result: str,
    caller: Authenticated,
    context: Context,
) -> ExactJSONResponse:
    """``succeed`` makes it Successful with a confirmationID; ``fail`` makes it Unsuccessful."""
    targets = {"succeed": MomoStatus.SUCCESSFUL, "fail": MomoStatus.UNSUCCESSFUL}
    if result not in targets:
        raise BadRequest("The outcome must be 'succeed' or 'fail'.")
    row = await service.settle_momo(context, caller, transactionId, targets[result])
    return ExactJSONResponse({"status": row.status, "confirmationID": row.confirmation_id})
