"""GET /tx/payment-status/{reference}: the answer through the lifecycle, the reference at its
boundaries and with unusual content, and the duplicate-payment 409 in shape D."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from payrelay.auth.keys import Mode
from tests.factories import new_reference
from tests.harness import Harness, MerchantKeys
from tests.http_checks import (
    assert_shape_c,
    assert_shape_d,
    create_transfer,
    insert_transfer,
    parse_iso_z,
    stored_transfer,
    update_transfer,
)

AMOUNTS_SHOWN = [
    ("0.01", b"0.01"),
    ("10", b"10.00"),
    ("0.1", b"0.10"),
    ("1.10", b"1.10"),
    ("5e1", b"50.00"),
    ("1000000", b"1000000.00"),
]


def status_path(reference: str) -> str:
    return "/tx/payment-status/" + quote(reference, safe="")


class TestLifecycle:
    async def test_pending_right_after_create(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        response = await api.client.get(status_path(body["reference"]), headers=keys.test)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/json")
        assert response.headers["cache-control"] == "no-store"
        payload = response.json()
        assert set(payload) == {"status", "timestamp", "amount"}
        assert payload["status"] == "pending"
        stamp = parse_iso_z(payload["timestamp"])
        assert abs(datetime.now(UTC) - stamp) < timedelta(seconds=5)
        assert b'"amount":149.90' in response.content

    async def test_amount_is_an_exact_number_to_the_cent(self, api: Harness) -> None:
        keys = await api.merchant()
        for sent, shown in AMOUNTS_SHOWN:
            await self.check_amount(api, keys, sent, shown)

    async def check_amount(self, api: Harness, keys: MerchantKeys, sent: str, shown: bytes) -> None:
        reference = new_reference()
        payload = (
            b'{"recipient":"0xabc","amount":' + sent.encode() + b',"issuer":"Valr",'
            b'"acquirerMerchantName":"Paystack","reference":"' + reference.encode() + b'",'
            b'"merchantID":"m1","description":"d","terminalType":"APP",'
            b'"successUrl":"https://s.example/ok","failedUrl":"https://s.example/no",'
            b'"webhookUrl":"https://s.example/hook"}'
        )
        created = await api.client.post(
            "/tx/createTransferRequest",
            content=payload,
            headers={**keys.test, "Content-Type": "application/json"},
        )
        assert created.status_code == 200, created.text
        response = await api.client.get(status_path(reference), headers=keys.test)
        assert b'"amount":' + shown + b"}" in response.content, (sent, response.content)

    async def test_processed_after_pay(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        before = (await api.client.get(status_path(body["reference"]), headers=keys.test)).json()
        await asyncio.sleep(0.01)
        paid = await api.client.post(
            f"/sandbox/transfers/{quote(body['reference'], safe='')}/pay", headers=keys.test
        )
        assert paid.status_code == 200, paid.text

        response = await api.client.get(status_path(body["reference"]), headers=keys.test)
        after = response.json()
        assert after["status"] == "processed"
        assert after == paid.json()
        assert b'"amount":149.90' in response.content
        assert parse_iso_z(after["timestamp"]) > parse_iso_z(before["timestamp"])
        assert abs(datetime.now(UTC) - parse_iso_z(after["timestamp"])) < timedelta(seconds=5)

    async def test_failed_after_decline(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        before = (await api.client.get(status_path(body["reference"]), headers=keys.test)).json()
        await asyncio.sleep(0.01)
        declined = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/decline", headers=keys.test
        )
        assert declined.status_code == 200, declined.text

        after = (await api.client.get(status_path(body["reference"]), headers=keys.test)).json()
        assert after["status"] == "failed"
        assert after["amount"] == before["amount"] == 149.90
        assert parse_iso_z(after["timestamp"]) > parse_iso_z(before["timestamp"])

    async def test_lookups_do_not_move_the_timestamp(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        first = await api.client.get(status_path(body["reference"]), headers=keys.test)
        await asyncio.sleep(0.01)
        second = await api.client.get(status_path(body["reference"]), headers=keys.test)
        assert first.content == second.content

    async def test_timestamp_is_the_stored_time_of_the_last_change(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        changed_at = datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC)
        await update_transfer(
            api, keys.merchant_id, body["reference"], status_changed_at=changed_at
        )
        response = await api.client.get(status_path(body["reference"]), headers=keys.test)
        assert response.json()["timestamp"] == "2026-01-02T03:04:05.678Z"


class TestUnknownAndInvalidReferences:
    async def test_unknown_reference_is_404_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.get(status_path(new_reference()), headers=keys.test)
        assert_shape_c(response, 404, details={})
        assert response.headers["cache-control"] == "no-store"

    async def test_128_characters_is_a_valid_reference(self, api: Harness) -> None:
        keys = await api.merchant()
        for char in ("a", "é", "🙂"):
            response = await api.client.get(status_path(char * 128), headers=keys.test)
            assert_shape_c(response, 404, details={})

    async def test_129_characters_is_400_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        for char in ("a", "é", "🙂"):
            response = await api.client.get(status_path(char * 129), headers=keys.test)
            body = assert_shape_c(response, 400)
            assert set(body["details"]) == {"reference"}

    async def test_a_very_long_reference_is_400(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.get(status_path("r" * 5000), headers=keys.test)
        body = assert_shape_c(response, 400)
        assert set(body["details"]) == {"reference"}

    async def test_a_128_character_reference_is_found(self, api: Harness) -> None:
        keys = await api.merchant()
        reference = "ü" * 64 + new_reference().ljust(64, "x")
        assert len(reference) == 128
        await create_transfer(api, keys, reference=reference)
        response = await api.client.get(status_path(reference), headers=keys.test)
        assert response.status_code == 200, response.text

    async def test_empty_reference_is_400_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.get("/tx/payment-status/", headers=keys.test)
        body = assert_shape_c(response, 400)
        assert set(body["details"]) == {"reference"}

    async def test_no_reference_segment_at_all_is_404_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.get("/tx/payment-status", headers=keys.test)
        assert_shape_c(response, 404, details={})

    async def test_control_characters_are_400_not_a_server_fault(self, api: Harness) -> None:
        keys = await api.merchant()
        for encoded in (
            "%00abcdefghijk",
            "abc%00defghijk",
            "abcdefghijk%0D",
            "abc%0Adefghijk",
            "abc%1Bdefgh",
            "abc%7Fdefgh",
        ):
            response = await api.client.get(f"/tx/payment-status/{encoded}", headers=keys.test)
            body = assert_shape_c(response, 400)
            assert set(body["details"]) == {"reference"}, encoded

    async def test_nul_in_sandbox_paths_is_404_not_a_server_fault(self, api: Harness) -> None:
        # PostgreSQL refuses NUL in a query parameter; no stored reference or id contains one.
        keys = await api.merchant()
        for method, path in (
            ("POST", "/sandbox/transfers/%00abcdefghijk/pay"),
            ("GET", "/sandbox/checkout/tr_%00"),
            ("POST", "/sandbox/checkout/tr_%00/pay"),
        ):
            response = await api.client.request(method, path, headers=keys.test)
            assert_shape_c(response, 404, details={})

    async def test_a_trailing_line_break_does_not_find_the_reference_without_it(
        self, api: Harness
    ) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        response = await api.client.get(status_path(body["reference"]) + "%0A", headers=keys.test)
        assert_shape_c(response, 400)


UNUSUAL_REFERENCES = [
    "order/2024/ü-0001",
    "/leading-slash-0001",
    "trailing-slash-0001/",
    "double//slash-0001",
    "100%-sure-0001",
    "pct-%41-%2F-0001",
    "query?a=1&b=2-0001",
    "hash#fragment-0001",
    "with space+plus-0001",
    "semi;colon,comma-0001",
    "../../escape-0001",
    "../../../../..",
    "émoji-🙂-日本-0001",
    "quote'\"<tag>-0001",
    "back\\slash-0001",
]


class TestUnusualReferences:
    async def test_found_through_the_percent_encoded_path(self, api: Harness) -> None:
        keys = await api.merchant()
        for cents, reference in enumerate(UNUSUAL_REFERENCES, start=1):
            await create_transfer(api, keys, reference=reference, amount=cents / 100)
        for cents, reference in enumerate(UNUSUAL_REFERENCES, start=1):
            response = await api.client.get(status_path(reference), headers=keys.test)
            assert response.status_code == 200, (reference, response.text)
            assert response.json()["status"] == "pending"
            assert f'"amount":0.{cents:02d}'.encode() in response.content, reference

    async def test_unencoded_slashes_reach_the_same_reference(self, api: Harness) -> None:
        keys = await api.merchant()
        reference = "order/2024/x-" + new_reference()
        await create_transfer(api, keys, reference=reference)
        response = await api.client.get(f"/tx/payment-status/{reference}", headers=keys.test)
        assert response.status_code == 200, response.text

    async def test_percent_sequences_are_decoded_exactly_once(self, api: Harness) -> None:
        keys = await api.merchant()
        reference = "pct-%41-" + new_reference()
        await create_transfer(api, keys, reference=reference, amount=1)
        found = await api.client.get(status_path(reference), headers=keys.test)
        assert found.status_code == 200, found.text
        # Sent unencoded, "%41" is decoded once, into "A": a different reference.
        decoded_once = await api.client.get(f"/tx/payment-status/{reference}", headers=keys.test)
        assert_shape_c(decoded_once, 404, details={})

    async def test_encoded_dot_segments_do_not_escape(self, api: Harness) -> None:
        keys = await api.merchant()
        unknown = await api.client.get(status_path(new_reference()), headers=keys.test)
        for path in (
            "/tx/payment-status/..%2F..%2Fhealthz",
            "/tx/payment-status/..%2FgetNewReference",
            "/tx/payment-status/%2E%2E%2F%2E%2E%2Fopenapi.json",
            "/tx/payment-status/..%2F..%2Fmomo%2FAbc12345",
            "/tx/payment-status/..%5C..%5Chealthz",
        ):
            response = await api.client.get(path, headers=keys.test)
            assert_shape_c(response, 404, details={})
            assert response.content == unknown.content, path

    async def test_a_dot_dot_reference_of_another_merchant_stays_foreign(
        self, api: Harness
    ) -> None:
        a, b = await api.merchant(), await api.merchant()
        reference = "../" + new_reference()
        await create_transfer(api, a, reference=reference)
        response = await api.client.get(status_path(reference), headers=b.test)
        assert_shape_c(response, 404, details={})


class TestDuplicatePayment:
    async def test_paid_twice_is_409_shape_d(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        await update_transfer(
            api, keys.merchant_id, body["reference"], status="processed", payment_count=2
        )
        response = await api.client.get(status_path(body["reference"]), headers=keys.test)
        message = assert_shape_d(response, 409)
        assert "cannot be reused" in message
        assert f"{api.base_url}/tx/getNewReference" in message
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["x-request-id"]

    async def test_paid_once_is_an_ordinary_answer(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        paid = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/pay", headers=keys.test
        )
        assert paid.status_code == 200
        stored = await stored_transfer(api, keys.merchant_id, body["reference"])
        assert stored is not None
        assert stored.payment_count == 1
        response = await api.client.get(status_path(body["reference"]), headers=keys.test)
        assert response.json()["status"] == "processed"

    async def test_a_foreign_merchant_still_gets_the_unknown_answer(self, api: Harness) -> None:
        a, b = await api.merchant(), await api.merchant()
        body = await create_transfer(api, a)
        await update_transfer(
            api, a.merchant_id, body["reference"], status="processed", payment_count=3
        )
        foreign = await api.client.get(status_path(body["reference"]), headers=b.test)
        assert_shape_c(foreign, 404, details={})

    async def test_live_mode_duplicate_is_409_too(self, api: Harness) -> None:
        keys = await api.merchant()
        live = await insert_transfer(api, keys.merchant_id, mode=Mode.LIVE, status="processed")
        await update_transfer(api, keys.merchant_id, live.reference, payment_count=2)
        response = await api.client.get(status_path(live.reference), headers=keys.live)
        message = assert_shape_d(response, 409)
        assert f"{api.base_url}/tx/getNewReference" in message
