"""The sandbox: the payer's checkout page, its Pay and Decline forms, and the test-key API."""

from __future__ import annotations

import asyncio
import re
from decimal import Decimal
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from payrelay.db.models import Transfer, TransferTransition
from tests.factories import raw_json, transfer_body
from tests.harness import Harness, MerchantKeys
from tests.sandbox_support import CreatedTransfer, assert_shape_c, create_transfer

ISO_UTC = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z")


class PageText(HTMLParser):
    """Collects the text of every element with an id, the buttons, and the form actions."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.by_id: dict[str, str] = {}
        self.buttons: list[str] = []
        self.forms: list[tuple[str, str]] = []
        self.scripts = 0
        self._open: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "form":
            self.forms.append(((values.get("method") or "").lower(), values.get("action") or ""))
        element_id = values.get("id")
        if tag == "button":
            self.buttons.append(element_id or "")
        if tag not in {"meta", "br", "img", "input", "link"}:
            self._open.append(element_id)
            if element_id is not None:
                self.by_id[element_id] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag not in {"meta", "br", "img", "input", "link"} and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for element_id in self._open:
            if element_id is not None:
                self.by_id[element_id] += data


def parse(page: str) -> PageText:
    parser = PageText()
    parser.feed(page)
    parser.close()
    return parser


async def open_checkout(api: Harness, created: CreatedTransfer) -> tuple[httpx.Response, PageText]:
    response = await api.client.get(created.checkout_path)
    assert response.status_code == 200, response.text
    return response, parse(response.text)


async def status_of(api: Harness, keys: MerchantKeys, reference: str) -> dict[str, Any]:
    response = await api.client.get(f"/tx/payment-status/{reference}", headers=keys.test)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def stored(api: Harness, created: CreatedTransfer) -> tuple[Transfer, list[str]]:
    async with api.database.read() as session:
        transfer = (
            await session.scalars(select(Transfer).where(Transfer.id == created.checkout_id))
        ).one()
        causes = list(
            await session.scalars(
                select(TransferTransition.to_status)
                .where(TransferTransition.transfer_id == transfer.id)
                .order_by(TransferTransition.id)
            )
        )
    return transfer, causes


class TestCheckoutPage:
    async def test_link_points_at_the_checkout_page(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        assert created.link == f"{api.base_url}/sandbox/checkout/{created.checkout_id}"

    async def test_shows_merchant_amount_description_issuer_and_buttons(self, api: Harness) -> None:
        keys = await api.merchant("Kalahari Socks")
        created = await create_transfer(
            api.client, keys, amount=149.90, description="Two pairs of socks", issuer="Bybit"
        )
        response, page = await open_checkout(api, created)
        assert response.headers["content-type"].startswith("text/html")
        assert page.by_id["merchant"] == "Kalahari Socks"
        assert page.by_id["amount"].strip() == "R 149.90"
        assert page.by_id["description"] == "Two pairs of socks"
        assert page.by_id["issuer"] == "Bybit"
        assert page.by_id["reference"] == created.reference
        assert page.by_id["pay"] == "Pay"
        assert page.by_id["decline"] == "Decline"
        assert page.buttons == ["pay", "decline"]
        assert page.forms == [
            ("post", f"{created.checkout_path}/pay"),
            ("post", f"{created.checkout_path}/decline"),
        ]
        assert "status" not in page.by_id

    @pytest.mark.parametrize(
        ("amount", "shown"),
        [("0.1", "0.10"), ("0.01", "0.01"), ("100", "100.00"), ("1000000.00", "1,000,000.00")],
    )
    async def test_amount_is_shown_to_the_cent(self, api: Harness, amount: str, shown: str) -> None:
        keys = await api.merchant()
        body = transfer_body()
        response = await api.client.post(
            "/tx/createTransferRequest",
            content=raw_json(body, amount=amount),
            headers={**keys.test, "Content-Type": "application/json"},
        )
        assert response.status_code == 200, response.text
        _, page = await open_checkout(api, CreatedTransfer(body, response.json()["link"]))
        assert page.by_id["amount"].strip() == f"R {shown}"

    async def test_description_is_html_escaped(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys, description="<script>alert(1)</script>")
        response, page = await open_checkout(api, created)
        assert "<script>alert(1)</script>" not in response.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text
        assert page.scripts == 0
        assert page.by_id["description"] == "<script>alert(1)</script>"

    async def test_merchant_name_and_other_fields_are_html_escaped(self, api: Harness) -> None:
        keys = await api.merchant('Evil "><img src=x onerror=alert(1)>')
        created = await create_transfer(
            api.client,
            keys,
            description="a & b \"quoted\" 'single'",
            reference="ref-<b>bold</b>-x",
        )
        response, page = await open_checkout(api, created)
        assert "<img" not in response.text
        assert "<b>bold</b>" not in response.text
        assert page.by_id["merchant"] == 'Evil "><img src=x onerror=alert(1)>'
        assert page.by_id["description"] == "a & b \"quoted\" 'single'"
        assert page.by_id["reference"] == "ref-<b>bold</b>-x"

    async def test_placeholders_in_values_are_shown_literally(self, api: Harness) -> None:
        keys = await api.merchant("Shop $amount")
        created = await create_transfer(
            api.client, keys, description="$merchant {issuer} ${actions} %s {}"
        )
        _, page = await open_checkout(api, created)
        assert page.by_id["merchant"] == "Shop $amount"
        assert page.by_id["description"] == "$merchant {issuer} ${actions} %s {}"
        assert page.buttons == ["pay", "decline"]

    async def test_unicode_is_shown_as_sent(self, api: Harness) -> None:
        keys = await api.merchant("Café Ωmega 🙂")
        created = await create_transfer(api.client, keys, description="Bølle — 2\u00d7 Ü")
        response, page = await open_checkout(api, created)
        assert "charset=utf-8" in response.headers["content-type"]
        assert page.by_id["merchant"] == "Café Ωmega 🙂"
        assert page.by_id["description"] == "Bølle — 2\u00d7 Ü"

    async def test_has_a_strict_content_security_policy(self, api: Harness) -> None:
        keys = await api.merchant()
        response, _ = await open_checkout(api, await create_transfer(api.client, keys))
        policy = response.headers["content-security-policy"]
        directives = {part.strip().split(" ", 1)[0] for part in policy.split(";")}
        assert "default-src 'none'" in policy
        assert "frame-ancestors 'none'" in policy
        assert (
            "script-src" not in directives
            or "'unsafe-inline'" not in policy.split("script-src", 1)[1].split(";", 1)[0]
        )
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["x-request-id"]

    async def test_needs_no_api_key(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        response = await api.client.get(
            created.checkout_path, headers={"Authorization": "Bearer nonsense"}
        )
        assert response.status_code == 200

    @pytest.mark.parametrize(
        "checkout_id",
        ["tr_doesnotexist000000000000", "nope", "%2E%2E", "tr_x%0A", "%C3%A9", "a" * 300],
    )
    async def test_unknown_id_is_404_shape_c(self, api: Harness, checkout_id: str) -> None:
        response = await api.client.get(f"/sandbox/checkout/{checkout_id}")
        assert_shape_c(response, 404)

    async def test_reference_is_not_a_checkout_id(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        assert_shape_c(await api.client.get(f"/sandbox/checkout/{created.reference}"), 404)


class TestCheckoutForms:
    async def test_pay_redirects_to_success_url_and_processes(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(
            api.client, keys, successUrl="https://shop.example/thanks?order=42"
        )
        response = await api.client.post(f"{created.checkout_path}/pay")
        assert response.status_code == 303, response.text
        assert response.headers["location"] == "https://shop.example/thanks?order=42"
        status = await status_of(api, keys, created.reference)
        assert status["status"] == "processed"
        assert ISO_UTC.fullmatch(status["timestamp"])
        assert Decimal(str(status["amount"])) == Decimal("149.90")

    async def test_decline_redirects_to_failed_url_and_fails(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(
            api.client, keys, failedUrl="https://shop.example/sorry?order=42"
        )
        response = await api.client.post(f"{created.checkout_path}/decline")
        assert response.status_code == 303, response.text
        assert response.headers["location"] == "https://shop.example/sorry?order=42"
        assert (await status_of(api, keys, created.reference))["status"] == "failed"

    async def test_form_encoded_post_like_a_browser(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        response = await api.client.post(
            f"{created.checkout_path}/pay",
            content=b"",
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "Origin": api.base_url,
            },
        )
        assert response.status_code == 303
        assert response.headers["location"] == created.body["successUrl"]

    async def test_pressing_pay_twice_is_harmless(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        first = await api.client.post(f"{created.checkout_path}/pay")
        before = await status_of(api, keys, created.reference)
        second = await api.client.post(f"{created.checkout_path}/pay")
        assert first.status_code == second.status_code == 303
        assert first.headers["location"] == second.headers["location"] == "https://shop.example/ok"
        assert await status_of(api, keys, created.reference) == before
        transfer, history = await stored(api, created)
        assert transfer.status == "processed"
        assert transfer.payment_count == 1
        assert history == ["pending", "processed"]

    async def test_pressing_decline_twice_is_harmless(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        for _ in range(2):
            response = await api.client.post(f"{created.checkout_path}/decline")
            assert response.status_code == 303
            assert response.headers["location"] == created.body["failedUrl"]
        _, history = await stored(api, created)
        assert history == ["pending", "failed"]

    async def test_concurrent_pay_presses_pay_once(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        responses = await asyncio.gather(
            *(api.client.post(f"{created.checkout_path}/pay") for _ in range(8))
        )
        assert {r.status_code for r in responses} == {303}, [r.text for r in responses]
        transfer, history = await stored(api, created)
        assert transfer.payment_count == 1
        assert history == ["pending", "processed"]

    async def test_decline_after_pay_does_not_undo_the_payment(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        await api.client.post(f"{created.checkout_path}/pay")
        response = await api.client.post(f"{created.checkout_path}/decline")
        assert response.headers.get("location") != created.body["failedUrl"]
        assert_shape_c(response, 409)
        assert (await status_of(api, keys, created.reference))["status"] == "processed"

    async def test_pay_after_decline_does_not_pay(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        await api.client.post(f"{created.checkout_path}/decline")
        response = await api.client.post(f"{created.checkout_path}/pay")
        assert response.headers.get("location") != created.body["successUrl"]
        assert_shape_c(response, 409)
        transfer, _ = await stored(api, created)
        assert transfer.status == "failed"
        assert transfer.payment_count == 0

    @pytest.mark.parametrize(("outcome", "final"), [("pay", "processed"), ("decline", "failed")])
    async def test_settled_page_shows_the_final_status_and_no_buttons(
        self, api: Harness, outcome: str, final: str
    ) -> None:
        keys = await api.merchant("Final Shop")
        created = await create_transfer(api.client, keys)
        await api.client.post(f"{created.checkout_path}/{outcome}")
        response, page = await open_checkout(api, created)
        assert page.buttons == []
        assert page.forms == []
        assert final in page.by_id["status"]
        assert page.by_id["merchant"] == "Final Shop"
        assert 'id="pay"' not in response.text

    async def test_unknown_checkout_cannot_be_paid(self, api: Harness) -> None:
        response = await api.client.post("/sandbox/checkout/tr_doesnotexist0000000000/pay")
        assert_shape_c(response, 404)

    async def test_unknown_outcome_is_refused(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        response = await api.client.post(f"{created.checkout_path}/refund")
        assert_shape_c(response, 400)
        assert (await status_of(api, keys, created.reference))["status"] == "pending"

    async def test_get_on_an_outcome_is_405(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        response = await api.client.get(f"{created.checkout_path}/pay")
        assert_shape_c(response, 405)
        assert (await status_of(api, keys, created.reference))["status"] == "pending"


class TestSandboxTransferApi:
    @pytest.mark.parametrize(("outcome", "final"), [("pay", "processed"), ("decline", "failed")])
    async def test_settles_and_answers_the_payment_status(
        self, api: Harness, outcome: str, final: str
    ) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys, amount=12.30)
        response = await api.client.post(
            f"/sandbox/transfers/{created.reference}/{outcome}", headers=keys.test
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) == {"status", "timestamp", "amount"}
        assert body["status"] == final
        assert ISO_UTC.fullmatch(body["timestamp"]), body
        assert b'"amount":12.30' in response.content
        assert await status_of(api, keys, created.reference) == body

    @pytest.mark.parametrize(
        ("first", "second"),
        [("pay", "pay"), ("pay", "decline"), ("decline", "decline"), ("decline", "pay")],
    )
    async def test_second_settle_is_409_shape_c(
        self, api: Harness, first: str, second: str
    ) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        path = f"/sandbox/transfers/{created.reference}"
        settled = await api.client.post(f"{path}/{first}", headers=keys.test)
        assert settled.status_code == 200, settled.text
        assert_shape_c(await api.client.post(f"{path}/{second}", headers=keys.test), 409)
        assert await status_of(api, keys, created.reference) == settled.json()

    async def test_concurrent_pays_settle_exactly_once(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        responses = await asyncio.gather(
            *(
                api.client.post(f"/sandbox/transfers/{created.reference}/pay", headers=keys.test)
                for _ in range(8)
            )
        )
        assert sorted(r.status_code for r in responses) == [200] + [409] * 7
        transfer, history = await stored(api, created)
        assert transfer.payment_count == 1
        assert history == ["pending", "processed"]

    async def test_live_key_is_403_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        response = await api.client.post(
            f"/sandbox/transfers/{created.reference}/pay", headers=keys.live
        )
        assert_shape_c(response, 403)
        assert (await status_of(api, keys, created.reference))["status"] == "pending"

    async def test_no_key_is_401_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        response = await api.client.post(f"/sandbox/transfers/{created.reference}/pay")
        assert_shape_c(response, 401)
        assert (await status_of(api, keys, created.reference))["status"] == "pending"

    async def test_unknown_reference_is_404_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.post(
            "/sandbox/transfers/ref-never-created-1/pay", headers=keys.test
        )
        assert_shape_c(response, 404)

    async def test_another_merchants_reference_is_404(self, api: Harness) -> None:
        owner, stranger = await api.merchant(), await api.merchant()
        created = await create_transfer(api.client, owner)
        foreign = await api.client.post(
            f"/sandbox/transfers/{created.reference}/pay", headers=stranger.test
        )
        unknown = await api.client.post(
            "/sandbox/transfers/ref-never-created-2/pay", headers=stranger.test
        )
        assert_shape_c(foreign, 404)
        assert foreign.json() == unknown.json()
        assert (await status_of(api, owner, created.reference))["status"] == "pending"

    async def test_unknown_outcome_is_400_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        response = await api.client.post(
            f"/sandbox/transfers/{created.reference}/refund", headers=keys.test
        )
        assert_shape_c(response, 400)
        assert (await status_of(api, keys, created.reference))["status"] == "pending"

    async def test_api_settlement_shows_on_the_checkout_page(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        await api.client.post(f"/sandbox/transfers/{created.reference}/pay", headers=keys.test)
        _, page = await open_checkout(api, created)
        assert page.buttons == []
        assert "processed" in page.by_id["status"]
        # A payer who still had the page open and presses Pay lands on successUrl.
        again = await api.client.post(f"{created.checkout_path}/pay")
        assert again.status_code == 303
        assert again.headers["location"] == created.body["successUrl"]

    async def test_answers_carry_no_store(self, api: Harness) -> None:
        keys = await api.merchant()
        created = await create_transfer(api.client, keys)
        response = await api.client.post(
            f"/sandbox/transfers/{created.reference}/pay", headers=keys.test
        )
        assert response.headers["cache-control"] == "no-store"
