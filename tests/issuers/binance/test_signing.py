"""Binance Pay signatures: the published request vector, and tamper cases for both directions."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from payrelay.issuers.binance import signing

# developers.binance.com/docs/binance-pay/faq, error 400002 "Solution A". The page now shows
# "USDT" in the body, which does not reproduce the published signature; "BUSD" does.
FAQ_TIMESTAMP = "1611232922428"
FAQ_NONCE = "5RhaTrZPhknNv0kDSA2UQ67cPMVNS4sA"
FAQ_SECRET = "uahr4nhailyq55yubuhuncnprfac73bcbz2qfafsevic1jruwunioxtoaozy122f"
FAQ_BODY = (
    b'{"merchantId":"98765987","subMerchantId":"98765987","merchantTradeNo":"9825382937292",'
    b'"totalFee":25.17,"productDetail":"Greentea ice cream cone","currency":"BUSD",'
    b'"returnUrl":"","tradeType":"APP","productType":"Food","productName":"Ice Cream"}'
)
FAQ_SIGNATURE = (
    "253B9241C7331C0F02A0F5417BDDD4CD88124D3E188C0BA0E3EF121D36844B7F"
    "4D1A69AD8A1C3C7FF34901115E35A2530B672CF7430902E9862D69867689FD9F"
)


@pytest.fixture(scope="module")
def private_key() -> rsa.RSAPrivateKey:
    return signing.generate_private_key()


class TestRequestSigning:
    def test_published_faq_vector(self) -> None:
        assert signing.sign_request(FAQ_SECRET, FAQ_TIMESTAMP, FAQ_NONCE, FAQ_BODY) == FAQ_SIGNATURE

    def test_payload_layout_has_the_trailing_newline(self) -> None:
        payload = signing.signed_payload(FAQ_TIMESTAMP, FAQ_NONCE, FAQ_BODY)
        assert payload == f"{FAQ_TIMESTAMP}\n{FAQ_NONCE}\n".encode() + FAQ_BODY + b"\n"

    def test_headers_carry_the_key_and_the_vector(self) -> None:
        headers = signing.request_headers(
            "api-key", FAQ_SECRET, FAQ_BODY, timestamp_ms=int(FAQ_TIMESTAMP), nonce=FAQ_NONCE
        )
        assert headers == {
            "Content-Type": "application/json",
            "BinancePay-Timestamp": FAQ_TIMESTAMP,
            "BinancePay-Nonce": FAQ_NONCE,
            "BinancePay-Certificate-SN": "api-key",
            "BinancePay-Signature": FAQ_SIGNATURE,
        }

    def test_the_genuine_signature_matches(self) -> None:
        assert signing.request_signature_matches(
            FAQ_SECRET, FAQ_TIMESTAMP, FAQ_NONCE, FAQ_BODY, FAQ_SIGNATURE
        )

    @pytest.mark.parametrize(
        ("secret", "timestamp", "nonce", "body", "signature"),
        [
            ("x" + FAQ_SECRET[1:], FAQ_TIMESTAMP, FAQ_NONCE, FAQ_BODY, FAQ_SIGNATURE),
            (FAQ_SECRET, "1611232922429", FAQ_NONCE, FAQ_BODY, FAQ_SIGNATURE),
            (FAQ_SECRET, FAQ_TIMESTAMP, "6" + FAQ_NONCE[1:], FAQ_BODY, FAQ_SIGNATURE),
            (
                FAQ_SECRET,
                FAQ_TIMESTAMP,
                FAQ_NONCE,
                FAQ_BODY.replace(b"BUSD", b"USDT"),
                FAQ_SIGNATURE,
            ),
            (FAQ_SECRET, FAQ_TIMESTAMP, FAQ_NONCE, FAQ_BODY + b" ", FAQ_SIGNATURE),
            (FAQ_SECRET, FAQ_TIMESTAMP, FAQ_NONCE, FAQ_BODY, FAQ_SIGNATURE.lower()),
            (FAQ_SECRET, FAQ_TIMESTAMP, FAQ_NONCE, FAQ_BODY, ""),
        ],
        ids=["secret", "timestamp", "nonce", "currency", "whitespace", "lower-case", "empty"],
    )
    def test_tampering_breaks_the_match(
        self, secret: str, timestamp: str, nonce: str, body: bytes, signature: str
    ) -> None:
        assert not signing.request_signature_matches(secret, timestamp, nonce, body, signature)

    def test_nonces_are_32_random_letters(self) -> None:
        nonces = {signing.make_nonce() for _ in range(200)}
        assert len(nonces) == 200
        assert all(re.fullmatch(r"[A-Za-z]{32}", nonce) for nonce in nonces)


class TestNotificationSigning:
    def test_round_trip(self, private_key: rsa.RSAPrivateKey) -> None:
        signature = signing.sign_notification(private_key, "1700000000000", FAQ_NONCE, b"{}")
        public_key = signing.load_public_key(signing.public_key_pem(private_key))
        assert signing.notification_signature_matches(
            public_key, "1700000000000", FAQ_NONCE, b"{}", signature
        )

    @pytest.mark.parametrize(
        ("timestamp", "nonce", "body"),
        [
            ("1700000000001", FAQ_NONCE, b'{"bizStatus":"PAY_SUCCESS"}'),
            ("1700000000000", FAQ_NONCE[::-1], b'{"bizStatus":"PAY_SUCCESS"}'),
            ("1700000000000", FAQ_NONCE, b'{"bizStatus":"PAY_CLOSED"}'),
        ],
        ids=["timestamp", "nonce", "body"],
    )
    def test_tampering_fails(
        self, private_key: rsa.RSAPrivateKey, timestamp: str, nonce: str, body: bytes
    ) -> None:
        genuine = b'{"bizStatus":"PAY_SUCCESS"}'
        signature = signing.sign_notification(private_key, "1700000000000", FAQ_NONCE, genuine)
        public_key = private_key.public_key()
        assert not signing.notification_signature_matches(
            public_key, timestamp, nonce, body, signature
        )

    def test_another_key_fails(self, private_key: rsa.RSAPrivateKey) -> None:
        signature = signing.sign_notification(private_key, "1", FAQ_NONCE, b"{}")
        other = signing.generate_private_key().public_key()
        assert not signing.notification_signature_matches(other, "1", FAQ_NONCE, b"{}", signature)

    @pytest.mark.parametrize("signature", ["", "not base64!", "QUJD", "QUJD=="])
    def test_garbage_signatures_fail_without_raising(
        self, private_key: rsa.RSAPrivateKey, signature: str
    ) -> None:
        public_key = private_key.public_key()
        assert not signing.notification_signature_matches(
            public_key, "1", FAQ_NONCE, b"{}", signature
        )

    def test_bare_base64_certificates_load(self, private_key: rsa.RSAPrivateKey) -> None:
        pem = signing.public_key_pem(private_key)
        bare = "".join(line for line in pem.splitlines() if not line.startswith("-----"))
        assert signing.load_public_key(bare).public_numbers() == (
            private_key.public_key().public_numbers()
        )

    def test_non_rsa_keys_are_refused(self) -> None:
        pem = (
            ed25519.Ed25519PrivateKey.generate()
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )
        with pytest.raises(ValueError, match="not an RSA public key"):
            signing.load_public_key(pem)

    def test_serial_is_the_md5_of_the_der_key(self, private_key: rsa.RSAPrivateKey) -> None:
        pem = signing.public_key_pem(private_key)
        der = base64.b64decode("".join(pem.strip().splitlines()[1:-1]))
        assert signing.certificate_serial(pem) == hashlib.md5(der).hexdigest()
