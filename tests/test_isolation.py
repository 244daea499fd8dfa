"""A key acts for one merchant in one mode: another merchant's objects, and the other mode's,
answer exactly as objects that do not exist."""

from __future__ import annotations

import httpx

from payrelay.auth.keys import Mode
from tests.factories import new_reference
from tests.harness import Harness
from tests.http_checks import (
    assert_shape_b,
    assert_shape_c,
    create_transfer,
    insert_momo,
    insert_transfer,
    stored_transfer,
)

# Headers that legitimately differ between two otherwise identical responses.
VOLATILE_HEADERS = {"x-request-id", "date", "server"}


def assert_indistinguishable(foreign: httpx.Response, unknown: httpx.Response) -> None:
    """Same status, same bytes, same headers: nothing tells a foreign object from a missing one."""
    assert foreign.status_code == unknown.status_code
    assert foreign.content == unknown.content
    assert {k: v for k, v in foreign.headers.items() if k not in VOLATILE_HEADERS} == {
        k: v for k, v in unknown.headers.items() if k not in VOLATILE_HEADERS
    }


class TestPaymentStatusAcrossMerchants:
    async def test_a_foreign_reference_answers_like_an_unknown_one(self, api: Harness) -> None:
        a, b = await api.merchant("Shop A"), await api.merchant("Shop B")
        body = await create_transfer(api, a)
        mine = await api.client.get(f"/tx/payment-status/{body['reference']}", headers=a.test)
        assert mine.status_code == 200
        assert mine.json()["status"] == "pending"

        foreign = await api.client.get(f"/tx/payment-status/{body['reference']}", headers=b.test)
        unknown = await api.client.get(f"/tx/payment-status/{new_reference()}", headers=b.test)

        assert_shape_c(foreign, 404, details={})
        assert_indistinguishable(foreign, unknown)

    async def test_the_same_reference_at_two_merchants_is_two_payments(self, api: Harness) -> None:
        a, b = await api.merchant("Shop A"), await api.merchant("Shop B")
        reference = new_reference()
        await create_transfer(api, a, reference=reference, amount=10)
        await create_transfer(api, b, reference=reference, amount=20)
        paid = await api.client.post(f"/sandbox/transfers/{reference}/pay", headers=b.test)
        assert paid.status_code == 200, paid.text

        seen_by_a = await api.client.get(f"/tx/payment-status/{reference}", headers=a.test)
        seen_by_b = await api.client.get(f"/tx/payment-status/{reference}", headers=b.test)
        assert b'"amount":10.00' in seen_by_a.content
        assert seen_by_a.json()["status"] == "pending"
        assert b'"amount":20.00' in seen_by_b.content
        assert seen_by_b.json()["status"] == "processed"

    async def test_another_merchant_cannot_settle_my_transfer(self, api: Harness) -> None:
        a, b = await api.merchant("Shop A"), await api.merchant("Shop B")
        body = await create_transfer(api, a)
        response = await api.client.post(
            f"/sandbox/transfers/{body['reference']}/pay", headers=b.test
        )
        assert_shape_c(response, 404, details={})
        stored = await stored_transfer(api, a.merchant_id, body["reference"])
        assert stored is not None
        assert stored.status == "pending"
        assert stored.payment_count == 0

    async def test_a_merchant_with_several_keys_sees_its_own_transfers_with_each(
        self, api: Harness
    ) -> None:
        a = await api.merchant("Shop A")
        second_key = await api.key(a.merchant_id, Mode.TEST)
        body = await create_transfer(api, a)
        response = await api.client.get(
            f"/tx/payment-status/{body['reference']}",
            headers={"Authorization": f"Bearer {second_key}"},
        )
        assert response.status_code == 200, response.text


class TestTestAndLiveNeverMix:
    async def test_a_live_key_never_sees_a_test_transfer(self, api: Harness) -> None:
        keys = await api.merchant()
        body = await create_transfer(api, keys)
        from_live = await api.client.get(
            f"/tx/payment-status/{body['reference']}", headers=keys.live
        )
        unknown = await api.client.get(f"/tx/payment-status/{new_reference()}", headers=keys.live)
        assert_shape_c(from_live, 404, details={})
        assert_indistinguishable(from_live, unknown)

    async def test_a_test_key_never_sees_a_live_transfer(self, api: Harness) -> None:
        keys = await api.merchant()
        live = await insert_transfer(api, keys.merchant_id, mode=Mode.LIVE, amount_cents=4200)
        from_live = await api.client.get(f"/tx/payment-status/{live.reference}", headers=keys.live)
        assert from_live.status_code == 200, from_live.text
        assert b'"amount":42.00' in from_live.content

        from_test = await api.client.get(f"/tx/payment-status/{live.reference}", headers=keys.test)
        unknown = await api.client.get(f"/tx/payment-status/{new_reference()}", headers=keys.test)
        assert_shape_c(from_test, 404, details={})
        assert_indistinguishable(from_test, unknown)

    async def test_one_reference_in_both_modes_is_two_payments(self, api: Harness) -> None:
        keys = await api.merchant()
        reference = new_reference()
        await create_transfer(api, keys, reference=reference, amount=1.5)
        await insert_transfer(
            api, keys.merchant_id, mode=Mode.LIVE, reference=reference, amount_cents=99_900
        )
        test_view = await api.client.get(f"/tx/payment-status/{reference}", headers=keys.test)
        live_view = await api.client.get(f"/tx/payment-status/{reference}", headers=keys.live)
        assert b'"amount":1.50' in test_view.content
        assert b'"amount":999.00' in live_view.content

    async def test_a_test_key_cannot_settle_a_live_transfer(self, api: Harness) -> None:
        keys = await api.merchant()
        live = await insert_transfer(api, keys.merchant_id, mode=Mode.LIVE)
        response = await api.client.post(
            f"/sandbox/transfers/{live.reference}/pay", headers=keys.test
        )
        assert_shape_c(response, 404, details={})
        stored = await stored_transfer(api, keys.merchant_id, live.reference)
        assert stored is not None
        assert stored.status == "pending"

    async def test_a_live_transfer_has_no_sandbox_checkout_page(self, api: Harness) -> None:
        keys = await api.merchant()
        live = await insert_transfer(api, keys.merchant_id, mode=Mode.LIVE)
        page = await api.client.get(f"/sandbox/checkout/{live.id}")
        assert_shape_c(page, 404, details={})
        pay = await api.client.post(f"/sandbox/checkout/{live.id}/pay")
        assert_shape_c(pay, 404, details={})
        stored = await stored_transfer(api, keys.merchant_id, live.reference)
        assert stored is not None
        assert stored.status == "pending"

    async def test_a_reference_used_in_test_mode_is_unknown_in_live_mode(
        self, api: Harness
    ) -> None:
        keys = await api.merchant()
        fresh = await api.client.get("/tx/getNewReference", headers=keys.live)
        assert fresh.status_code == 200
        reference = fresh.json()["reference"]
        await create_transfer(api, keys, reference=reference)
        # Used in test mode; live mode has never seen it.
        live_view = await api.client.get(f"/tx/payment-status/{reference}", headers=keys.live)
        assert_shape_c(live_view, 404, details={})


class TestMomoScoping:
    async def test_another_merchant_gets_404_shape_b(self, api: Harness) -> None:
        a, b = await api.merchant("Shop A"), await api.merchant("Shop B")
        created = await api.client.post("/sandbox/momo", headers=a.test)
        assert created.status_code == 201, created.text
        transaction_id = created.json()["transactionId"]
        mine = await api.client.get(f"/momo/{transaction_id}", headers=a.test)
        assert mine.status_code == 200
        assert mine.json() == {"status": "Pending", "confirmationID": ""}

        foreign = await api.client.get(f"/momo/{transaction_id}", headers=b.test)
        unknown = await api.client.get("/momo/Unknown12345", headers=b.test)
        assert_shape_b(foreign, 404, "Not Found")
        assert_indistinguishable(foreign, unknown)

    async def test_another_merchant_cannot_settle_my_transaction(self, api: Harness) -> None:
        a, b = await api.merchant("Shop A"), await api.merchant("Shop B")
        created = await api.client.post("/sandbox/momo", headers=a.test)
        transaction_id = created.json()["transactionId"]
        response = await api.client.post(f"/sandbox/momo/{transaction_id}/succeed", headers=b.test)
        assert response.status_code == 404, response.text
        mine = await api.client.get(f"/momo/{transaction_id}", headers=a.test)
        assert mine.json() == {"status": "Pending", "confirmationID": ""}

    async def test_one_transaction_id_at_two_merchants_is_two_transactions(
        self, api: Harness
    ) -> None:
        a, b = await api.merchant("Shop A"), await api.merchant("Shop B")
        transaction_id = "Shared" + new_reference()[-8:].replace("-", "0")
        for keys in (a, b):
            created = await api.client.post(
                "/sandbox/momo", json={"transactionId": transaction_id}, headers=keys.test
            )
            assert created.status_code == 201, created.text
        settled = await api.client.post(f"/sandbox/momo/{transaction_id}/fail", headers=b.test)
        assert settled.status_code == 200, settled.text
        seen_by_a = await api.client.get(f"/momo/{transaction_id}", headers=a.test)
        seen_by_b = await api.client.get(f"/momo/{transaction_id}", headers=b.test)
        assert seen_by_a.json() == {"status": "Pending", "confirmationID": ""}
        assert seen_by_b.json() == {"status": "Unsuccessful", "confirmationID": ""}

    async def test_a_test_key_never_sees_a_live_transaction(self, api: Harness) -> None:
        keys = await api.merchant()
        await insert_momo(
            api,
            keys.merchant_id,
            "LiveOnly12345",
            mode=Mode.LIVE,
            status="Successful",
            confirmation_id="LIVE000001",
        )
        from_test = await api.client.get("/momo/LiveOnly12345", headers=keys.test)
        unknown = await api.client.get("/momo/NeverSeen1234", headers=keys.test)
        assert_shape_b(from_test, 404, "Not Found")
        assert_indistinguishable(from_test, unknown)
        assert b"LIVE000001" not in from_test.content

    async def test_a_live_key_never_sees_a_test_transaction(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await api.client.post("/sandbox/momo", headers=keys.test)
        transaction_id = created.json()["transactionId"]
        succeeded = await api.client.post(
            f"/sandbox/momo/{transaction_id}/succeed", headers=keys.test
        )
        confirmation = succeeded.json()["confirmationID"]
        # Live lookups go to the provider connector (503 shape A while it is not configured);
        # whatever it answers, it is never the test transaction.
        from_live = await api.client.get(f"/momo/{transaction_id}", headers=keys.live)
        assert from_live.status_code != 200
        assert confirmation.encode() not in from_live.content
        assert b"Successful" not in from_live.content
