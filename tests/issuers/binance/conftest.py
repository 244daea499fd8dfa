"""A Binance Pay simulator and a notification receiver, both on real loopback ports."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from payrelay.issuers.binance import BinanceConnector, create_simulator
from payrelay.issuers.simkit import SimulatorConfig
from tests.issuers.binance.support import (
    API_KEY,
    API_SECRET,
    LateApp,
    Receiver,
    Stack,
    credentials,
)
from tests.servers import serve_app


@pytest.fixture(scope="module")
async def stack() -> AsyncIterator[Stack]:
    calls: list[str] = []

    async def record(request: httpx.Request) -> None:
        calls.append(str(request.url))

    late, receiver = LateApp(), Receiver()
    async with (
        httpx.AsyncClient() as http,
        httpx.AsyncClient(event_hooks={"request": [record]}) as connector_http,
        serve_app(late) as sim_url,
        serve_app(receiver.app()) as receiver_url,
    ):
        config = SimulatorConfig(API_KEY, API_SECRET, public_base_url=sim_url)
        simulator = create_simulator(config, notify_client=http)
        late.target = simulator.app
        connector = BinanceConnector(
            credentials(),
            base_url=sim_url,
            client=connector_http,
            certificate_refetch_interval=0.0,
        )
        receiver.connector = connector
        yield Stack(sim_url, f"{receiver_url}/notify", simulator, connector, receiver, http, calls)


@pytest.fixture
async def fresh(stack: Stack) -> None:
    await stack.control("faults/reset")
    stack.receiver.clear()
