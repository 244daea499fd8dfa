"""Build the connectors for a process from configuration, and the simulators test mode uses.

Test mode never touches a real exchange: each issuer's simulator is mounted in this server at
``/simulators/{issuer}``, and the test-mode connectors call it in-process through an ASGI
transport. The simulators deliver their signed notifications back into this app the same way,
so every test-mode payment travels the real connector path: signature, inbox, state change.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import SecretStr

from payrelay.auth.keys import Mode
from payrelay.config import Settings
from payrelay.issuers import binance, bybit, valr
from payrelay.issuers.base import Issuer, IssuerConnector
from payrelay.issuers.registry import ConnectorRegistry
from payrelay.issuers.simkit import Simulator, SimulatorConfig
from payrelay.issuers.valr.rates import ValrRateProvider
from payrelay.issuers.valr.simulator import create_simulator as create_valr_simulator


class TimedASGITransport(httpx.ASGITransport):
    """An in-process transport that honours the client's read timeout.

    httpx's ASGI transport ignores timeouts, so a hung simulator would hang payrelay with it;
    this keeps test mode's timeouts as real as live mode's.
    """

    def __init__(self, app: Any, timeout_seconds: float) -> None:
        super().__init__(app=app)
        self.timeout_seconds = timeout_seconds

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await asyncio.wait_for(
                super().handle_async_request(request), self.timeout_seconds
            )
        except TimeoutError as exc:
            raise httpx.ReadTimeout(
                "the simulator did not answer in time", request=request
            ) from exc


@dataclass
class SimulatorHandle:
    simulator: Simulator
    client: httpx.AsyncClient  # in-process client into the simulator app
    public_base_url: str


@dataclass
class Wiring:
    registry: ConnectorRegistry
    simulators: dict[Issuer, SimulatorHandle] = field(default_factory=dict)
    clients: list[httpx.AsyncClient] = field(default_factory=list)

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def _timeout(settings: Settings) -> httpx.Timeout:
    seconds = settings.issuer_timeout.total_seconds()
    return httpx.Timeout(seconds, connect=min(seconds, 3.0))


def _live_client(settings: Settings) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=_timeout(settings), follow_redirects=False)


def _live_connectors(
    settings: Settings, client: httpx.AsyncClient
) -> dict[Issuer, IssuerConnector]:
    connectors: dict[Issuer, IssuerConnector] = {}
    key, secret = _secret(settings.binance_api_key), settings.binance_api_secret
    if key and secret:
        connectors[Issuer.BINANCE] = binance.BinanceConnector(
            binance.BinanceCredentials(SecretStr(key), secret),
            base_url=settings.binance_base_url,
            client=client,
            timeout=_timeout(settings),
        )
    key, secret = _secret(settings.bybit_api_key), settings.bybit_api_secret
    if key and secret:
        connectors[Issuer.BYBIT] = bybit.BybitConnector(
            bybit.BybitCredentials(key, secret, _secret(settings.bybit_platform_public_key)),
            settings.bybit_base_url,
            client,
            timeout=_timeout(settings),
        )
    key, secret = _secret(settings.valr_api_key), settings.valr_api_secret
    if key and secret:
        connectors[Issuer.VALR] = valr.ValrConnector(
            valr.ValrCredentials(key, secret),
            base_url=settings.valr_base_url,
            client=client,
            pay_url=settings.valr_pay_url,
            timeout=_timeout(settings),
        )
    return connectors


def _simulated(
    settings: Settings, payrelay_app: Any, wiring: Wiring
) -> dict[Issuer, IssuerConnector]:
    back_to_us = httpx.AsyncClient(transport=httpx.ASGITransport(app=payrelay_app))
    wiring.clients.append(back_to_us)
    connectors: dict[Issuer, IssuerConnector] = {}
    factories = {
        Issuer.BINANCE: binance.create_simulator,
        Issuer.BYBIT: bybit.create_simulator,
        Issuer.VALR: create_valr_simulator,
    }
    for issuer, create_simulator in factories.items():
        config = SimulatorConfig(
            api_key=f"sim{issuer.slug}{secrets.token_hex(8)}",
            api_secret=secrets.token_hex(32),
            public_base_url=f"{settings.base_url}/simulators/{issuer.slug}",
        )
        simulator = create_simulator(config, notify_client=back_to_us)
        internal_url = f"http://{issuer.slug}.simulator"
        seconds = settings.issuer_timeout.total_seconds()
        client = httpx.AsyncClient(
            transport=TimedASGITransport(simulator.app, seconds),
            base_url=internal_url,
            timeout=httpx.Timeout(seconds),
        )
        wiring.clients.append(client)
        wiring.simulators[issuer] = SimulatorHandle(simulator, client, config.public_base_url)
        connectors[issuer] = _simulated_connector(
            issuer, config, simulator, client, internal_url, _timeout(settings)
        )
    return connectors


def _simulated_connector(
    issuer: Issuer,
    config: SimulatorConfig,
    simulator: Simulator,
    client: httpx.AsyncClient,
    internal_url: str,
    timeout: httpx.Timeout,
) -> IssuerConnector:
    secret = SecretStr(config.api_secret)
    if issuer is Issuer.BINANCE:
        return binance.BinanceConnector(
            binance.BinanceCredentials(SecretStr(config.api_key), secret),
            base_url=internal_url,
            client=client,
            timeout=timeout,
        )
    if issuer is Issuer.BYBIT:
        return bybit.BybitConnector(
            bybit.BybitCredentials(config.api_key, secret, simulator.public_key_pem),
            internal_url,
            client,
            checkout_link_template=f"{config.public_base_url}/checkout/{{pay_id}}",
            timeout=timeout,
        )
    return valr.ValrConnector(
        valr.ValrCredentials(config.api_key, secret),
        base_url=internal_url,
        client=client,
        pay_url=f"{config.public_base_url}/payments/send",
        append_return_urls=True,
        timeout=timeout,
    )


def build_wiring(settings: Settings, payrelay_app: Any) -> Wiring:
    """Connectors for both modes, plus the simulators to mount. Call once per app."""
    wiring = Wiring(ConnectorRegistry())
    live_client = _live_client(settings)
    wiring.clients.append(live_client)
    for issuer, connector in _live_connectors(settings, live_client).items():
        wiring.registry.connectors[(issuer, Mode.LIVE)] = connector
    wiring.registry.rates[Mode.LIVE] = ValrRateProvider(
        settings.rate_provider_url,
        live_client,
        ttl=settings.rate_cache_ttl,
        timeout=_timeout(settings),
    )
    for issuer, connector in _simulated(settings, payrelay_app, wiring).items():
        wiring.registry.connectors[(issuer, Mode.TEST)] = connector
    valr_sim = wiring.simulators[Issuer.VALR]
    wiring.registry.rates[Mode.TEST] = ValrRateProvider(
        "http://valr.simulator", valr_sim.client, ttl=settings.rate_cache_ttl
    )
    return wiring
