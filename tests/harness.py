"""Test harness: a payrelay reached over HTTP, in-process or as a real `payrelay serve`."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import func, select

from payrelay.auth.keys import Mode
from payrelay.db.engine import Database
from payrelay.db.models import Transfer
from payrelay.db.types import utcnow
from payrelay.merchants import service as merchants
from payrelay.workers.expiry import expire_due
from payrelay.workers.reconciler import reconcile_once

KEY_SECRET = "test-key-hash-secret-" + "x" * 32


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class MerchantKeys:
    merchant_id: str
    test_key: str
    live_key: str
    webhook_secret: str = ""

    @property
    def test(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.test_key}"}

    @property
    def live(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.live_key}"}


@dataclass
class Harness:
    """What a test needs: an HTTP client on payrelay, and the store behind it for set-up."""

    store: str
    transport: str
    database_url: str
    base_url: str
    client: httpx.AsyncClient
    database: Database
    secret: bytes = KEY_SECRET.encode()
    extra: dict[str, Any] = field(default_factory=dict)

    async def merchant(self, name: str = "Shop") -> MerchantKeys:
        merchant, webhook_secret = await merchants.onboard(self.database, self.secret, name)
        test = await merchants.create_key(self.database, self.secret, merchant.id, Mode.TEST)
        live = await merchants.create_key(self.database, self.secret, merchant.id, Mode.LIVE)
        return MerchantKeys(merchant.id, test.key, live.key, webhook_secret)

    async def sweep(self) -> int:
        """Run what the server's background loops run: the reconciler, then the expiry sweep.

        In-process there are no background loops, so this runs one pass of each and returns how
        many transfers changed. Against a real server the loops run by themselves; this waits
        until no overdue transfer is left pending and returns -1.
        """
        if self.transport == "inproc":
            context = self.extra["context"]
            changed = await reconcile_once(context)
            return changed + await expire_due(self.database)
        deadline = time.monotonic() + 15
        while await self._overdue_pending() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        return -1

    async def _overdue_pending(self) -> int:
        async with self.database.read() as session:
            count = await session.scalar(
                select(func.count())
                .select_from(Transfer)
                .where(Transfer.status == "pending", Transfer.expires_at <= utcnow())
            )
        return int(count or 0)

    async def key(self, merchant_id: str, mode: Mode, expires_in: timedelta | None = None) -> str:
        issued = await merchants.create_key(
            self.database, self.secret, merchant_id, mode, expires_in
        )
        return issued.key


def server_env(database_url: str, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYRELAY_")}
    env.update(
        PAYRELAY_DATABASE_URL=database_url,
        PAYRELAY_KEY_HASH_SECRET=KEY_SECRET,
        PAYRELAY_HOST="127.0.0.1",
        PAYRELAY_PORT=str(port),
        PAYRELAY_LOG_LEVEL="warning",
        PAYRELAY_RATE_LIMIT_PER_SECOND="0",
        PAYRELAY_RECONCILE_INTERVAL="PT1S",
        PAYRELAY_ISSUER_TIMEOUT="PT2S",
        # The general suite's webhook URLs are placeholders; tests/webhooks runs its own
        # dispatchers against real local receivers.
        PAYRELAY_WEBHOOK_DISPATCH="false",
    )
    env.update(extra)
    return env


def start_server(database_url: str, **extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """Run `payrelay serve` on a free loopback port and wait until it answers."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "payrelay", "serve", "--json"],
        env=server_env(database_url, port, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"payrelay serve exited: {process.stderr.read().decode()}")  # type: ignore[union-attr]
        try:
            if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                return process, base_url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("payrelay serve did not start in 30 s")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
