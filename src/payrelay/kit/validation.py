"""Reusable field rules and the translation of pydantic errors into field -> message."""

from __future__ import annotations

import unicodedata
from decimal import Decimal
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BeforeValidator,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
)

from payrelay.errors import ValidationFailed

CENT = Decimal("0.01")
DEFAULT_MAX_AMOUNT = Decimal("1000000.00")


def plain_text(value: str) -> str:
    """``value`` unchanged, or ValueError if a database cannot store it faithfully."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    if any(unicodedata.category(char) == "Cc" for char in value):
        raise ValueError("must not contain control characters")
    return value


# Rejects text no database can store faithfully. Use after a StringConstraints, e.g.
# Annotated[str, StringConstraints(strict=True, max_length=100), STORABLE].
STORABLE = AfterValidator(plain_text)


def _http_url(value: str) -> str:
    if any(char.isspace() for char in value):
        raise ValueError("must be an absolute http(s) URL without whitespace")
    try:
        parts = urlsplit(value)
        _ = parts.port
    except ValueError:
        raise ValueError("must be an absolute http(s) URL") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http(s) URL with a host")
    return value


HttpUrlText = Annotated[
    str,
    StringConstraints(strict=True, min_length=1, max_length=256),
    STORABLE,
    AfterValidator(_http_url),
]


def _exact_number(value: object) -> Decimal:
    # bool is an int subclass; a JSON true must not pass as 1.
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise ValueError("must be a JSON number")
    number = Decimal(value)
    if not number.is_finite():
        raise ValueError("must be a finite number")
    return number


def _cents(value: Decimal, info: ValidationInfo) -> Decimal:
    context = info.context or {}
    maximum: Decimal = context.get("max_amount", DEFAULT_MAX_AMOUNT)
    if value < CENT:
        raise ValueError("must be at least 0.01")
    # Checked before the modulo, so an absurd exponent can never reach decimal arithmetic.
    if value > maximum:
        raise ValueError(f"must be at most {maximum:.2f}")
    if value % CENT != 0:
        raise ValueError("must be a multiple of 0.01")
    return value.quantize(CENT)


MoneyAmount = Annotated[
    Decimal,
    BeforeValidator(_exact_number),
    AfterValidator(_cents),
    WithJsonSchema({"type": "number", "minimum": 0.01, "multipleOf": 0.01}),
]


def field_errors(error: ValidationError) -> dict[str, str]:
    """Map pydantic's errors to ``{field: message}``, one entry per field, in input order."""
    messages: dict[str, list[str]] = {}
    for item in error.errors(include_url=False):
        location = item["loc"]
        field = ".".join(str(part) for part in location) if location else "body"
        if item["type"] == "extra_forbidden":
            text = "unknown field"
        elif item["type"] == "missing":
            text = "field required"
        else:
            text = str(item["msg"]).removeprefix("Value error, ")
            text = text[0].lower() + text[1:] if text else text
        messages.setdefault(field, []).append(text)
    return {field: "; ".join(texts) for field, texts in messages.items()}


def raise_field_errors(error: ValidationError) -> ValidationFailed:
    return ValidationFailed(field_errors(error))
