"""GET /momo/{transactionId} and the test-mode mobile money sandbox that feeds it."""

from __future__ import annotations

import asyncio
import re

import pytest

from tests.harness import Harness, MerchantKeys
from tests.sandbox_support import assert_shape_a, assert_shape_b, assert_shape_c

CONFIRMATION_ID = re.compile(r"[A-Z0-9]{10}")
GENERATED_ID = re.compile(r"[A-Za-z0-9]{5,15}")


async def shared_merchant(api: Harness) -> MerchantKeys:
    """One merchant per harness for tests that only read; saves a merchant per case."""
    if "momo-reader" not in api.extra:
        api.extra["momo-reader"] = await api.merchant("Momo Reader")
    keys: MerchantKeys = api.extra["momo-reader"]
    return keys


async def create_momo(api: Harness, keys: MerchantKeys, transaction_id: str | None = None) -> str:
    payload = None if transaction_id is None else {"transactionId": transaction_id}
    response = await api.client.post("/sandbox/momo", json=payload, headers=keys.test)
    assert response.status_code == 201, response.text
    assert set(response.json()) == {"transactionId"}
    created: str = response.json()["transactionId"]
    if transaction_id is not None:
        assert created == transaction_id
    return created


async def momo_status(api: Harness, keys: MerchantKeys, transaction_id: str) -> dict[str, str]:
    response = await api.client.get(f"/momo/{transaction_id}", headers=keys.test)
    assert response.status_code == 200, response.text
    body: dict[str, str] = response.json()
    assert set(body) == {"status", "confirmationID"}
    return body


# Path segments exactly as sent on the wire; each must be refused as a bad transactionId.
BAD_IDS = [
    pytest.param("abcd", id="4-chars"),
    pytest.param("A1b2C3d4E5f6G7h8", id="16-chars"),
    pytest.param("abcd%C3%A9", id="latin-e-acute"),
    pytest.param("١٢٣٤٥", id="arabic-indic-digits"),
    pytest.param("\uff41\uff42\uff43\uff44\uff45", id="fullwidth-letters"),
    pytest.param("abc²³", id="superscript-digits"),
    pytest.param("abcde%E2%80%8B", id="zero-width-space"),
    pytest.param("abc-d", id="hyphen"),
    pytest.param("abc_d", id="underscore"),
    pytest.param("abcde%0A", id="trailing-newline"),
    pytest.param("abc%0Adef", id="inner-newline"),
    pytest.param("abcde%00", id="nul"),
    pytest.param("abc%2Fdef", id="encoded-slash"),
    pytest.param("abcde/", id="trailing-slash"),
    pytest.param("abc def", id="space"),
    pytest.param("abc%25def", id="percent"),
    pytest.param("", id="empty"),
]


class TestTransactionIdBoundaries:
    @pytest.mark.parametrize("transaction_id", ["abcde", "a1B2c3D4e5F6g7H"])
    async def test_valid_but_unknown_ids_reach_the_lookup(
        self, api: Harness, transaction_id: str
    ) -> None:
        keys = await shared_merchant(api)
        response = await api.client.get(f"/momo/{transaction_id}", headers=keys.test)
        body = assert_shape_b(response, 404, "Not Found")
        assert "transactionId" in body["message"]

    @pytest.mark.parametrize("transaction_id", ["abcde", "Z9y8X7w6V5u4T3s"])
    async def test_5_and_15_characters_are_found(self, api: Harness, transaction_id: str) -> None:
        keys = await api.merchant()
        await create_momo(api, keys, transaction_id)
        assert await momo_status(api, keys, transaction_id) == {
            "status": "Pending",
            "confirmationID": "",
        }

    @pytest.mark.parametrize("raw", BAD_IDS)
    async def test_bad_ids_are_400_shape_b(self, api: Harness, raw: str) -> None:
        keys = await shared_merchant(api)
        response = await api.client.get(f"/momo/{raw}", headers=keys.test)
        body = assert_shape_b(response, 400, "Bad Request")
        assert "transactionId" in body["message"]

    async def test_trailing_newline_does_not_reach_an_existing_transaction(
        self, api: Harness
    ) -> None:
        keys = await api.merchant()
        await create_momo(api, keys, "abcde")
        response = await api.client.get("/momo/abcde%0A", headers=keys.test)
        assert_shape_b(response, 400, "Bad Request")

    async def test_momo_answers_carry_no_store_and_a_request_id(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_momo(api, keys)
        for path in (f"/momo/{created}", "/momo/abcd", "/momo/nothere"):
            response = await api.client.get(
                path, headers={**keys.test, "X-Request-Id": "momo-req-1"}
            )
            assert response.headers["cache-control"] == "no-store", path
            assert response.headers["x-request-id"] == "momo-req-1", path


class TestMomoErrors:
    @pytest.mark.parametrize(
        "headers",
        [
            pytest.param({}, id="no-header"),
            pytest.param({"Authorization": "Bearer pr_test_" + "x" * 40}, id="unknown-key"),
            pytest.param({"Authorization": "Basic dXNlcjpwYXNz"}, id="basic-scheme"),
            pytest.param({"Authorization": "Bearer"}, id="empty-bearer"),
        ],
    )
    async def test_no_or_invalid_key_is_401_shape_c(
        self, api: Harness, headers: dict[str, str]
    ) -> None:
        response = await api.client.get("/momo/abcde", headers=headers)
        body = assert_shape_c(response, 401)
        assert body["details"] == {}
        assert response.headers["www-authenticate"].lower().startswith("bearer")

    async def test_no_key_never_reveals_an_existing_transaction(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_momo(api, keys)
        assert_shape_c(await api.client.get(f"/momo/{created}"), 401)

    async def test_live_key_is_503_shape_a(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.get("/momo/abcde", headers=keys.live)
        body = assert_shape_a(response, 503, "Service Unavailable")
        assert "not configured" in body["details"]

    async def test_live_key_never_sees_test_transactions(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_momo(api, keys)
        response = await api.client.get(f"/momo/{created}", headers=keys.live)
        assert_shape_a(response, 503, "Service Unavailable")
        assert "Pending" not in response.text

    async def test_live_key_with_a_bad_id_is_still_400_shape_b(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.get("/momo/abc-d", headers=keys.live)
        assert_shape_b(response, 400, "Bad Request")

    async def test_another_merchants_transaction_is_not_found(self, api: Harness) -> None:
        owner, stranger = await api.merchant(), await api.merchant()
        created = await create_momo(api, owner)
        unknown = await api.client.get("/momo/nosuchtx1", headers=stranger.test)
        foreign = await api.client.get(f"/momo/{created}", headers=stranger.test)
        assert_shape_b(foreign, 404, "Not Found")
        assert foreign.json() == unknown.json()

    @pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
    async def test_wrong_method_is_405(self, api: Harness, method: str) -> None:
        keys = await api.merchant()
        response = await api.client.request(method, "/momo/abcde", headers=keys.test)
        assert response.status_code == 405, response.text
        assert "detail" not in response.json()


class TestSandboxMomoCreate:
    async def test_empty_body_generates_an_id(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.post("/sandbox/momo", headers=keys.test)
        assert response.status_code == 201, response.text
        assert set(response.json()) == {"transactionId"}
        created = response.json()["transactionId"]
        assert GENERATED_ID.fullmatch(created), created
        assert await momo_status(api, keys, created) == {"status": "Pending", "confirmationID": ""}

    async def test_empty_json_object_generates_an_id(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.post("/sandbox/momo", json={}, headers=keys.test)
        assert response.status_code == 201, response.text
        assert GENERATED_ID.fullmatch(response.json()["transactionId"])

    async def test_generated_ids_are_distinct(self, api: Harness) -> None:
        keys = await api.merchant()
        created = [await create_momo(api, keys) for _ in range(5)]
        assert len(set(created)) == 5

    async def test_given_id_is_used(self, api: Harness) -> None:
        keys = await api.merchant()
        assert await create_momo(api, keys, "abc12345") == "abc12345"
        assert await momo_status(api, keys, "abc12345") == {
            "status": "Pending",
            "confirmationID": "",
        }

    async def test_duplicate_id_is_409_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        await create_momo(api, keys, "dup12345")
        response = await api.client.post(
            "/sandbox/momo", json={"transactionId": "dup12345"}, headers=keys.test
        )
        assert_shape_c(response, 409)

    async def test_same_id_is_free_for_another_merchant(self, api: Harness) -> None:
        first, second = await api.merchant(), await api.merchant()
        await create_momo(api, first, "shared123")
        await create_momo(api, second, "shared123")
        await api.client.post("/sandbox/momo/shared123/succeed", headers=first.test)
        assert (await momo_status(api, first, "shared123"))["status"] == "Successful"
        assert (await momo_status(api, second, "shared123"))["status"] == "Pending"

    @pytest.mark.parametrize("transaction_id", ["abcd", "a" * 16, "abcdé", "١٢٣٤٥", "abcde\n", ""])
    async def test_invalid_id_is_400(self, api: Harness, transaction_id: str) -> None:
        keys = await api.merchant()
        response = await api.client.post(
            "/sandbox/momo", json={"transactionId": transaction_id}, headers=keys.test
        )
        assert_shape_b(response, 400, "Bad Request")

    @pytest.mark.parametrize(
        "payload",
        [
            pytest.param(b'{"transactionId": 12345}', id="number"),
            pytest.param(b'{"transactionId": ["abcde"]}', id="list"),
            pytest.param(b'{"transactionId": "abcde", "extra": 1}', id="unknown-field"),
            pytest.param(b'["abcde"]', id="not-an-object"),
            pytest.param(b"{", id="malformed"),
        ],
    )
    async def test_bad_body_is_400_shape_c(self, api: Harness, payload: bytes) -> None:
        keys = await api.merchant()
        response = await api.client.post(
            "/sandbox/momo",
            content=payload,
            headers={**keys.test, "Content-Type": "application/json"},
        )
        assert_shape_c(response, 400)

    async def test_wrong_content_type_is_400(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.post(
            "/sandbox/momo",
            content=b'{"transactionId": "abcde"}',
            headers={**keys.test, "Content-Type": "text/plain"},
        )
        assert_shape_c(response, 400)

    async def test_live_key_is_403_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.post(
            "/sandbox/momo", json={"transactionId": "live12345"}, headers=keys.live
        )
        assert_shape_c(response, 403)
        # Nothing was created: the test key can still create the same id.
        assert await create_momo(api, keys, "live12345") == "live12345"

    async def test_no_key_is_401_shape_c(self, api: Harness) -> None:
        assert_shape_c(await api.client.post("/sandbox/momo"), 401)


class TestSandboxMomoSettle:
    async def test_succeed_records_a_confirmation_id(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_momo(api, keys)
        response = await api.client.post(f"/sandbox/momo/{created}/succeed", headers=keys.test)
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) == {"status", "confirmationID"}
        assert body["status"] == "Successful"
        assert len(body["confirmationID"]) == 10
        assert CONFIRMATION_ID.fullmatch(body["confirmationID"]), body
        assert await momo_status(api, keys, created) == body

    async def test_confirmation_ids_differ(self, api: Harness) -> None:
        keys = await api.merchant()
        seen = set()
        for _ in range(3):
            created = await create_momo(api, keys)
            await api.client.post(f"/sandbox/momo/{created}/succeed", headers=keys.test)
            seen.add((await momo_status(api, keys, created))["confirmationID"])
        assert len(seen) == 3

    async def test_fail_is_unsuccessful_with_an_empty_confirmation_id(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_momo(api, keys, "failme123")
        response = await api.client.post(f"/sandbox/momo/{created}/fail", headers=keys.test)
        assert response.status_code == 200, response.text
        assert response.json() == {"status": "Unsuccessful", "confirmationID": ""}
        assert await momo_status(api, keys, created) == {
            "status": "Unsuccessful",
            "confirmationID": "",
        }

    @pytest.mark.parametrize(
        ("first", "second"),
        [("succeed", "succeed"), ("succeed", "fail"), ("fail", "fail"), ("fail", "succeed")],
    )
    async def test_settling_twice_is_409_shape_c(
        self, api: Harness, first: str, second: str
    ) -> None:
        keys = await api.merchant()
        created = await create_momo(api, keys)
        settled = await api.client.post(f"/sandbox/momo/{created}/{first}", headers=keys.test)
        assert settled.status_code == 200, settled.text
        again = await api.client.post(f"/sandbox/momo/{created}/{second}", headers=keys.test)
        assert_shape_c(again, 409)
        assert await momo_status(api, keys, created) == settled.json()

    async def test_concurrent_settles_settle_exactly_once(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_momo(api, keys)
        responses = await asyncio.gather(
            *(
                api.client.post(
                    f"/sandbox/momo/{created}/{'succeed' if i % 2 else 'fail'}", headers=keys.test
                )
                for i in range(10)
            )
        )
        codes = sorted(r.status_code for r in responses)
        assert codes == [200] + [409] * 9, [r.text for r in responses]
        winner = next(r for r in responses if r.status_code == 200)
        assert await momo_status(api, keys, created) == winner.json()

    async def test_unknown_outcome_is_400(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_momo(api, keys)
        response = await api.client.post(f"/sandbox/momo/{created}/refund", headers=keys.test)
        assert response.status_code == 400, response.text
        assert (await momo_status(api, keys, created))["status"] == "Pending"

    async def test_unknown_transaction_is_404_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.post("/sandbox/momo/nosuch123/succeed", headers=keys.test)
        assert_shape_c(response, 404)

    async def test_another_merchants_transaction_is_404(self, api: Harness) -> None:
        owner, stranger = await api.merchant(), await api.merchant()
        created = await create_momo(api, owner)
        response = await api.client.post(f"/sandbox/momo/{created}/succeed", headers=stranger.test)
        assert_shape_c(response, 404)
        assert (await momo_status(api, owner, created))["status"] == "Pending"

    @pytest.mark.parametrize("outcome", ["succeed", "fail"])
    async def test_live_key_is_403_shape_c(self, api: Harness, outcome: str) -> None:
        keys = await api.merchant()
        created = await create_momo(api, keys)
        response = await api.client.post(f"/sandbox/momo/{created}/{outcome}", headers=keys.live)
        assert_shape_c(response, 403)
        assert (await momo_status(api, keys, created))["status"] == "Pending"

    async def test_no_key_is_401_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_momo(api, keys)
        response = await api.client.post(f"/sandbox/momo/{created}/succeed")
        assert_shape_c(response, 401)
        assert (await momo_status(api, keys, created))["status"] == "Pending"
