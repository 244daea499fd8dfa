"""Request bodies for tests, valid by default; override any field."""

from __future__ import annotations

import secrets
from typing import Any

MISSING = object()


def new_reference() -> str:
    return "ref-" + secrets.token_hex(8)


def transfer_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "recipient": "0x9f8e7d6c5b4a",
        "amount": 149.90,
        "issuer": "Binance",
        "acquirerMerchantName": "Paystack",
        "reference": new_reference(),
        "merchantID": "sub-merchant-1",
        "description": "Two pairs of socks",
        "terminalType": "WEB",
        "successUrl": "https://shop.example/ok",
        "failedUrl": "https://shop.example/failed",
        # Loopback, so that a dispatcher (if one runs) never looks up a name or leaves the host.
        "webhookUrl": "http://127.0.0.1:9/hooks/payrelay",
    }
    for name, value in overrides.items():
        if value is MISSING:
            body.pop(name, None)
        else:
            body[name] = value
    return body


def raw_json(body: dict[str, Any], **raw_values: str) -> bytes:
    """Serialise ``body`` with some values written verbatim, e.g. ``amount="0.015"``."""
    import json

    placeholder = {name: f"@@{name}@@" for name in raw_values}
    text = json.dumps({**body, **placeholder})
    for name, raw in raw_values.items():
        text = text.replace(f'"@@{name}@@"', raw)
    return text.encode()
