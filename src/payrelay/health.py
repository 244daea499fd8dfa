"""Liveness and readiness probes; neither needs a key."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from payrelay.context import AppContext, get_context
from payrelay.errors import ServiceUnavailable, Shape, error_responses

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
async def healthz() -> JSONResponse:
    return JSONResponse({"status": "ok"})


@router.get(
    "/readyz",
    summary="The store answers",
    responses=error_responses((503, Shape.C, "the database does not answer")),
)
async def readyz(context: Annotated[AppContext, Depends(get_context)]) -> JSONResponse:
    try:
        await context.database.ping()
    except Exception as exc:
        raise ServiceUnavailable("The database does not answer.") from exc
    return JSONResponse({"status": "ready"})
