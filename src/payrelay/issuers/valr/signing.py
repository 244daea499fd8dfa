"""VALR request signing: HMAC-SHA512, lower-case hex, over the request as sent.

The signed string is ``timestamp + VERB + path (with its query string) + body + subaccountId``,
with an empty string for an absent body or sub-account (``authentication.md``). The timestamp is
Unix milliseconds and is the same value sent in ``X-VALR-TIMESTAMP``. VALR pushes nothing, so
there is no notification signature to verify.
"""

from __future__ import annotations

import hashlib
import hmac

from payrelay.issuers.valr.wire import API_KEY, SIGNATURE, SUB_ACCOUNT_ID, TIMESTAMP


def signed_payload(
    timestamp: str, verb: str, path: str, body: str = "", subaccount_id: str = ""
) -> bytes:
    return f"{timestamp}{verb.upper()}{path}{body}{subaccount_id}".encode()


def sign_request(
    secret: str, timestamp: str, verb: str, path: str, body: str = "", subaccount_id: str = ""
) -> str:
    """HMAC-SHA512 keyed with the API secret, 128 lower-case hex characters."""
    payload = signed_payload(timestamp, verb, path, body, subaccount_id)
    return hmac.new(secret.encode(), payload, hashlib.sha512).hexdigest()


def signature_matches(
    secret: str,
    timestamp: str,
    verb: str,
    path: str,
    body: str,
    subaccount_id: str,
    signature: str,
) -> bool:
    """Exact, constant-time comparison against the lower-case hex VALR documents."""
    expected = sign_request(secret, timestamp, verb, path, body, subaccount_id)
    return hmac.compare_digest(expected, signature)


def request_headers(
    api_key: str,
    secret: str,
    verb: str,
    path: str,
    body: str = "",
    *,
    timestamp_ms: int,
    subaccount_id: str = "",
) -> dict[str, str]:
    """Every header a signed call carries; VALR answers 403 without the JSON content type."""
    timestamp = str(timestamp_ms)
    headers = {
        "Content-Type": "application/json",
        API_KEY: api_key,
        TIMESTAMP: timestamp,
        SIGNATURE: sign_request(secret, timestamp, verb, path, body, subaccount_id),
    }
    if subaccount_id:
        headers[SUB_ACCOUNT_ID] = subaccount_id
    return headers
