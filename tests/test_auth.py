"""Bearer keys: every way a request can fail to authenticate answers 401 in shape C, on every
operation, and changes nothing; revocation and expiry take effect at once."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import select, update

from payrelay.auth.keys import Mode
from payrelay.db.models import ApiKey, MomoTransaction, Transfer
from payrelay.kit.ids import random_base62
from payrelay.merchants import service as merchants
from tests.factories import new_reference, transfer_body
from tests.harness import Harness, MerchantKeys
from tests.http_checks import (
    assert_shape_c,
    bearer,
    count_rows,
    create_transfer,
    issue_key,
)

OPERATIONS = ["createTransferRequest", "payment-status", "getNewReference", "momo"]


async def call(
    api: Harness,
    operation: str,
    headers: Mapping[str, str] | Mapping[bytes, bytes],
    *,
    reference: str | None = None,
    transaction_id: str = "Abc12345",
) -> httpx.Response:
    """One request to ``operation``; a create uses a fresh, valid body."""
    if operation == "createTransferRequest":
        body = transfer_body(reference=reference or new_reference())
        return await api.client.post("/tx/createTransferRequest", json=body, headers=headers)
    if operation == "payment-status":
        return await api.client.get(
            f"/tx/payment-status/{reference or new_reference()}", headers=headers
        )
    if operation == "getNewReference":
        return await api.client.get("/tx/getNewReference", headers=headers)
    return await api.client.get(f"/momo/{transaction_id}", headers=headers)


def assert_401(response: httpx.Response) -> str:
    """401, shape C with empty details, and a Bearer challenge; answers the message."""
    body = assert_shape_c(response, 401, details={})
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.headers["x-request-id"]
    return str(body["message"])


async def nothing_stored_for(api: Harness, reference: str) -> bool:
    async with api.database.read() as session:
        found = await session.scalar(select(Transfer.id).where(Transfer.reference == reference))
    return found is None


def forged(mode: str = "test") -> str:
    """Well formed (prefix and 40 base62 characters) but never issued."""
    return f"pr_{mode}_" + random_base62(40)


MALFORMED_TOKENS = {
    "short": "pr_test_short",
    "prefix only": "pr_test_",
    "other prefix": "sk_test_" + "a" * 40,
    "unknown mode": "pr_prod_" + "a" * 40,
    "one short": "pr_test_" + "a" * 39,
    "one long": "pr_test_" + "a" * 41,
    "upper-case prefix": "PR_TEST_" + "a" * 40,
    "non-ASCII": "pr_test_" + "é" * 40,
    "inner space": "pr_test_" + "a" * 20 + " " + "a" * 19,
    "huge": "x" * 4000,
}


class TestMissingOrMalformedHeader:
    @pytest.mark.parametrize("operation", OPERATIONS)
    async def test_no_authorization_header(self, api: Harness, operation: str) -> None:
        reference = new_reference()
        response = await call(api, operation, {}, reference=reference)
        assert_401(response)
        assert await nothing_stored_for(api, reference)

    @pytest.mark.parametrize("operation", OPERATIONS)
    async def test_another_scheme_even_with_a_valid_key(self, api: Harness, operation: str) -> None:
        keys = await api.merchant()
        for value in (
            f"Basic {keys.test_key}",
            f"Token {keys.test_key}",
            f"ApiKey {keys.test_key}",
            f"Bearer:{keys.test_key}",
            f"Bearer-{keys.test_key}",
            keys.test_key,
            "Basic dXNlcjpwYXNzd29yZA==",
        ):
            reference = new_reference()
            assert_401(await call(api, operation, {"Authorization": value}, reference=reference))
        assert await count_rows(api, Transfer, keys.merchant_id) == 0

    @pytest.mark.parametrize("operation", OPERATIONS)
    async def test_bearer_with_empty_value(self, api: Harness, operation: str) -> None:
        assert_401(await call(api, operation, {"Authorization": "Bearer"}))

    @pytest.mark.parametrize("operation", OPERATIONS)
    async def test_malformed_keys(self, api: Harness, operation: str) -> None:
        for name, token in MALFORMED_TOKENS.items():
            reference = new_reference()
            # Sent as bytes, so that non-ASCII reaches the server as it is.
            headers = {b"Authorization": f"Bearer {token}".encode()}
            response = await call(api, operation, headers, reference=reference)
            assert response.status_code == 401, name
            assert_401(response)
            assert await nothing_stored_for(api, reference), name


class TestUnknownKeys:
    @pytest.mark.parametrize("operation", OPERATIONS)
    async def test_well_formed_but_never_issued(self, api: Harness, operation: str) -> None:
        for mode in ("test", "live"):
            reference = new_reference()
            assert_401(await call(api, operation, bearer(forged(mode)), reference=reference))
            assert await nothing_stored_for(api, reference)

    async def test_a_live_key_relabelled_as_test_is_unknown(self, api: Harness) -> None:
        keys = await api.merchant()
        relabelled = "pr_test_" + keys.live_key.removeprefix("pr_live_")
        assert_401(await call(api, "createTransferRequest", bearer(relabelled)))
        assert await count_rows(api, Transfer, keys.merchant_id) == 0

    async def test_a_key_with_one_character_changed_is_unknown(self, api: Harness) -> None:
        keys = await api.merchant()
        last = keys.test_key[-1]
        altered = keys.test_key[:-1] + ("b" if last == "a" else "a")
        assert_401(await call(api, "getNewReference", bearer(altered)))

    async def test_a_valid_key_works_and_the_scheme_is_case_insensitive(self, api: Harness) -> None:
        keys = await api.merchant()
        for scheme in ("Bearer", "bearer", "BEARER"):
            response = await api.client.get(
                "/tx/getNewReference", headers={"Authorization": f"{scheme} {keys.test_key}"}
            )
            assert response.status_code == 200, (scheme, response.text)


async def succeed_then(api: Harness, operation: str, key: str, keys: MerchantKeys) -> str:
    """Make ``operation`` succeed with ``key``; answers the reference or id it used, so the same
    request can be repeated after the key stops working."""
    if operation == "createTransferRequest":
        response = await call(api, operation, bearer(key))
        assert response.status_code == 200, response.text
        return new_reference()
    if operation == "payment-status":
        body = await create_transfer(api, keys)
        response = await call(api, operation, bearer(key), reference=body["reference"])
        assert response.status_code == 200, response.text
        return str(body["reference"])
    if operation == "getNewReference":
        response = await call(api, operation, bearer(key))
        assert response.status_code == 200, response.text
        return ""
    created = await api.client.post("/sandbox/momo", headers=bearer(key))
    assert created.status_code == 201, created.text
    transaction_id = str(created.json()["transactionId"])
    response = await call(api, operation, bearer(key), transaction_id=transaction_id)
    assert response.status_code == 200, response.text
    return transaction_id


async def repeat(api: Harness, operation: str, key: str, handle: str) -> httpx.Response:
    if operation == "momo":
        return await call(api, operation, bearer(key), transaction_id=handle)
    return await call(api, operation, bearer(key), reference=handle or None)


class TestRevocation:
    @pytest.mark.parametrize("operation", OPERATIONS)
    async def test_a_revoked_key_stops_working_at_once(self, api: Harness, operation: str) -> None:
        keys = await api.merchant()
        issued = await issue_key(api, keys.merchant_id)
        handle = await succeed_then(api, operation, issued.key, keys)
        transfers_before = await count_rows(api, Transfer, keys.merchant_id)
        momo_before = await count_rows(api, MomoTransaction, keys.merchant_id)

        await merchants.revoke_key(api.database, issued.id)

        message = assert_401(await repeat(api, operation, issued.key, handle))
        assert "revoked" in message
        assert await count_rows(api, Transfer, keys.merchant_id) == transfers_before
        assert await count_rows(api, MomoTransaction, keys.merchant_id) == momo_before

    async def test_revoking_one_key_leaves_the_merchants_other_keys_working(
        self, api: Harness
    ) -> None:
        keys = await api.merchant()
        issued = await issue_key(api, keys.merchant_id)
        await merchants.revoke_key(api.database, issued.id)
        assert_401(await call(api, "getNewReference", bearer(issued.key)))
        response = await call(api, "getNewReference", keys.test)
        assert response.status_code == 200, response.text

    async def test_revoking_twice_keeps_the_key_revoked(self, api: Harness) -> None:
        keys = await api.merchant()
        issued = await issue_key(api, keys.merchant_id)
        first = await merchants.revoke_key(api.database, issued.id)
        second = await merchants.revoke_key(api.database, issued.id)
        assert first.revoked_at is not None
        assert second.revoked_at == first.revoked_at
        assert_401(await call(api, "getNewReference", bearer(issued.key)))


class TestExpiry:
    @pytest.mark.parametrize("operation", OPERATIONS)
    async def test_an_expired_key_gets_401(self, api: Harness, operation: str) -> None:
        keys = await api.merchant()
        issued = await issue_key(api, keys.merchant_id)
        handle = await succeed_then(api, operation, issued.key, keys)
        async with api.database.write() as session:
            await session.execute(
                update(ApiKey)
                .where(ApiKey.id == issued.id)
                .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
            )
        transfers_before = await count_rows(api, Transfer, keys.merchant_id)

        message = assert_401(await repeat(api, operation, issued.key, handle))
        assert "expired" in message
        assert await count_rows(api, Transfer, keys.merchant_id) == transfers_before

    async def test_a_key_issued_with_a_tiny_lifetime_expires(self, api: Harness) -> None:
        keys = await api.merchant()
        issued = await issue_key(api, keys.merchant_id, expires_in=timedelta(milliseconds=50))
        await asyncio.sleep(0.1)
        message = assert_401(await call(api, "getNewReference", bearer(issued.key)))
        assert "expired" in message

    @pytest.mark.parametrize("mode", [Mode.TEST, Mode.LIVE])
    async def test_a_key_expiring_in_the_future_works(self, api: Harness, mode: Mode) -> None:
        keys = await api.merchant()
        issued = await issue_key(api, keys.merchant_id, mode, expires_in=timedelta(days=30))
        assert issued.expires_at is not None
        response = await call(api, "getNewReference", bearer(issued.key))
        assert response.status_code == 200, response.text

    async def test_rotation_overlaps_old_and_new_keys_both_work(self, api: Harness) -> None:
        keys = await api.merchant()
        old = await issue_key(api, keys.merchant_id, expires_in=timedelta(hours=1))
        new = await issue_key(api, keys.merchant_id)
        body = await create_transfer(api, keys)
        for key in (old.key, new.key):
            response = await call(api, "payment-status", bearer(key), reference=body["reference"])
            assert response.status_code == 200, response.text
            assert response.json()["status"] == "pending"
