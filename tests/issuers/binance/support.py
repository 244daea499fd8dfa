"""Test support for Binance Pay: a late-bound app, a notification receiver, the test stack."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import Response
from pydantic import SecretStr

from payrelay.issuers.base import (
    InvalidNotification,
    IssuerNotification,
    OrderRequest,
    trade_no_for,
)
from payrelay.issuers.binance import BinanceConnector, BinanceCredentials
from payrelay.issuers.binance.wire import CERTIFICATES_PATH
from payrelay.issuers.simkit import Simulator

API_KEY = "simulated0api0key0" + "k" * 46
API_SECRET = "simulated0api0secret0" + "s" * 43


class LateApp:
    """An ASGI app whose target is set after the server started, so it can know its own URL."""

    def __init__(self) -> None:
        self.target: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await self.target(scope, receive, send)


@dataclass
class Receiver:
    """payrelay's notification endpoint, reduced to verify-and-acknowledge."""

    connector: BinanceConnector | None = None
    events: list[IssuerNotification | None] = field(default_factory=list)
    raw: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/notify")
        async def notify(request: Request) -> Response:
            body = await request.body()
            self.raw.append((dict(request.headers), body))
            assert self.connector is not None
            try:
                event = await self.connector.verify_notification(request.headers, body)
            except InvalidNotification as exc:
                self.refused.append(str(exc))
                return Response(status_code=401)
            finally:
                self.arrived.set()
            self.events.append(event)
            ack = self.connector.acknowledgement()
            return Response(ack.body, status_code=ack.status_code, media_type=ack.media_type)

        return app

    def clear(self) -> None:
        self.events.clear()
        self.raw.clear()
        self.refused.clear()
        self.arrived.clear()

    async def wait_for(self, count: int, timeout: float = 5.0) -> list[IssuerNotification | None]:
        async def enough() -> None:
            while len(self.events) + len(self.refused) < count:
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(enough(), timeout)
        return self.events


@dataclass
class Stack:
    sim_url: str
    notify_url: str
    simulator: Simulator
    connector: BinanceConnector
    receiver: Receiver
    http: httpx.AsyncClient
    connector_calls: list[str]

    def connector_with(self, **overrides: Any) -> BinanceConnector:
        options: dict[str, Any] = {
            "credentials": credentials(),
            "base_url": self.sim_url,
            "client": self.http,
        } | overrides
        return BinanceConnector(**options)

    @property
    def certificate_fetches(self) -> int:
        return sum(url.endswith(CERTIFICATES_PATH) for url in self.connector_calls)

    async def control(self, path: str, payload: Any = None) -> Any:
        response = await self.http.post(f"{self.sim_url}/_control/{path}", json=payload)
        response.raise_for_status()
        return response.json()

    async def control_get(self, path: str) -> Any:
        response = await self.http.get(f"{self.sim_url}/_control/{path}")
        response.raise_for_status()
        return response.json()

    def order(self, **overrides: Any) -> OrderRequest:
        reference = overrides.pop("reference", f"INV-{secrets.token_hex(6)}")
        values: dict[str, Any] = {
            "trade_no": trade_no_for("m_binance", "test", reference),
            "reference": reference,
            "issuer_merchant_id": "350000123",
            "amount_zar": Decimal("250.00"),
            "pay_currency": "USDC",
            "pay_amount": Decimal("13.51234567"),
            "description": f"Invoice {reference}",
            "terminal_type": "WEB",
            "goods_type": None,
            "success_url": "https://shop.example/paid",
            "failed_url": "https://shop.example/failed",
            "notify_url": self.notify_url,
            "expires_at": datetime.now(UTC) + timedelta(minutes=30),
        }
        return OrderRequest(**(values | overrides))


def credentials(secret: str = API_SECRET) -> BinanceCredentials:
    return BinanceCredentials(api_key=SecretStr(API_KEY), api_secret=SecretStr(secret))
