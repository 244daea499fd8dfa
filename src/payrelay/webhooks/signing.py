"""Standard Webhooks signatures, made with the ``standardwebhooks`` package itself."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from standardwebhooks.webhooks import Webhook


def signature_header(secrets: Sequence[str], message_id: str, at: datetime, body: str) -> str:
    """``v1,<sig>`` for each active secret, space-separated, as Standard Webhooks specifies."""
    return " ".join(Webhook(secret).sign(message_id, at, body) for secret in secrets)


def delivery_headers(
    secrets: Sequence[str], message_id: str, at: datetime, body: str
) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "user-agent": "payrelay-webhooks/1",
        "webhook-id": message_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature_header(secrets, message_id, at, body),
    }
