"""JSON in and out without ever passing money through a binary float."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from fastapi import Request
from starlette.responses import JSONResponse

from payrelay.errors import BadRequest


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_exact(raw: bytes) -> Any:
    """Parse JSON with every non-integer number as a Decimal; NaN and Infinity are refused."""
    return json.loads(raw, parse_float=Decimal, parse_constant=_reject_constant)


def _encode(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                out.append(",")
            out.append(json.dumps(str(key), ensure_ascii=False))
            out.append(":")
            _encode(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError("non-finite Decimal cannot be encoded")
        out.append(format(value, "f"))
    else:
        out.append(json.dumps(value, ensure_ascii=False))


def dumps_exact(value: Any) -> bytes:
    """Encode JSON, writing Decimals as exact JSON numbers (``Decimal("10.50")`` -> ``10.50``)."""
    out: list[str] = []
    _encode(value, out)
    return "".join(out).encode()


class ExactJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return dumps_exact(content)


def is_json_content_type(value: str | None) -> bool:
    if not value:
        return False
    media_type = value.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )


async def read_json_object(request: Request) -> dict[str, Any]:
    """The request body as a JSON object, or a 400 saying exactly what is wrong with it."""
    if not is_json_content_type(request.headers.get("content-type")):
        raise BadRequest("Content-Type must be application/json.")
    raw = await request.body()
    try:
        parsed = loads_exact(raw)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"The body is not valid JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise BadRequest("The body must be a JSON object.")
    return parsed
