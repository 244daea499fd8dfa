"""Bybit signing: V5 request HMAC and notification RSA-SHA256.

Bybit publishes the V5 string-to-sign but no secret with a resulting signature (the newer docs
site prints a signature for its example without the secret behind it), so the HMAC values below
were computed independently, with Python's ``hmac`` and with ``openssl dgst -sha256 -hmac``, and
are pinned. The RSA vector was made with OpenSSL over the documented notification sample and is
pinned too, so verification is checked against a signature payrelay did not produce.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from payrelay.issuers.bybit import signing

# Bybit V5 guide, "An example for how to generate plain text to encrypt".
GET_TIMESTAMP, POST_TIMESTAMP = "1658384314791", "1658385579423"
DOC_API_KEY, DOC_RECV_WINDOW = "XXXXXXXXXX", "5000"
GET_QUERY = "category=option&symbol=BTC-29JUL22-25000-C"
POST_BODY = '{"category": "option"}'
GET_PLAINTEXT = "1658384314791XXXXXXXXXX5000category=option&symbol=BTC-29JUL22-25000-C"
POST_PLAINTEXT = '1658385579423XXXXXXXXXX5000{"category": "option"}'
SECRET = "bybit-test-secret"
GET_SIGNATURE = "603cf75a23e0bd0a5226adb8f4f42accf1a7b89145fc1c05d3ec5f6855b26c67"
POST_SIGNATURE = "0b6c1a0303aa265223e936cc8820dba57780ea6063a9e08473dcb575c5ca3a7c"

# A 1024-bit key and signature made by OpenSSL over ``timestamp + body`` (payment-notify sample).
OPENSSL_SPKI = """-----BEGIN PUBLIC KEY-----
MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQDB/SpGL50mS4Br6f2Eq8jygwrG
ggBe2QRD3RkrnQQz3l3Juax5YQJrZjNu9EUxy0EY7yD5AHvW/aFZt9OnUiTjVeX8
ZI0LfQnMDvR+qIOFyOrUWnFtPI02Idi1rPhIYTuNZu9HK/1PReVdr5IP9VH9nCQX
tsTOm+SeXl9uV14zNwIDAQAB
-----END PUBLIC KEY-----
"""
OPENSSL_PKCS1 = """-----BEGIN RSA PUBLIC KEY-----
MIGJAoGBAMH9KkYvnSZLgGvp/YSryPKDCsaCAF7ZBEPdGSudBDPeXcm5rHlhAmtm
M270RTHLQRjvIPkAe9b9oVm306dSJONV5fxkjQt9CcwO9H6og4XI6tRacW08jTYh
2LWs+EhhO41m70cr/U9F5V2vkg/1Uf2cJBe2xM6b5J5eX25XXjM3AgMBAAE=
-----END RSA PUBLIC KEY-----
"""
# A 512-bit key made by OpenSSL (``openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:512``).
OPENSSL_WEAK_SPKI = """-----BEGIN PUBLIC KEY-----
MFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBALWiui3UoDiru/AZsJHm/8l6zix30NjB
1RAlw7d0ENVU+RjhRv1EzTTSj8ZeqLhalj22BDtnfcadRs3QqbcMoLECAwEAAQ==
-----END PUBLIC KEY-----
"""
NOTIFY_TIMESTAMP = "1736233260"
NOTIFY_BODY = (
    b'{"paymentType":"E_COMMERCE","merchantId":"305142568","clientId":"client_001",'
    b'"merchantTradeNo":"af8c2d1-5b3e-4a9f-b6c7-8d2e1f3a4b5c",'
    b'"payId":"01JY2KM5QNPXR8S4HTJZT9BC12","status":"PAY_SUCCESS","amount":"100",'
    b'"currency":"USDT","currencyType":"crypto","createTime":1736233200,'
    b'"paymentTime":1736233260,"finishTime":1736233260}'
)
NOTIFY_SIGNATURE = (
    "o80T8cNRvxiH5oCLw/ITOSemZZp9snusu5AKws14C80BVNo38XMw9Mvt4eiqtR+L9lUxD3yFjp/+bjZn/pBbxrXq"
    "TgpoAdjPASr4jRPOT7QXNfKXZrKbYvx/tryoq2vU8ixv0g/i6MwCzRBHTr0RXnNe/22yrM1BUywT3/MK5+Q="
)


class TestRequestSignature:
    def test_get_plaintext_is_the_documented_one(self) -> None:
        plaintext = signing.request_plaintext(
            GET_TIMESTAMP, DOC_API_KEY, DOC_RECV_WINDOW, GET_QUERY
        )
        assert plaintext == GET_PLAINTEXT

    def test_post_plaintext_is_the_documented_one(self) -> None:
        plaintext = signing.request_plaintext(
            POST_TIMESTAMP, DOC_API_KEY, DOC_RECV_WINDOW, POST_BODY
        )
        assert plaintext == POST_PLAINTEXT

    @pytest.mark.parametrize(
        ("timestamp", "payload", "expected"),
        [(GET_TIMESTAMP, GET_QUERY, GET_SIGNATURE), (POST_TIMESTAMP, POST_BODY, POST_SIGNATURE)],
    )
    def test_signature_is_pinned_lowercase_hex(
        self, timestamp: str, payload: str, expected: str
    ) -> None:
        signature = signing.sign_request(SECRET, timestamp, DOC_API_KEY, DOC_RECV_WINDOW, payload)
        assert signature == expected
        plaintext = (timestamp + DOC_API_KEY + DOC_RECV_WINDOW + payload).encode()
        assert signature == hmac.new(SECRET.encode(), plaintext, hashlib.sha256).hexdigest()

    def test_headers_carry_the_v5_fields(self) -> None:
        headers = signing.request_headers(
            DOC_API_KEY, SECRET, GET_QUERY, timestamp_ms=int(GET_TIMESTAMP)
        )
        assert headers == {
            "Content-Type": "application/json",
            "Version": "5.00",
            "X-BAPI-API-KEY": DOC_API_KEY,
            "X-BAPI-TIMESTAMP": GET_TIMESTAMP,
            "X-BAPI-RECV-WINDOW": "5000",
            "X-BAPI-SIGN": GET_SIGNATURE,
        }

    @pytest.mark.parametrize(
        ("timestamp", "api_key", "recv_window", "payload"),
        [
            ("1658384314792", DOC_API_KEY, DOC_RECV_WINDOW, GET_QUERY),
            (GET_TIMESTAMP, "XXXXXXXXXY", DOC_RECV_WINDOW, GET_QUERY),
            (GET_TIMESTAMP, DOC_API_KEY, "5001", GET_QUERY),
            (GET_TIMESTAMP, DOC_API_KEY, DOC_RECV_WINDOW, GET_QUERY + "&x=1"),
            (
                GET_TIMESTAMP,
                DOC_API_KEY,
                DOC_RECV_WINDOW,
                "category%3Doption&symbol=BTC-29JUL22-25000-C",
            ),
        ],
    )
    def test_any_change_breaks_the_signature(
        self, timestamp: str, api_key: str, recv_window: str, payload: str
    ) -> None:
        assert not signing.request_signature_matches(
            SECRET, timestamp, api_key, recv_window, payload, GET_SIGNATURE
        )

    def test_wrong_secret_and_case_do_not_match(self) -> None:
        args = (GET_TIMESTAMP, DOC_API_KEY, DOC_RECV_WINDOW, GET_QUERY)
        assert signing.request_signature_matches(SECRET, *args, GET_SIGNATURE)
        assert not signing.request_signature_matches("other-secret", *args, GET_SIGNATURE)
        assert not signing.request_signature_matches(SECRET, *args, GET_SIGNATURE.upper())

    @pytest.mark.parametrize(
        ("timestamp", "accepted"),
        [(95_000, True), (94_999, False), (100_999, True), (101_000, False), (100_000, True)],
    )
    def test_timestamp_window(self, timestamp: int, accepted: bool) -> None:
        # server_time - recv_window <= timestamp < server_time + 1000
        assert signing.timestamp_in_window(timestamp, 5000, 100_000) is accepted


class TestNotificationSignature:
    @pytest.mark.parametrize(
        "pem",
        [
            OPENSSL_SPKI,
            OPENSSL_PKCS1,
            "".join(OPENSSL_SPKI.splitlines()[1:-1]),  # bare base64 SubjectPublicKeyInfo
            "".join(OPENSSL_PKCS1.splitlines()[1:-1]),  # bare base64 PKCS#1
        ],
    )
    def test_openssl_signature_verifies(self, pem: str) -> None:
        key = signing.load_public_key(pem)
        assert key.key_size == 1024
        assert signing.notification_signature_matches(
            key, NOTIFY_TIMESTAMP, NOTIFY_BODY, NOTIFY_SIGNATURE
        )

    @pytest.mark.parametrize(
        ("timestamp", "body"),
        [
            ("1736233261", NOTIFY_BODY),
            (NOTIFY_TIMESTAMP, NOTIFY_BODY.replace(b'"100"', b'"1000"')),
            (NOTIFY_TIMESTAMP, NOTIFY_BODY + b" "),
            (NOTIFY_TIMESTAMP, NOTIFY_BODY.replace(b":", b": ")),  # re-serialised
        ],
    )
    def test_tampering_is_refused(self, timestamp: str, body: bytes) -> None:
        key = signing.load_public_key(OPENSSL_SPKI)
        assert not signing.notification_signature_matches(key, timestamp, body, NOTIFY_SIGNATURE)

    @pytest.mark.parametrize(
        "signature",
        [
            "",
            "not base64!",
            NOTIFY_SIGNATURE[:-4],
            base64.b64encode(b"\x00" * 128).decode(),
            base64.b64encode(b"\xff" * 128).decode(),  # larger than the modulus
            base64.b64encode(base64.b64decode(NOTIFY_SIGNATURE)[::-1]).decode(),
        ],
    )
    def test_malformed_signatures_are_refused(self, signature: str) -> None:
        key = signing.load_public_key(OPENSSL_SPKI)
        assert not signing.notification_signature_matches(
            key, NOTIFY_TIMESTAMP, NOTIFY_BODY, signature
        )

    def test_own_key_signs_and_round_trips_through_pem(self) -> None:
        private = signing.generate_private_key()
        assert private.key_size == 1024
        public = signing.load_public_key(signing.public_key_pem(private.public_key()))
        assert public == private.public_key()
        signature = signing.sign_notification(private, NOTIFY_TIMESTAMP, NOTIFY_BODY)
        assert signing.notification_signature_matches(
            public, NOTIFY_TIMESTAMP, NOTIFY_BODY, signature
        )
        other = signing.generate_private_key().public_key()
        assert not signing.notification_signature_matches(
            other, NOTIFY_TIMESTAMP, NOTIFY_BODY, signature
        )

    def test_own_pem_matches_openssl_layout(self) -> None:
        key = signing.load_public_key(OPENSSL_PKCS1)
        assert signing.public_key_pem(key) == OPENSSL_SPKI

    @pytest.mark.parametrize(
        "text",
        [
            "",
            "garbage",
            "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n",
            OPENSSL_SPKI.replace("MIGfMA0G", "MIGfMA1G"),
            OPENSSL_SPKI.replace("IDAQAB", "IDAQAC"),
        ],
    )
    def test_bad_public_keys_are_refused(self, text: str) -> None:
        with pytest.raises(ValueError):  # noqa: PT011 - each case fails for its own reason
            signing.load_public_key(text)

    def test_weak_keys_are_refused(self) -> None:
        with pytest.raises(ValueError, match="too weak"):
            signing.load_public_key(OPENSSL_WEAK_SPKI)

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
