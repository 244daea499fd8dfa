"""The one place where errors become responses."""

from __future__ import annotations

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from payrelay.errors import (
    BadRequest,
    MethodNotAllowed,
    NotFound,
    PayrelayError,
    Shape,
    ValidationFailed,
    render,
)
from payrelay.momo.schemas import TRANSACTION_ID_MESSAGE

log = structlog.get_logger("payrelay.errors")


def _shape_for_path(path: str) -> Shape:
    # Mobile money's request errors use shape B; every other operation uses shape C.
    return Shape.B if path == "/momo" or path.startswith("/momo/") else Shape.C


def error_response(error: PayrelayError) -> JSONResponse:
    return JSONResponse(render(error), status_code=error.status_code, headers=error.headers)


async def handle_payrelay_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, PayrelayError)
    if exc.status_code >= 500:
        log.warning("request.failed", status=exc.status_code, message=exc.message)
    return error_response(exc)


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    shape = _shape_for_path(request.url.path)
    error: PayrelayError
    if exc.status_code == 404 and request.url.path.startswith("/momo/"):
        # Only an identifier with a line break in it fails to match "/momo/{transactionId}".
        error = BadRequest(TRANSACTION_ID_MESSAGE, shape=Shape.B)
    elif exc.status_code == 404:
        error = NotFound("No such endpoint.", shape=shape)
    elif exc.status_code == 405:
        error = MethodNotAllowed(f"{request.method} is not allowed here.", shape=shape)
        error.headers = dict(exc.headers or {})
    else:
        error = BadRequest(str(exc.detail), shape=shape)
    return error_response(error)


async def handle_request_validation(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    details = {
        ".".join(str(part) for part in item["loc"][1:]) or "request": str(item["msg"])
        for item in exc.errors()
    }
    error = ValidationFailed(details)
    error.shape = _shape_for_path(request.url.path)
    return error_response(error)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(PayrelayError, handle_payrelay_error)
    app.add_exception_handler(StarletteHTTPException, handle_http_exception)
    app.add_exception_handler(RequestValidationError, handle_request_validation)
