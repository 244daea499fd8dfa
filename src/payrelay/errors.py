"""The one error hierarchy. Every failure a client can see is a ``PayrelayError``.

The interface document fixes four error body shapes:

- A: ``{"message", "error": reason phrase, "details": str, "statusCode"}``
- B: ``{"error": reason phrase, "message", "statusCode"}``
- C: ``{"error": status int, "message", "details": {field: message}}``
- D: ``{"message"}``

Each error carries its HTTP status and its shape; ``render`` turns it into a body in one place.
"""

from __future__ import annotations

from enum import StrEnum
from http import HTTPStatus
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class Shape(StrEnum):
    A = "A"
    B = "B"
    C = "C"
    D = "D"


class PayrelayError(Exception):
    """Base of every client-visible error; the default is a 500 in shape C."""

    status_code: ClassVar[int] = 500
    default_message: ClassVar[str] = "Internal server error."

    def __init__(
        self,
        message: str | None = None,
        *,
        details: dict[str, str] | str | None = None,
        shape: Shape = Shape.C,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.details = details
        self.shape = shape
        self.headers = headers or {}
        super().__init__(self.message)

    def with_shape(self, shape: Shape) -> PayrelayError:
        self.shape = shape
        return self


class BadRequest(PayrelayError):
    status_code = 400
    default_message = "The request is invalid."


class ValidationFailed(BadRequest):
    """Field-level problems, all reported together, keyed by field name."""

    default_message = "The request failed validation."

    def __init__(self, field_errors: dict[str, str], message: str | None = None) -> None:
        super().__init__(message, details=field_errors)


class Unauthorized(PayrelayError):
    status_code = 401
    default_message = "A valid API key is required: send 'Authorization: Bearer <key>'."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message, headers={"WWW-Authenticate": 'Bearer realm="payrelay"'})


class Forbidden(PayrelayError):
    status_code = 403
    default_message = "This key may not perform this operation."


class NotFound(PayrelayError):
    status_code = 404
    default_message = "Not found."


class MethodNotAllowed(PayrelayError):
    status_code = 405
    default_message = "Method not allowed."


class Conflict(PayrelayError):
    status_code = 409
    default_message = "The request conflicts with the current state."


class ReferenceReused(Conflict):
    """A reference can identify one transfer only; shape D is fixed by the interface document."""

    def __init__(self, base_url: str, message: str | None = None) -> None:
        super().__init__(
            message
            or (
                "This reference has already been used and cannot be reused. "
                f"Obtain a new reference from {base_url}/tx/getNewReference."
            ),
            shape=Shape.D,
        )


class PayloadTooLarge(PayrelayError):
    status_code = 413
    default_message = "The request body is too large."


class RateLimited(PayrelayError):
    status_code = 429
    default_message = "Too many requests; slow down and retry after the given delay."

    def __init__(self, retry_after_seconds: int) -> None:
        super().__init__(headers={"Retry-After": str(retry_after_seconds)})


class InternalError(PayrelayError):
    status_code = 500


class UpstreamError(PayrelayError):
    status_code = 502
    default_message = "The upstream provider failed."


class ServiceUnavailable(PayrelayError):
    status_code = 503
    default_message = "The service is temporarily unavailable."


class UpstreamTimeout(PayrelayError):
    status_code = 504
    default_message = "The upstream provider did not answer in time."


def reason_phrase(status_code: int) -> str:
    try:
        return HTTPStatus(status_code).phrase
    except ValueError:
        return "Error"


def render(error: PayrelayError) -> dict[str, Any]:
    """The body of an error response, in the error's shape."""
    status = error.status_code
    if error.shape is Shape.D:
        return {"message": error.message}
    if error.shape is Shape.B:
        return {"error": reason_phrase(status), "message": error.message, "statusCode": status}
    if error.shape is Shape.A:
        details = error.details if isinstance(error.details, str) else error.message
        return {
            "message": error.message,
            "error": reason_phrase(status),
            "details": details,
            "statusCode": status,
        }
    details_obj = error.details if isinstance(error.details, dict) else {}
    return {"error": status, "message": error.message, "details": details_obj}


class ErrorShapeA(BaseModel):
    """Mobile money provider failure."""

    model_config = ConfigDict(title="ErrorShapeA")
    message: str
    error: str
    details: str
    statusCode: int


class ErrorShapeB(BaseModel):
    """Mobile money request or lookup error."""

    model_config = ConfigDict(title="ErrorShapeB")
    error: str
    message: str
    statusCode: int


class ErrorShapeC(BaseModel):
    """General error; ``details`` maps field names to messages for validation errors."""

    model_config = ConfigDict(title="ErrorShapeC")
    error: int
    message: str
    details: dict[str, str]


class ErrorShapeD(BaseModel):
    """Reference reuse."""

    model_config = ConfigDict(title="ErrorShapeD")
    message: str


SHAPE_MODELS: dict[Shape, type[BaseModel]] = {
    Shape.A: ErrorShapeA,
    Shape.B: ErrorShapeB,
    Shape.C: ErrorShapeC,
    Shape.D: ErrorShapeD,
}


def error_responses(*entries: tuple[int, Shape, str]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` for an endpoint: one entry per (status, shape, when)."""
    responses: dict[int | str, dict[str, Any]] = {}
    for status, shape, when in entries:
        if status in responses:
            responses[status]["description"] += f"; {when}"
            continue
        responses[status] = {
            "model": SHAPE_MODELS[shape],
            "description": f"Shape {shape.value}: {when}",
        }
    return responses
