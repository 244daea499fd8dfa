"""Shared parts of the issuer simulators: induced faults, notification delivery, payer page.

Each simulator (``issuers/<slug>/simulator.py``) speaks its issuer's wire protocol; this module
holds only what every simulator does the same way, so tests can induce the same faults on all.
"""

from __future__ import annotations

import asyncio
import html
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

NOTIFY_TIMEOUT = httpx.Timeout(10.0, connect=3.0)


@dataclass
class Faults:
    """Faults a test can switch on through ``POST {simulator}/_control/faults``."""

    latency_seconds: float = 0.0
    fail_next: int = 0  # answer the next N API calls with a 5xx
    hang_next: int = 0  # never answer the next N API calls (the caller's timeout fires)
    reject_next: int = 0  # refuse the next N creates with the issuer's business error
    drop_notifications: int = 0  # silently lose the next N notifications
    duplicate_notifications: bool = False  # send every notification twice
    hold_notifications: bool = False  # queue notifications until released, then send newest first
    # Comma-separated path fragments: when set, API faults hit only calls whose path contains one
    # (so a background poll cannot take a fault meant for a create).
    only_paths: str = ""

    def applies_to(self, path: str) -> bool:
        fragments = [part for part in self.only_paths.split(",") if part]
        return not fragments or any(part in path for part in fragments)

    def update(self, values: dict[str, Any]) -> None:
        for name, value in values.items():
            if not hasattr(self, name):
                raise ValueError(f"unknown fault {name!r}")
            setattr(self, name, type(getattr(self, name))(value))


HANG_SECONDS = 3600.0
SENT_KEPT = 1000


async def api_fault(
    faults: Faults, error_response: Callable[[], Response], path: str = ""
) -> Response | None:
    """Apply latency, hangs and 5xx to one API call; a response means "answer this instead"."""
    if not faults.applies_to(path):
        return None
    if faults.latency_seconds:
        await asyncio.sleep(faults.latency_seconds)
    if faults.hang_next > 0:
        faults.hang_next -= 1
        await asyncio.sleep(HANG_SECONDS)
    if faults.fail_next > 0:
        faults.fail_next -= 1
        return error_response()
    return None


@dataclass
class Notifier:
    """Delivers signed notifications, with the faults a real network and issuer produce."""

    faults: Faults
    client: httpx.AsyncClient
    # The most recent deliveries only: a long-running test-mode server must not grow forever.
    sent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=SENT_KEPT))
    held: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)

    async def deliver(self, url: str, headers: dict[str, str], body: bytes) -> None:
        if self.faults.drop_notifications > 0:
            self.faults.drop_notifications -= 1
            self.sent.append({"url": url, "dropped": True})
            return
        if self.faults.hold_notifications:
            self.held.append((url, headers, body))
            return
        copies = 2 if self.faults.duplicate_notifications else 1
        for _ in range(copies):
            await self._post(url, headers, body)

    async def release(self) -> int:
        """Send held notifications newest first, so the receiver sees them out of order."""
        held, self.held = self.held, []
        self.faults.hold_notifications = False
        for url, headers, body in reversed(held):
            await self._post(url, headers, body)
        return len(held)

    async def _post(self, url: str, headers: dict[str, str], body: bytes) -> None:
        try:
            response = await self.client.post(
                url, content=body, headers=headers, timeout=NOTIFY_TIMEOUT
            )
            self.sent.append({"url": url, "status": response.status_code, "body": response.text})
        except httpx.HTTPError as exc:
            self.sent.append({"url": url, "error": repr(exc)})


def control_router(
    faults: Faults,
    notifier: Notifier,
    settle: Callable[[str, str], Awaitable[dict[str, Any]]],
) -> APIRouter:
    """``/_control`` endpoints for tests and for payrelay's sandbox controls.

    ``settle(order_key, outcome)`` with outcome ``pay``, ``decline`` or ``expire`` plays the payer
    (or the clock) and sends the notification the real issuer would.
    """
    router = APIRouter(prefix="/_control")

    @router.post("/faults")
    async def set_faults(request: Request) -> JSONResponse:
        try:
            faults.update(await request.json())
        except (ValueError, TypeError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(faults.__dict__)

    @router.post("/faults/reset")
    async def reset_faults() -> JSONResponse:
        faults.__dict__.update(Faults().__dict__)
        return JSONResponse(faults.__dict__)

    @router.post("/notifications/release")
    async def release() -> JSONResponse:
        return JSONResponse({"released": await notifier.release()})

    @router.get("/notifications")
    async def notifications() -> JSONResponse:
        return JSONResponse({"sent": list(notifier.sent), "held": len(notifier.held)})

    @router.post("/orders/{order_key}/{outcome}")
    async def settle_order(order_key: str, outcome: str) -> JSONResponse:
        if outcome not in ("pay", "decline", "expire"):
            return JSONResponse({"error": "outcome must be pay, decline or expire"}, 400)
        try:
            return JSONResponse(await settle(order_key, outcome))
        except KeyError:
            return JSONResponse({"error": "no such order"}, status_code=404)

    return router


def payer_page(
    *,
    issuer: str,
    title: str,
    amount: str,
    currency: str,
    description: str,
    pay_action: str,
    decline_action: str,
    status: str | None = None,
) -> HTMLResponse:
    """The page a payer sees at the simulated exchange, with Pay and Decline."""
    if status is None:
        actions = (
            f'<form method="post" action="{html.escape(pay_action)}">'
            '<button id="pay">Pay</button></form> '
            f'<form method="post" action="{html.escape(decline_action)}">'
            '<button id="decline">Decline</button></form>'
        )
    else:
        actions = f'<p id="status">This order is {html.escape(status)}.</p>'
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>{html.escape(issuer)} simulator</title>
<style>body{{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto}}
button{{font-size:1rem;padding:.6rem 1.2rem;margin-right:.5rem}}</style></head>
<body><p><strong>{html.escape(issuer)} simulator</strong> &middot; test mode, no real money</p>
<h1 id="merchant">{html.escape(title)}</h1>
<p id="amount">{html.escape(amount)} {html.escape(currency)}</p>
<p id="description">{html.escape(description)}</p>{actions}</body></html>"""
    return HTMLResponse(
        page,
        headers={"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"},
    )


@dataclass(frozen=True)
class SimulatorConfig:
    """Credentials the simulator expects from payrelay, exactly as the real issuer would."""

    api_key: str
    api_secret: str
    public_base_url: str = "http://127.0.0.1"  # where the payer reaches the simulator


@dataclass
class Simulator:
    """A running simulator's handles: the ASGI app, its fault switches, its notifications."""

    app: Any
    faults: Faults
    notifier: Notifier
    public_key_pem: str | None = None  # the key payrelay verifies notifications with, if any
