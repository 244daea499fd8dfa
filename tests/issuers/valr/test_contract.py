"""The VALR connector against the VALR simulator over real loopback HTTP.

VALR has no order API and no notifications, so the contract is: a link built locally, the
payer (or ``/_control``) adding credits to the account's VALR Pay history, and polling that
history with signed requests. Notification tests do not apply: ``verify_notification`` refuses
everything, and nothing is ever delivered.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr

from payrelay.issuers.base import (
    InvalidNotification,
    IssuerTimeout,
    IssuerUnavailable,
    OrderOpened,
    OrderRequest,
    OrderState,
)
from payrelay.issuers.simkit import Simulator, SimulatorConfig
from payrelay.issuers.valr import ValrConnector, ValrCredentials
from payrelay.issuers.valr.simulator import create_simulator
from payrelay.issuers.valr.wire import ValrApiError
from tests.issuers.valr.support import API_KEY, API_SECRET, PAY_ID, make_order, signed
from tests.servers import serve_app


@dataclass
class Valr:
    base_url: str
    client: httpx.AsyncClient
    simulator: Simulator

    def connector(
        self, *, secret: str = API_SECRET, key: str = API_KEY, **options: Any
    ) -> ValrConnector:
        return ValrConnector(
            ValrCredentials(key, SecretStr(secret), options.pop("subaccount_id", "")),
            base_url=options.pop("base_url", self.base_url),
            client=self.client,
            pay_url=f"{self.base_url}/payments/send",
            append_return_urls=options.pop("append_return_urls", True),
            **options,
        )

    async def control(self, path: str, body: Any = None) -> httpx.Response:
        return await self.client.post(f"{self.base_url}/_control{path}", json=body)

    async def credit(self, order: OrderRequest, **fields: Any) -> dict[str, Any]:
        body = {
            "payId": order.issuer_merchant_id,
            "amount": format(order.pay_amount, "f"),
            "currency": order.pay_currency,
            "note": order.trade_no,
        }
        body.update(fields)
        answer = await self.control("/credits", body)
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()
        return result


@pytest.fixture
async def valr(http: httpx.AsyncClient) -> AsyncIterator[Valr]:
    config = SimulatorConfig(API_KEY, API_SECRET)
    simulator = create_simulator(config, notify_client=http, pay_id=PAY_ID)
    async with serve_app(simulator.app) as base_url:
        yield Valr(base_url, http, simulator)


async def open_order(valr: Valr, order: OrderRequest) -> OrderOpened:
    opened = await valr.connector().create_order(order)
    assert isinstance(opened, OrderOpened)
    return opened


async def press(valr: Valr, link: str, button: str) -> httpx.Response:
    """What a payer's browser does: open the page, press a button (no redirect following)."""
    page = await valr.client.get(link)
    assert page.status_code == 200
    action = re.search(rf'action="([^"]+)"><button id="{button}"', page.text)
    assert action is not None
    target = urljoin(link, action.group(1).replace("&amp;", "&"))
    return await valr.client.post(target)


class TestCreate:
    async def test_link_is_the_simulator_pay_page_and_no_call_is_made(self, valr: Valr) -> None:
        await valr.control("/faults", {"fail_next": 1})
        order = make_order()
        opened = await open_order(valr, order)
        assert opened.issuer_order_id == order.trade_no
        assert opened.link.startswith(f"{valr.base_url}/payments/send?payId={PAY_ID}&amount=10.00")
        faults = await valr.control("/faults", {})
        assert faults.json()["fail_next"] == 1  # create never reached VALR

    async def test_live_link_has_no_return_urls(self, valr: Valr) -> None:
        connector = ValrConnector(
            ValrCredentials(API_KEY, SecretStr(API_SECRET)),
            base_url=valr.base_url,
            client=valr.client,
        )
        opened = await connector.create_order(make_order())
        assert isinstance(opened, OrderOpened)
        assert opened.link.startswith("https://www.valr.com/payments/send?payId=")
        assert "successUrl" not in opened.link

    async def test_reject_next_has_nothing_to_refuse(self, valr: Valr) -> None:
        await valr.control("/faults", {"reject_next": 1})
        assert isinstance(await valr.connector().create_order(make_order()), OrderOpened)

    async def test_same_trade_no_twice_is_the_same_order_and_is_adopted(self, valr: Valr) -> None:
        order = make_order()
        first = await open_order(valr, order)
        again = await open_order(valr, order)
        assert again == first
        await valr.control("/expect", {"link": first.link})
        await valr.control(f"/orders/{order.trade_no}/pay")
        report = await valr.connector().query_order(order, again.issuer_order_id)
        assert report.state is OrderState.PAID
        assert len(report.payments) == 1


class TestLifecycle:
    async def test_fresh_order_is_pending(self, valr: Valr) -> None:
        order = make_order()
        opened = await open_order(valr, order)
        report = await valr.connector().query_order(order, opened.issuer_order_id)
        assert report.state is OrderState.PENDING
        assert report.raw_status == "NO_CREDIT"
        assert report.issuer_order_id == order.trade_no

    async def test_pay_via_control(self, valr: Valr) -> None:
        order = make_order()
        opened = await open_order(valr, order)
        expected = await valr.control(
            "/expect",
            {"payId": PAY_ID, "amount": "10.00", "currency": "USDC", "note": order.trade_no},
        )
        assert expected.status_code == 200
        settled = await valr.control(f"/orders/{order.trade_no}/pay")
        assert settled.status_code == 200
        assert settled.json()["credit"]["status"] == "COMPLETE"
        report = await valr.connector().query_order(order, opened.issuer_order_id)
        assert report.state is OrderState.PAID
        (payment,) = report.payments
        assert payment.amount == Decimal("10.00")
        assert isinstance(payment.amount, Decimal)
        assert payment.currency == "USDC"
        assert payment.payment_id == settled.json()["credit"]["transactionId"]
        assert payment.paid_at is not None

    async def test_control_pay_needs_a_link_seen(self, valr: Valr) -> None:
        answer = await valr.control(f"/orders/{make_order().trade_no}/pay")
        assert answer.status_code == 404

    async def test_pay_in_the_page(self, valr: Valr) -> None:
        order = make_order()
        opened = await open_order(valr, order)
        page = await valr.client.get(opened.link)
        assert '<p id="amount">10.00 USDC</p>' in page.text
        assert order.trade_no in page.text
        answer = await press(valr, opened.link, "pay")
        assert answer.status_code == 303
        assert answer.headers["location"] == order.success_url
        report = await valr.connector().query_order(order, opened.issuer_order_id)
        assert report.state is OrderState.PAID

    async def test_opening_the_page_lets_control_pay(self, valr: Valr) -> None:
        order = make_order()
        opened = await open_order(valr, order)
        await valr.client.get(opened.link)
        assert (await valr.control(f"/orders/{order.trade_no}/pay")).status_code == 200
        report = await valr.connector().query_order(order, None)
        assert report.state is OrderState.PAID

    async def test_decline_in_the_page(self, valr: Valr) -> None:
        order = make_order()
        opened = await open_order(valr, order)
        answer = await press(valr, opened.link, "decline")
        assert answer.status_code == 303
        assert answer.headers["location"] == order.failed_url
        report = await valr.connector().query_order(order, opened.issuer_order_id)
        assert report.state is OrderState.FAILED
        assert report.raw_status == "FAILED"

    async def test_page_without_return_urls_ends_on_its_own_page(self, valr: Valr) -> None:
        order = make_order()
        link = valr.connector(append_return_urls=False)
        opened = await link.create_order(order)
        assert isinstance(opened, OrderOpened)
        answer = await press(valr, opened.link, "pay")
        assert answer.status_code == 303
        done = await valr.client.get(urljoin(str(answer.url), answer.headers["location"]))
        assert 'id="status">This order is complete.' in done.text

    async def test_decline_via_control(self, valr: Valr) -> None:
        order = make_order()
        opened = await open_order(valr, order)
        await valr.control("/expect", {"link": opened.link})
        await valr.control(f"/orders/{order.trade_no}/decline")
        report = await valr.connector().query_order(order, opened.issuer_order_id)
        assert report.state is OrderState.FAILED

    async def test_expire_changes_nothing_on_valr(self, valr: Valr) -> None:
        order = make_order()
        opened = await open_order(valr, order)
        answer = await valr.control(f"/orders/{order.trade_no}/expire")
        assert answer.status_code == 200
        assert "no order expiry" in answer.json()["note"]
        report = await valr.connector().query_order(order, opened.issuer_order_id)
        assert report.state is OrderState.PENDING

    async def test_an_expired_credit_is_expired(self, valr: Valr) -> None:
        order = make_order()
        await valr.credit(order, status="EXPIRED")
        report = await valr.connector().query_order(order, None)
        assert report.state is OrderState.EXPIRED

    async def test_late_payment_still_pays(self, valr: Valr) -> None:
        order = make_order(expires_at=datetime.now(UTC) - timedelta(hours=1))
        await valr.credit(order)
        assert (await valr.connector().query_order(order, None)).state is OrderState.PAID

    async def test_duplicate_payment_is_two_payments(self, valr: Valr) -> None:
        order = make_order()
        opened = await open_order(valr, order)
        await press(valr, opened.link, "pay")
        await press(valr, opened.link, "pay")
        report = await valr.connector().query_order(order, opened.issuer_order_id)
        assert report.state is OrderState.PAID
        assert len({p.payment_id for p in report.payments}) == 2
        assert report.raw_status == "COMPLETE;COMPLETE"

    async def test_underpayment_is_surfaced_not_paid(self, valr: Valr) -> None:
        order = make_order()
        await valr.credit(order, amount="9.50")
        report = await valr.connector().query_order(order, None)
        assert report.state is OrderState.PENDING
        assert report.raw_status == "UNDERPAID:9.50"
        assert report.payments == ()

    async def test_overpayment_is_paid(self, valr: Valr) -> None:
        order = make_order()
        await valr.credit(order, amount=12.5)
        report = await valr.connector().query_order(order, None)
        assert report.state is OrderState.PAID
        assert report.payments[0].amount == Decimal("12.5")

    async def test_wrong_currency_debit_and_other_case_do_not_pay(self, valr: Valr) -> None:
        order = make_order()
        await valr.credit(order, currency="USDT")
        await valr.credit(order, type="DEBIT")
        await valr.credit(order, note=order.trade_no.upper())
        report = await valr.connector().query_order(order, None)
        assert report.state is OrderState.PENDING
        assert report.raw_status == "NO_CREDIT"

    async def test_missing_status_is_looked_up_by_transaction_id(self, valr: Valr) -> None:
        order = make_order()
        credit = await valr.credit(order, hideStatus=True)
        assert "status" not in credit
        report = await valr.connector().query_order(order, None)
        assert report.state is OrderState.PAID
        assert report.payments[0].payment_id == credit["transactionId"]


class TestPaging:
    async def test_credit_behind_newer_pages_is_found(self, valr: Valr) -> None:
        order = make_order()
        await valr.credit(order, timestamp=_ago(minutes=5))
        for index in range(11):
            await valr.credit(make_order(f"other-{index}"))
        report = await valr.connector(page_size=5).query_order(order, None)
        assert report.state is OrderState.PAID

    async def test_paging_stops_at_entries_older_than_any_order(self, valr: Valr) -> None:
        order = make_order()
        await valr.credit(order, timestamp="1998-01-01T00:00:00Z")  # page 3: never read
        await valr.credit(make_order("older"), timestamp="1999-01-01T00:00:00Z")
        for index in range(3):
            await valr.credit(make_order(f"recent-{index}"))
        connector = valr.connector(page_size=2, max_order_lifetime=timedelta(days=1))
        report = await connector.query_order(order, None)
        assert report.state is OrderState.PENDING
        assert report.raw_status == "NO_CREDIT"

    async def test_page_cap_says_truncated(self, valr: Valr) -> None:
        order = make_order()
        await valr.credit(order, timestamp=_ago(minutes=5))
        for index in range(2):
            await valr.credit(make_order(f"recent-{index}"))
        report = await valr.connector(page_size=2, max_pages=1).query_order(order, None)
        assert report.state is OrderState.PENDING
        assert report.raw_status == "HISTORY_TRUNCATED"

    async def test_history_amounts_are_json_numbers(self, valr: Valr) -> None:
        order = make_order()
        await valr.credit(order, amount="10.10")
        path = "/v1/pay/history?skip=0&limit=10"
        raw = await valr.client.get(valr.base_url + path, headers=signed(path))
        assert raw.status_code == 200
        assert '"amount":10.10' in raw.text


class TestNoNotifications:
    async def test_capabilities(self, valr: Valr) -> None:
        connector = valr.connector()
        assert connector.pushes_notifications is False
        assert connector.supports_close is False
        assert await connector.close_order(make_order(), None) is False
        assert connector.acknowledgement().status_code == 200

    async def test_every_notification_is_refused(self, valr: Valr) -> None:
        with pytest.raises(InvalidNotification, match="VALR sends no notifications"):
            await valr.connector().verify_notification({}, b'{"status":"COMPLETE"}')

    async def test_nothing_is_ever_delivered(self, valr: Valr) -> None:
        order = make_order()
        opened = await open_order(valr, order)
        await press(valr, opened.link, "pay")
        sent = await valr.client.get(f"{valr.base_url}/_control/notifications")
        assert sent.json() == {"sent": [], "held": 0}


class TestFaults:
    async def test_wrong_secret_gets_valrs_invalid_signature(self, valr: Valr) -> None:
        connector = valr.connector(secret="0" * 64)
        with pytest.raises(ValrApiError) as caught:
            await connector.query_order(make_order(), None)
        error = caught.value
        assert isinstance(error, IssuerUnavailable)
        assert (error.status_code, error.code, error.message) == (
            401,
            -11252,
            "Request has an invalid signature",
        )

    async def test_unknown_key(self, valr: Valr) -> None:
        with pytest.raises(ValrApiError) as caught:
            await valr.connector(key="someone-else").query_order(make_order(), None)
        assert (caught.value.status_code, caught.value.code) == (401, -11251)

    async def test_stale_timestamp(self, valr: Valr) -> None:
        def an_hour_ago() -> int:
            return int(time.time() * 1000) - 3_600_000

        with pytest.raises(ValrApiError) as caught:
            await valr.connector(clock_ms=an_hour_ago).query_order(make_order(), None)
        assert (caught.value.status_code, caught.value.code) == (401, -11252)

    async def test_missing_content_type_is_403(self, valr: Valr) -> None:
        path = "/v1/pay/payid"
        headers = {k: v for k, v in signed(path).items() if k != "Content-Type"}
        answer = await valr.client.get(valr.base_url + path, headers=headers)
        assert answer.status_code == 403

    async def test_fail_next(self, valr: Valr) -> None:
        await valr.control("/faults", {"fail_next": 1})
        with pytest.raises(IssuerUnavailable, match="HTTP 500"):
            await valr.connector().query_order(make_order(), None)
        report = await valr.connector().query_order(make_order(), None)
        assert report.state is OrderState.PENDING

    async def test_hang_next_is_a_timeout(self, valr: Valr) -> None:
        await valr.control("/faults", {"hang_next": 1})
        connector = valr.connector(timeout=httpx.Timeout(0.3))
        with pytest.raises(IssuerTimeout):
            await connector.query_order(make_order(), None)
        report = await valr.connector().query_order(make_order(), None)
        assert report.state is OrderState.PENDING

    async def test_nothing_listening(self, http: httpx.AsyncClient) -> None:
        connector = ValrConnector(
            ValrCredentials(API_KEY, SecretStr(API_SECRET)),
            base_url="http://127.0.0.1:9",
            client=http,
        )
        with pytest.raises(IssuerUnavailable):
            await connector.query_order(make_order(), None)

    async def test_secret_is_not_in_the_repr(self) -> None:
        assert API_SECRET not in repr(ValrCredentials(API_KEY, SecretStr(API_SECRET)))


class TestOtherEndpoints:
    async def test_pay_id(self, valr: Valr) -> None:
        path = "/v1/pay/payid"
        answer = await valr.client.get(valr.base_url + path, headers=signed(path))
        assert answer.json() == {"payId": PAY_ID}

    async def test_lookups(self, valr: Valr) -> None:
        credit = await valr.credit(make_order())
        path = f"/v1/pay/transactionid/{credit['transactionId']}"
        lookup = (await valr.client.get(valr.base_url + path, headers=signed(path))).json()
        assert lookup == {
            "amount": "10.00",
            "currency": "USDC",
            "timestamp": credit["timestamp"],
            "transactionId": credit["transactionId"],
            "status": "COMPLETE",
            "direction": "RECEIVE",
        }
        path = f"/v1/pay/identifier/{credit['identifier']}"
        item = (await valr.client.get(valr.base_url + path, headers=signed(path))).json()
        assert item["transactionId"] == credit["transactionId"]
        assert item["type"] == "CREDIT"

    async def test_unknown_payment(self, valr: Valr) -> None:
        path = "/v1/pay/transactionid/1"
        answer = await valr.client.get(valr.base_url + path, headers=signed(path))
        assert answer.status_code == 400
        assert answer.json() == {"code": -15407, "message": "Cannot find payment"}

    async def test_subaccount_header_is_signed(self, valr: Valr) -> None:
        order = make_order()
        await valr.credit(order)
        report = await valr.connector(subaccount_id="12345").query_order(order, None)
        assert report.state is OrderState.PAID

    async def test_mounted_under_a_prefix(self, http: httpx.AsyncClient) -> None:
        simulator = create_simulator(SimulatorConfig(API_KEY, API_SECRET), notify_client=http)
        parent = FastAPI()
        parent.mount("/simulators/valr", simulator.app)
        async with serve_app(parent) as base_url:
            mounted = Valr(f"{base_url}/simulators/valr", http, simulator)
            order = make_order()
            opened = await open_order(mounted, order)
            answer = await press(mounted, opened.link, "pay")
            assert answer.headers["location"] == order.success_url
            report = await mounted.connector().query_order(order, None)
            assert report.state is OrderState.PAID


def _ago(**delta: float) -> str:
    return (datetime.now(UTC) - timedelta(**delta)).isoformat()
