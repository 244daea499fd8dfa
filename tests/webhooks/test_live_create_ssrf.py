"""Live mode refuses a webhookUrl that could reach an internal address, at create time (400).

The live rate provider and Binance point at a closed loopback port: a URL that passes the SSRF
check goes on to pricing and fails there (503), which shows the check let it through. No traffic
leaves the machine: the webhook itself is never called at create time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from payrelay.app import create_app
from payrelay.auth.keys import Mode
from payrelay.merchants import service as merchants
from tests.conftest import INPROC_BASE_URL, make_settings
from tests.factories import transfer_body
from tests.harness import KEY_SECRET


@pytest.fixture(scope="module")
async def live_client(store_url: str) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    settings = make_settings(
        store_url,
        binance_api_key="live-key",
        binance_api_secret="live-secret",
        binance_base_url="http://127.0.0.1:9",
        rate_provider_url="http://127.0.0.1:9",
        webhook_allowlist="10.1.0.0/16",
    )
    app = create_app(settings, run_workers=False)
    async with app.router.lifespan_context(app):
        database = app.state.context.database
        merchant, _ = await merchants.onboard(database, KEY_SECRET.encode(), "Live shop")
        key = await merchants.create_key(database, KEY_SECRET.encode(), merchant.id, Mode.LIVE)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=INPROC_BASE_URL) as client:
            yield client, {"Authorization": f"Bearer {key.key}"}


REFUSED = [
    "http://shop.example/hook",
    "https://127.0.0.1/hook",
    "https://2130706433/hook",
    "https://0x7f.1/hook",
    "https://0177.0.0.1/hook",
    "https://10.0.0.5/hook",
    "https://192.168.1.10/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://localhost/hook",
]


@pytest.mark.parametrize("url", REFUSED)
async def test_internal_webhook_urls_are_refused(live_client: Any, url: str) -> None:
    client, headers = live_client
    body = transfer_body(webhookUrl=url)
    response = await client.post("/tx/createTransferRequest", json=body, headers=headers)
    assert response.status_code == 400, response.text
    assert set(response.json()["details"]) == {"webhookUrl"}


@pytest.mark.parametrize("url", ["https://93.184.216.34/hook", "https://10.1.2.3/hook"])
async def test_public_and_allowlisted_urls_pass_the_check(live_client: Any, url: str) -> None:
    client, headers = live_client
    body = transfer_body(webhookUrl=url)
    response = await client.post("/tx/createTransferRequest", json=body, headers=headers)
    # Past the SSRF check, the (closed) live rate provider is what fails.
    assert response.status_code == 503, response.text
    assert "rate" in response.json()["message"]
