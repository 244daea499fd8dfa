"""VALR's two published signing vectors, reproduced exactly, and what a tamper does to them."""

from __future__ import annotations

import pytest

from payrelay.issuers.valr import signing
from payrelay.issuers.valr.wire import API_KEY, SIGNATURE, SUB_ACCOUNT_ID, TIMESTAMP

SECRET = "4961b74efac86b25cce8fbe4c9811c4c7a787b7a5996660afcc2e287ad864363"

GET_TIMESTAMP = "1558014486185"
GET_PATH = "/v1/account/balances"
# Published in VALR's docs ("Authentication") and in valrdotcom/valr-agent-skills
# references/authentication.md, which gives the full value.
GET_SIGNATURE = (
    "9d52c181ed69460b49307b7891f04658e938b21181173844b5018b2fe783a6d4"
    "c62b8e67a03de4d099e7437ebfabe12c56233b73c6a0cc0f7ae87e05f6289928"
)

POST_TIMESTAMP = "1558017528946"
POST_PATH = "/v1/orders/market"
POST_BODY = '{"customerOrderId":"ORDER-000001","pair":"BTCUSDC","side":"BUY","quoteAmount":"80000"}'
POST_SIGNATURE = (
    "09f536e3dfdad58443f16010a97a0a21ad27486b7b8d6d4103170d885410ed77"
    "f037f1fa628474190d4f5c08ca12c1acc850901f1c2e75c6d906ec3b32b008d0"
)


class TestPublishedVectors:
    def test_get_balances(self) -> None:
        signature = signing.sign_request(SECRET, GET_TIMESTAMP, "GET", GET_PATH)
        assert signature.startswith("9d52c181")
        assert signature.endswith("6289928")
        assert signature == GET_SIGNATURE

    def test_post_market_order(self) -> None:
        signature = signing.sign_request(SECRET, POST_TIMESTAMP, "POST", POST_PATH, POST_BODY)
        assert signature.startswith("09f536e3")
        assert signature.endswith("32b008d0")
        assert signature == POST_SIGNATURE

    def test_lower_case_hex_of_sha512(self) -> None:
        assert len(GET_SIGNATURE) == 128
        assert GET_SIGNATURE.lower() == GET_SIGNATURE

    def test_verb_is_upper_cased_before_signing(self) -> None:
        assert signing.sign_request(SECRET, GET_TIMESTAMP, "get", GET_PATH) == GET_SIGNATURE

    def test_empty_subaccount_changes_nothing(self) -> None:
        signature = signing.sign_request(SECRET, POST_TIMESTAMP, "POST", POST_PATH, POST_BODY, "")
        assert signature == POST_SIGNATURE


class TestVerification:
    def test_matches_published_signature(self) -> None:
        assert signing.signature_matches(
            SECRET, POST_TIMESTAMP, "POST", POST_PATH, POST_BODY, "", POST_SIGNATURE
        )

    @pytest.mark.parametrize(
        ("timestamp", "verb", "path", "body", "subaccount"),
        [
            ("1558017528947", "POST", POST_PATH, POST_BODY, ""),
            (POST_TIMESTAMP, "PUT", POST_PATH, POST_BODY, ""),
            (POST_TIMESTAMP, "POST", "/v1/orders/limit", POST_BODY, ""),
            (POST_TIMESTAMP, "POST", POST_PATH + "?x=1", POST_BODY, ""),
            (POST_TIMESTAMP, "POST", POST_PATH, POST_BODY.replace("80000", "80001"), ""),
            (POST_TIMESTAMP, "POST", POST_PATH, POST_BODY + " ", ""),
            (POST_TIMESTAMP, "POST", POST_PATH, POST_BODY, "12345"),
        ],
        ids=["timestamp", "verb", "path", "query", "amount", "whitespace", "subaccount"],
    )
    def test_tampered_request_does_not_match(
        self, timestamp: str, verb: str, path: str, body: str, subaccount: str
    ) -> None:
        assert not signing.signature_matches(
            SECRET, timestamp, verb, path, body, subaccount, POST_SIGNATURE
        )

    def test_wrong_secret_does_not_match(self) -> None:
        assert not signing.signature_matches(
            SECRET[:-1] + "4", POST_TIMESTAMP, "POST", POST_PATH, POST_BODY, "", POST_SIGNATURE
        )

    def test_upper_case_signature_is_refused(self) -> None:
        assert not signing.signature_matches(
            SECRET, GET_TIMESTAMP, "GET", GET_PATH, "", "", GET_SIGNATURE.upper()
        )

    def test_subaccount_is_appended_after_the_body(self) -> None:
        with_sub = signing.sign_request(SECRET, GET_TIMESTAMP, "GET", GET_PATH, "", "42")
        concatenated = signing.sign_request(SECRET, GET_TIMESTAMP, "GET", GET_PATH + "42")
        assert with_sub != GET_SIGNATURE
        assert with_sub == concatenated


class TestHeaders:
    def test_headers_carry_key_timestamp_signature_and_json_type(self) -> None:
        headers = signing.request_headers(
            "key", SECRET, "GET", GET_PATH, timestamp_ms=int(GET_TIMESTAMP)
        )
        assert headers == {
            "Content-Type": "application/json",
            API_KEY: "key",
            TIMESTAMP: GET_TIMESTAMP,
            SIGNATURE: GET_SIGNATURE,
        }

    def test_subaccount_header_only_when_acting_for_one(self) -> None:
        headers = signing.request_headers(
            "key", SECRET, "GET", GET_PATH, timestamp_ms=int(GET_TIMESTAMP), subaccount_id="42"
        )
        assert headers[SUB_ACCOUNT_ID] == "42"
        assert headers[SIGNATURE] == signing.sign_request(
            SECRET, GET_TIMESTAMP, "GET", GET_PATH, "", "42"
        )
