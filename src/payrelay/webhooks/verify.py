"""For merchants who use Python: verify a payrelay webhook in one call.

    from payrelay.webhooks.verify import verify_webhook
    event = verify_webhook("whsec_...", request.headers, raw_body)

It checks the signature (any of several, during a secret rotation) and that the timestamp is
within five minutes, and returns the parsed event. It raises ``WebhookVerificationError``
otherwise. Use the raw request body exactly as received.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

__all__ = ["WebhookVerificationError", "verify_webhook"]


def verify_webhook(secret: str, headers: Mapping[str, str], body: bytes | str) -> dict[str, Any]:
    lowered = {name.lower(): value for name, value in headers.items()}
    event: dict[str, Any] = Webhook(secret).verify(body, lowered)
    return event
