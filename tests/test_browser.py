"""The sandbox checkout in a real headless Chromium against a real `payrelay serve`, on both stores.

The payer opens the link, sees the payment, presses Pay (or Decline) and lands on the merchant's
own page, served here by a tiny HTTP receiver on a loopback port; payment-status then answers
processed (or failed).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, async_playwright

from payrelay.auth.keys import Mode
from payrelay.db.engine import Database
from payrelay.merchants import service as merchants
from tests.factories import transfer_body
from tests.harness import KEY_SECRET, start_server, stop_server

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Hit:
    path: str
    headers: dict[str, str]


class Receiver:
    """The merchant's website: records every request and answers a small HTML page."""

    def __init__(self) -> None:
        self.hits: list[Hit] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(Hit(self.path, {k.lower(): v for k, v in self.headers.items()}))
                body = f"<!doctype html><title>Shop</title><h1 id='landed'>{self.path}</h1>"
                payload = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@dataclass(frozen=True)
class Served:
    base_url: str
    database: Database


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


@pytest.fixture(scope="module")
async def served(store_url: str, store: Database) -> AsyncIterator[Served]:
    """A real `payrelay serve` subprocess on this store."""
    process, base_url = await asyncio.to_thread(start_server, store_url)
    try:
        yield Served(base_url, store)
    finally:
        await asyncio.to_thread(stop_server, process)


@pytest.fixture(scope="module")
async def browser(chromium_path: str) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            await launched.close()


async def merchant_with_test_key(database: Database, name: str) -> str:
    merchant = await merchants.create_merchant(database, name)
    issued = await merchants.create_key(database, KEY_SECRET.encode(), merchant.id, Mode.TEST)
    return issued.key


async def create_transfer(
    served: Served, key: str, receiver: Receiver, **overrides: Any
) -> dict[str, Any]:
    body = transfer_body(
        successUrl=f"{receiver.base_url}/shop/success?order=42",
        failedUrl=f"{receiver.base_url}/shop/failed?order=42",
        **overrides,
    )
    async with httpx.AsyncClient(base_url=served.base_url, timeout=10) as client:
        response = await client.post(
            "/tx/createTransferRequest",
            json=body,
            headers={"Authorization": f"Bearer {key}"},
        )
    assert response.status_code == 200, response.text
    link: str = response.json()["link"]
    assert link.startswith(f"{served.base_url}/sandbox/checkout/")
    return {**body, "link": link}


async def payment_status(served: Served, key: str, reference: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=served.base_url, timeout=10) as client:
        response = await client.get(
            f"/tx/payment-status/{reference}", headers={"Authorization": f"Bearer {key}"}
        )
    assert response.status_code == 200, response.text
    return dict(response.json())


class TestCheckoutInChromium:
    @pytest.mark.parametrize(
        ("button", "landing", "final"),
        [
            ("pay", "/shop/success?order=42", "processed"),
            ("decline", "/shop/failed?order=42", "failed"),
        ],
    )
    async def test_press_a_button_and_land_on_the_merchants_page(
        self,
        served: Served,
        browser: Browser,
        receiver: Receiver,
        tmp_path: Path,
        button: str,
        landing: str,
        final: str,
    ) -> None:
        key = await merchant_with_test_key(served.database, "Kalahari Socks")
        transfer = await create_transfer(
            served, key, receiver, amount=149.90, description="Two pairs of socks", issuer="Valr"
        )
        context = await browser.new_context()
        page = await context.new_page()
        problems: list[str] = []
        page.on(
            "console",
            lambda message: (
                problems.append(message.text) if "Content Security Policy" in message.text else None
            ),
        )
        page.on("pageerror", lambda error: problems.append(str(error)))
        try:
            response = await page.goto(transfer["link"])
            assert response is not None
            assert response.status == 200
            assert await page.title() == "payrelay sandbox checkout"
            assert (await page.inner_text("#merchant")).strip() == "Kalahari Socks"
            assert (await page.inner_text("#amount")).strip() == "R 149.90"
            assert (await page.inner_text("#description")).strip() == "Two pairs of socks"
            assert (await page.inner_text("#issuer")).strip() == "Valr"
            assert await page.is_visible("#pay")
            assert await page.is_visible("#decline")

            screenshot = tmp_path / f"checkout-{button}.png"
            await page.screenshot(path=str(screenshot), full_page=True)
            assert screenshot.read_bytes()[:8] == PNG_MAGIC
            assert screenshot.stat().st_size > 5_000

            before = len(receiver.hits)
            async with page.expect_navigation(url=f"{receiver.base_url}{landing}"):
                await page.click(f"#{button}")
            assert page.url == f"{receiver.base_url}{landing}"
            assert (await page.inner_text("#landed")).strip() == landing
            landed = [hit for hit in receiver.hits[before:] if hit.path == landing]
            assert len(landed) == 1, receiver.hits
            # Referrer-Policy: no-referrer keeps the checkout address from the merchant's logs.
            assert "referer" not in landed[0].headers

            status = await payment_status(served, key, transfer["reference"])
            assert status["status"] == final
            assert status["amount"] == 149.90

            # Back on the checkout page the payment shows as settled, with nothing to press.
            await page.goto(transfer["link"])
            assert final in await page.inner_text("#status")
            assert await page.query_selector("#pay") is None
            assert await page.query_selector("#decline") is None
            assert problems == []
        finally:
            await context.close()

    async def test_malicious_description_does_not_run(
        self, served: Served, browser: Browser, receiver: Receiver
    ) -> None:
        key = await merchant_with_test_key(served.database, "Shop")
        description = "<img src=x onerror=\"document.title='pwned'\"><script>alert(1)</script>"
        transfer = await create_transfer(served, key, receiver, description=description)
        context = await browser.new_context()
        page = await context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: dialogs.append(dialog.message))
        try:
            await page.goto(transfer["link"])
            assert (await page.inner_text("#description")).strip() == description
            assert await page.query_selector("#description img") is None
            assert await page.query_selector("#description script") is None
            assert await page.title() == "payrelay sandbox checkout"
            assert dialogs == []
        finally:
            await context.close()
