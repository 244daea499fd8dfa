"""Binance Pay signatures: HMAC-SHA512 on our requests, RSA-SHA256 on Binance's notifications.

Both sign the same layout, ``timestamp + "\\n" + nonce + "\\n" + body + "\\n"`` (trailing LF
included), over the exact bytes sent on the wire. Requests carry the upper-case hex HMAC keyed with
the API secret; notifications carry a base64 RSA PKCS#1 v1.5 signature with SHA-256, verified with
the public key the certificates endpoint serves under the serial named in the headers.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import string

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

TIMESTAMP = "BinancePay-Timestamp"
NONCE = "BinancePay-Nonce"
CERTIFICATE_SN = "BinancePay-Certificate-SN"
SIGNATURE = "BinancePay-Signature"

NONCE_LENGTH = 32
_NONCE_ALPHABET = string.ascii_letters


def make_nonce() -> str:
    """32 random letters, as the documentation's example nonce is."""
    return "".join(secrets.choice(_NONCE_ALPHABET) for _ in range(NONCE_LENGTH))


def signed_payload(timestamp: str, nonce: str, body: bytes) -> bytes:
    return timestamp.encode() + b"\n" + nonce.encode() + b"\n" + body + b"\n"


def sign_request(secret: str, timestamp: str, nonce: str, body: bytes) -> str:
    """HMAC-SHA512 of the payload keyed with the API secret, upper-case hex."""
    mac = hmac.new(secret.encode(), signed_payload(timestamp, nonce, body), hashlib.sha512)
    return mac.hexdigest().upper()


def request_signature_matches(
    secret: str, timestamp: str, nonce: str, body: bytes, signature: str
) -> bool:
    """Exact comparison: Binance refuses a lower-case signature, so we do too."""
    return hmac.compare_digest(sign_request(secret, timestamp, nonce, body), signature)


def request_headers(
    api_key: str, secret: str, body: bytes, *, timestamp_ms: int, nonce: str
) -> dict[str, str]:
    timestamp = str(timestamp_ms)
    return {
        "Content-Type": "application/json",
        TIMESTAMP: timestamp,
        NONCE: nonce,
        CERTIFICATE_SN: api_key,
        SIGNATURE: sign_request(secret, timestamp, nonce, body),
    }


def generate_private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_key_pem(private_key: rsa.RSAPrivateKey) -> str:
    return (
        private_key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def certificate_serial(public_pem: str) -> str:
    """Binance calls the serial "the MD5 hash of the public key"; we hash the DER encoding."""
    der = load_public_key(public_pem).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.md5(der, usedforsecurity=False).hexdigest()


def load_public_key(text: str) -> rsa.RSAPublicKey:
    """An RSA public key from PEM, or from bare base64 DER (``certPublic`` without armour).

    Raises ``ValueError`` for anything else, including a non-RSA key.
    """
    stripped = text.strip()
    if not stripped.startswith("-----BEGIN"):
        body = "\n".join(stripped[i : i + 64] for i in range(0, len(stripped), 64))
        stripped = f"-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----"
    key = serialization.load_pem_public_key(stripped.encode())
    if not isinstance(key, rsa.RSAPublicKey):
        raise ValueError("the certificate is not an RSA public key")
    return key


def sign_notification(
    private_key: rsa.RSAPrivateKey, timestamp: str, nonce: str, body: bytes
) -> str:
    signature = private_key.sign(
        signed_payload(timestamp, nonce, body), padding.PKCS1v15(), hashes.SHA256()
    )
    return base64.b64encode(signature).decode()


def notification_signature_matches(
    public_key: rsa.RSAPublicKey, timestamp: str, nonce: str, body: bytes, signature: str
) -> bool:
    """False for a signature that is not strict base64 or does not verify; never raises."""
    try:
        decoded = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return False
    try:
        public_key.verify(
            decoded, signed_payload(timestamp, nonce, body), padding.PKCS1v15(), hashes.SHA256()
        )
    except InvalidSignature:
        return False
    return True
