"""Bybit signatures: V5 HMAC-SHA256 on our requests, RSA-SHA256 on Bybit's notifications.

Requests (Bybit V5, system-generated keys): ``X-BAPI-SIGN`` is the lower-case hex HMAC-SHA256,
keyed with the API secret, of ``timestamp + apiKey + recvWindow + payload``, where the payload is
the raw JSON body of a POST or the unescaped query string of a GET (``a=1&b=2``). The timestamp
is in milliseconds and Bybit accepts it when
``server_time - recv_window <= timestamp < server_time + 1000``.

Notifications: ``signature`` is the base64 RSASSA-PKCS1-v1_5 SHA-256 signature, by Bybit's
platform key (1024-bit), of the ``timestamp`` header value (Unix seconds) followed by the raw
body exactly as sent. The platform key comes from configuration as PEM (SubjectPublicKeyInfo or
PKCS#1) or as bare base64 DER of either.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

API_KEY = "X-BAPI-API-KEY"
TIMESTAMP = "X-BAPI-TIMESTAMP"
RECV_WINDOW = "X-BAPI-RECV-WINDOW"
SIGN = "X-BAPI-SIGN"
VERSION = "Version"
API_VERSION = "5.00"
DEFAULT_RECV_WINDOW_MS = 5000
FUTURE_TOLERANCE_MS = 1000

NOTIFY_TIMESTAMP = "timestamp"
NOTIFY_SIGNATURE = "signature"
NOTIFY_KEY_BITS = 1024  # Bybit's platform keys are 1024-bit; anything weaker is refused
PUBLIC_EXPONENT = 65537


def request_plaintext(timestamp_ms: str, api_key: str, recv_window: str, payload: str) -> str:
    return timestamp_ms + api_key + recv_window + payload


def sign_request(
    secret: str, timestamp_ms: str, api_key: str, recv_window: str, payload: str
) -> str:
    plaintext = request_plaintext(timestamp_ms, api_key, recv_window, payload)
    return hmac.new(secret.encode(), plaintext.encode(), hashlib.sha256).hexdigest()


def request_signature_matches(
    secret: str, timestamp_ms: str, api_key: str, recv_window: str, payload: str, signature: str
) -> bool:
    """Exact comparison of the lower-case hex the documentation asks for."""
    expected = sign_request(secret, timestamp_ms, api_key, recv_window, payload)
    return hmac.compare_digest(expected, signature)


def timestamp_in_window(timestamp_ms: int, recv_window_ms: int, server_time_ms: int) -> bool:
    """Bybit's rule: ``server_time - recv_window <= timestamp < server_time + 1000``."""
    return server_time_ms - recv_window_ms <= timestamp_ms < server_time_ms + FUTURE_TOLERANCE_MS


def request_headers(
    api_key: str,
    secret: str,
    payload: str,
    *,
    timestamp_ms: int,
    recv_window_ms: int = DEFAULT_RECV_WINDOW_MS,
) -> dict[str, str]:
    timestamp, recv_window = str(timestamp_ms), str(recv_window_ms)
    return {
        "Content-Type": "application/json",
        VERSION: API_VERSION,
        API_KEY: api_key,
        TIMESTAMP: timestamp,
        RECV_WINDOW: recv_window,
        SIGN: sign_request(secret, timestamp, api_key, recv_window, payload),
    }


def notification_plaintext(timestamp: str, body: bytes) -> bytes:
    return timestamp.encode() + body


def generate_private_key() -> rsa.RSAPrivateKey:
    """A key pair like Bybit's platform key, for the simulator."""
    return rsa.generate_private_key(public_exponent=PUBLIC_EXPONENT, key_size=NOTIFY_KEY_BITS)


def public_key_pem(public_key: rsa.RSAPublicKey) -> str:
    """SubjectPublicKeyInfo PEM (``-----BEGIN PUBLIC KEY-----``), as OpenSSL writes it."""
    return public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def load_public_key(text: str) -> rsa.RSAPublicKey:
    """An RSA public key from PEM (``PUBLIC KEY`` or ``RSA PUBLIC KEY``) or bare base64 DER.

    Raises ``ValueError`` for anything else, including a non-RSA key and one under 1024 bits.
    """
    try:
        if "-----BEGIN" in text:
            key = serialization.load_pem_public_key(text.encode())
        else:
            der = base64.b64decode("".join(text.split()), validate=True)
            key = serialization.load_der_public_key(der)
    except UnsupportedAlgorithm as exc:
        raise ValueError("the platform key is not a supported public key") from exc
    if not isinstance(key, rsa.RSAPublicKey):
        raise ValueError("the platform key is not an RSA public key")
    exponent = key.public_numbers().e
    if key.key_size < NOTIFY_KEY_BITS or exponent < 3 or exponent % 2 == 0:
        raise ValueError("RSA public key is too weak or malformed")
    return key


def sign_notification(private_key: rsa.RSAPrivateKey, timestamp: str, body: bytes) -> str:
    signature = private_key.sign(
        notification_plaintext(timestamp, body), padding.PKCS1v15(), hashes.SHA256()
    )
    return base64.b64encode(signature).decode()


def notification_signature_matches(
    public_key: rsa.RSAPublicKey, timestamp: str, body: bytes, signature: str
) -> bool:
    """False for anything that is not a valid signature, including malformed base64; never raises.

    Fails closed: any error while decoding or verifying counts as an invalid signature.
    """
    try:
        raw = base64.b64decode(signature, validate=True)
        public_key.verify(
            raw, notification_plaintext(timestamp, body), padding.PKCS1v15(), hashes.SHA256()
        )
    except Exception:
        return False
    return True
