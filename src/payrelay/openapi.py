"""The OpenAPI document, without the framework's default error body.

FastAPI documents a 422 ``HTTPValidationError`` (``{"detail": [...]}``) on every operation with
parameters. payrelay never sends it: request validation errors are answered as 400 in the
operation's own shape. This drops that response and its schemas, so the document lists only
bodies the service really sends.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

FRAMEWORK_SCHEMAS = ("HTTPValidationError", "ValidationError")


def strip_framework_errors(schema: dict[str, Any]) -> dict[str, Any]:
    for path_item in schema.get("paths", {}).values():
        for operation in path_item.values():
            if isinstance(operation, dict):
                operation.get("responses", {}).pop("422", None)
    schemas = schema.get("components", {}).get("schemas", {})
    for name in FRAMEWORK_SCHEMAS:
        schemas.pop(name, None)
    return schema


def install_openapi(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = strip_framework_errors(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
