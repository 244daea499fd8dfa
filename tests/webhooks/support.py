"""Shared pieces of the webhook delivery tests: a real local receiver with programmable answers,
an in-process payrelay whose dispatcher runs on a short schedule, direct event insertion, and
`payrelay worker` subprocesses.

Every wait here is bounded: poll with a deadline, never sleep blindly.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
from sqlalchemy import func, select, update
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from payrelay.app import create_app
from payrelay.db.engine import Database
from payrelay.db.models import MomoTransaction, WebhookEvent
from payrelay.db.types import utcnow
from payrelay.kit.ids import new_id, random_base62
from payrelay.webhooks import outbox
from tests.conftest import INPROC_BASE_URL, make_settings
from tests.harness import Harness, free_port, server_env

T = TypeVar("T")

# The published schedule shortened: three attempts, 0.3 s apart.
SHORT = {
    "webhook_schedule": "0,0.3,0.3",
    "webhook_timeout": timedelta(seconds=1),
    "webhook_poll_interval": timedelta(milliseconds=50),
    "webhook_silent_pause": timedelta(milliseconds=300),
    "webhook_dispatch": True,
}


# --------------------------------------------------------------------------------------------
# The receiver


@dataclass(frozen=True)
class Reply:
    """What the receiver answers to one request."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str = "ok"
    hang: bool = False  # hold the request open until the test ends
    delay: float = 0.0  # seconds to wait before answering


HANG = Reply(hang=True)


@dataclass(frozen=True)
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic() on arrival

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]

    def json(self) -> Any:
        return json.loads(self.body)


class ReceiverServer:
    """A merchant's webhook endpoint: records each request (headers and raw body) and answers
    per path from a programmed list of replies, then from the path's default (200).

    One server lives for the session; each test gets a view of it under a path prefix of its
    own, so that no test sees another's deliveries."""

    def __init__(self) -> None:
        self.base_url = ""
        self.deliveries: list[Delivery] = []
        self.plans: dict[str, list[Reply]] = {}
        self.defaults: dict[str, Reply] = {}
        self.release = asyncio.Event()
        self.app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST"])])
        self._views = itertools.count(1)

    def view(self) -> Receiver:
        return Receiver(self, f"/t{next(self._views)}")

    async def _handle(self, request: Request) -> Response:
        path = request.url.path
        self.deliveries.append(
            Delivery(path, dict(request.headers), await request.body(), time.monotonic())
        )
        plan = self.plans.get(path)
        reply = plan.pop(0) if plan else self.defaults.get(path, Reply())
        if reply.hang:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.release.wait(), 30)
            return Response("released", status_code=503)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        return Response(reply.body, status_code=reply.status, headers=reply.headers)


class Receiver:
    """One test's part of a receiver server: every path is under the test's own prefix."""

    def __init__(self, server: ReceiverServer, prefix: str) -> None:
        self.server = server
        self.prefix = prefix

    def url(self, path: str) -> str:
        return f"{self.server.base_url}{self.prefix}{path}"

    def program(self, path: str, *replies: Reply | int, then: Reply | int = 200) -> str:
        """Answer ``path`` with ``replies`` in order, then ``then`` forever; returns its URL."""
        self.server.plans[self.prefix + path] = [_reply(r) for r in replies]
        self.server.defaults[self.prefix + path] = _reply(then)
        return self.url(path)

    def at(self, path: str) -> list[Delivery]:
        return [d for d in self.server.deliveries if d.path == self.prefix + path]

    async def wait_for(self, path: str, count: int, seconds: float = 5) -> list[Delivery]:
        await eventually(lambda: len(self.at(path)) >= count, seconds, f"{count} at {path}")
        return self.at(path)


def _reply(value: Reply | int) -> Reply:
    return value if isinstance(value, Reply) else Reply(status=value)


# --------------------------------------------------------------------------------------------
# Waiting


async def eventually(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out after {seconds} s waiting for {what}"
        await asyncio.sleep(0.02)


async def eventually_async(
    check: Callable[[], Awaitable[T | None]], seconds: float, what: str, every: float = 0.05
) -> T:
    """Poll ``check`` until it answers something other than None (or falsy); returns it."""
    deadline = time.monotonic() + seconds
    while True:
        value = await check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {seconds} s waiting for {what}"
        await asyncio.sleep(every)


# --------------------------------------------------------------------------------------------
# payrelay in-process, with its dispatcher


@contextlib.asynccontextmanager
async def running_payrelay(
    store_url: str, database: Database, **overrides: Any
) -> AsyncIterator[Harness]:
    """payrelay in this process with its background loops (so the dispatcher) running."""
    app = create_app(make_settings(store_url, **{**SHORT, **overrides}), run_workers=True)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=INPROC_BASE_URL) as client:
            store = "sqlite" if store_url.startswith("sqlite") else "postgres"
            yield Harness(
                store,
                "inproc",
                store_url,
                INPROC_BASE_URL,
                client,
                database,
                extra={"context": app.state.context},
            )


# --------------------------------------------------------------------------------------------
# Events straight into the store, as the outbox writes them


async def insert_momo_events(
    database: Database, merchant_id: str, url: str, count: int, mode: str = "test"
) -> list[str]:
    """``count`` settled momo transactions with their events, in one transaction; returns the
    event ids, oldest first."""
    now = utcnow()
    transaction_ids = []
    async with database.write() as session:
        for _ in range(count):
            row = MomoTransaction(
                id=new_id("momo"),
                merchant_id=merchant_id,
                mode=mode,
                transaction_id=random_base62(12),
                status="Successful",
                confirmation_id="ABCDE12345",
                webhook_url=url,
                created_at=now,
                status_changed_at=now,
            )
            session.add(row)
            outbox.momo_changed(session, row, url, now)
            transaction_ids.append(row.transaction_id)
    async with database.read() as session:
        events = list(
            await session.scalars(
                select(WebhookEvent).where(WebhookEvent.reference.in_(transaction_ids))
            )
        )
    by_reference = {event.reference: event.id for event in events}
    assert len(by_reference) == count
    return [by_reference[tx] for tx in transaction_ids]


async def event_row(database: Database, event_id: str) -> WebhookEvent:
    async with database.read() as session:
        row = await session.get(WebhookEvent, event_id)
    assert row is not None, event_id
    return row


async def events_of(database: Database, merchant_id: str) -> list[WebhookEvent]:
    async with database.read() as session:
        return list(
            await session.scalars(
                select(WebhookEvent)
                .where(WebhookEvent.merchant_id == merchant_id)
                .order_by(WebhookEvent.created_at)
            )
        )


async def count_events(database: Database, merchant_id: str) -> int:
    async with database.read() as session:
        count = await session.scalar(
            select(func.count())
            .select_from(WebhookEvent)
            .where(WebhookEvent.merchant_id == merchant_id)
        )
    return int(count or 0)


async def retire(database: Database, merchant_id: str) -> None:
    """Mark a merchant's unfinished events failed, so later tests' dispatchers leave them be."""
    async with database.write() as session:
        await session.execute(
            update(WebhookEvent)
            .where(WebhookEvent.merchant_id == merchant_id, WebhookEvent.state == "pending")
            .values(state="failed", next_attempt_at=None, lease_until=None)
        )


# --------------------------------------------------------------------------------------------
# `payrelay worker` subprocesses


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path

    def output(self) -> str:
        return f"stdout: {self.stdout.read_text()}\nstderr: {self.stderr.read_text()[-3000:]}"

    def started(self) -> bool:
        assert self.process.poll() is None, f"worker exited\n{self.output()}"
        lines = self.stdout.read_text().splitlines()
        return bool(lines) and json.loads(lines[0]).get("worker") == "started"

    def kill(self) -> None:
        """SIGKILL: no cleanup, no lease released, exactly as a crash."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_worker(store_url: str, directory: Path, name: str, **extra: str) -> Worker:
    """``payrelay worker`` on ``store_url``: a 2 s lease and a short schedule."""
    env = server_env(
        store_url,
        free_port(),
        PAYRELAY_WEBHOOK_DISPATCH="true",
        PAYRELAY_WEBHOOK_LEASE="PT2S",
        PAYRELAY_WEBHOOK_SCHEDULE="0,0.5,0.5,0.5",
        PAYRELAY_WEBHOOK_TIMEOUT="PT1S",  # the lease must outlive a delivery
        PAYRELAY_WEBHOOK_POLL_INTERVAL="PT0.1S",
        **extra,
    )
    stdout, stderr = directory / f"{name}.out", directory / f"{name}.err"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "payrelay", "worker", "--json"],
            env=env,
            stdout=out,
            stderr=err,
        )
    return Worker(process, stdout, stderr)


@dataclass
class SilentEndpoint:
    """A receiver that accepts connections and never answers; counts the connections."""

    url: str = ""
    connections: int = 0


@contextlib.asynccontextmanager
async def silent_endpoint() -> AsyncIterator[SilentEndpoint]:
    endpoint = SilentEndpoint()
    held: list[asyncio.StreamWriter] = []

    async def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        endpoint.connections += 1
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    endpoint.url = f"http://127.0.0.1:{port}/hooks/silent"
    try:
        yield endpoint
    finally:
        server.close()
        for writer in held:
            writer.close()
