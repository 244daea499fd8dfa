"""The merchant's view of its webhook deliveries, and replay. Scoped to the key's merchant and
mode: another merchant's event answers 404, exactly as an unknown one."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import AwareDatetime, BaseModel, ConfigDict, ValidationError

from payrelay.auth.dependencies import Authenticated
from payrelay.context import AppContext, get_context
from payrelay.errors import Shape, error_responses
from payrelay.kit.jsonio import ExactJSONResponse, read_json_object
from payrelay.kit.validation import raise_field_errors
from payrelay.webhooks import metrics, service
from payrelay.webhooks.dispatcher import queue_depth

router = APIRouter(prefix="/webhooks", tags=["webhooks"])
Context = Annotated[AppContext, Depends(get_context)]
ERRORS = error_responses(
    (400, Shape.C, "invalid parameters"),
    (401, Shape.C, "no or invalid API key"),
    (404, Shape.C, "no such event for this merchant and mode"),
    (429, Shape.C, "rate limited"),
)


class ReplaySince(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)
    since: AwareDatetime  # a time without a zone is ambiguous: 400, never a guess (or a 500)


@router.get("/events", summary="List webhook events", responses=ERRORS)
async def list_events(
    caller: Authenticated,
    context: Context,
    reference: Annotated[str | None, Query(max_length=128)] = None,
    state: Annotated[str | None, Query(pattern="^(pending|succeeded|failed|skipped)$")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
) -> ExactJSONResponse:
    """Newest first; filter by the payment's reference (or momo transactionId) or by state."""
    events = await service.list_events(
        context.database,
        caller.merchant_id,
        caller.mode.value,
        reference=reference,
        state=state,
        limit=limit,
    )
    return ExactJSONResponse({"data": events})


@router.get("/events/{event_id}", summary="Show a webhook event", responses=ERRORS)
async def show_event(event_id: str, caller: Authenticated, context: Context) -> ExactJSONResponse:
    """The event, its payload and every delivery attempt (status, latency, response, error)."""
    return ExactJSONResponse(
        await service.show_event(context.database, event_id, caller.merchant_id, caller.mode.value)
    )


@router.post("/events/{event_id}/replay", summary="Replay a webhook event", responses=ERRORS)
async def replay_event(event_id: str, caller: Authenticated, context: Context) -> ExactJSONResponse:
    """Deliver the event again from the start of the schedule, with the same webhook-id."""
    return ExactJSONResponse(
        await service.replay_event(
            context.database, event_id, caller.merchant_id, caller.mode.value
        )
    )


@router.post("/events/replay", summary="Replay every failed event since a time", responses=ERRORS)
async def replay_failed(
    request: Request, caller: Authenticated, context: Context
) -> ExactJSONResponse:
    """Body ``{"since": "2026-11-22T00:00:00Z"}``: every failed event created since then."""
    body: dict[str, Any] = await read_json_object(request)
    try:
        parsed = ReplaySince.model_validate(body)
    except ValidationError as exc:
        raise raise_field_errors(exc) from None
    replayed = await service.replay_failed_since(
        context.database, caller.merchant_id, caller.mode.value, parsed.since
    )
    return ExactJSONResponse({"replayed": replayed})


metrics_router = APIRouter(tags=["operations"])


@metrics_router.get("/metrics", summary="Prometheus metrics", include_in_schema=True)
async def prometheus_metrics(context: Context) -> Response:
    """Webhook deliveries by outcome, attempt latency, and queue depth. No key: it holds no
    merchant data; expose it only to your monitoring network."""
    async with context.database.read() as session:
        metrics.QUEUE_DEPTH.set(await queue_depth(session))
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
