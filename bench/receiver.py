"""Merchants' webhook receivers for the end-to-end webhook scenario: loopback HTTP endpoints,
each on its own port, so the dispatcher sees each one as a separate merchant endpoint.

A healthy endpoint reads the request, notes the arrival time, checks the Standard Webhooks
signature with payrelay's own merchant helper (``payrelay.webhooks.verify``) and answers 204.
A hanging endpoint reads the request and never answers, as a stuck merchant server does; its
connections are closed only when the receivers shut down. The server is a few lines of asyncio
rather than a web framework, so that on the load core it costs little and adds no queueing of
its own in front of the timestamp.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from payrelay.webhooks.verify import WebhookVerificationError, verify_webhook

MAX_HEAD_BYTES = 16 * 1024
MAX_BODY_BYTES = 64 * 1024
READ_TIMEOUT_S = 30.0
NO_CONTENT = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@dataclass(frozen=True)
class Arrival:
    """One verified webhook as the merchant got it."""

    at: float  # time.perf_counter() when the whole request had been read
    endpoint: int
    webhook_id: str
    event: dict[str, Any]

    @property
    def reference(self) -> str | None:
        data = self.event.get("data")
        value = data.get("reference") if isinstance(data, dict) else None
        return value if isinstance(value, str) else None


@dataclass
class Endpoint:
    index: int
    server: asyncio.Server
    hanging: bool = False

    @property
    def port(self) -> int:
        return int(self.server.sockets[0].getsockname()[1])

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@dataclass
class Receivers:
    """``count`` endpoints sharing one merchant secret. ``first`` holds each event's first
    verified arrival by reference; repeats, unverifiable requests and requests held by hanging
    endpoints are counted."""

    secret: str
    endpoints: list[Endpoint] = field(default_factory=list)
    first: dict[str, Arrival] = field(default_factory=dict)
    duplicates: int = 0
    unverified: int = 0
    held: int = 0  # requests a hanging endpoint accepted and never answered
    _release: asyncio.Event = field(default_factory=asyncio.Event)
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    async def start(self, count: int) -> None:
        for index in range(count):
            server = await asyncio.start_server(
                partial(self._serve, index), "127.0.0.1", 0, backlog=1024
            )
            self.endpoints.append(Endpoint(index, server))

    def hang(self, indexes: set[int]) -> None:
        """From now on these endpoints hold every request open without answering."""
        for endpoint in self.endpoints:
            endpoint.hanging = endpoint.index in indexes

    async def close(self) -> None:
        self._release.set()
        for writer in list(self._writers):
            writer.close()
        for endpoint in self.endpoints:
            endpoint.server.close()
        for endpoint in self.endpoints:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(endpoint.server.wait_closed(), 2)

    async def _serve(
        self, index: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._writers.add(writer)
        try:
            request = await asyncio.wait_for(_read_request(reader), READ_TIMEOUT_S)
            if request is None:
                return
            at = time.perf_counter()
            headers, body = request
            if self.endpoints[index].hanging:
                self.held += 1
                await self._release.wait()
                return
            event = self._verified(headers, body)
            writer.write(NO_CONTENT if event else BAD_REQUEST)
            await writer.drain()
            if event is not None:
                self._note(Arrival(at, index, headers.get("webhook-id", ""), event))
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    def _verified(self, headers: dict[str, str], body: bytes) -> dict[str, Any] | None:
        try:
            return verify_webhook(self.secret, headers, body)
        except WebhookVerificationError:
            self.unverified += 1
            return None

    def _note(self, arrival: Arrival) -> None:
        reference = arrival.reference
        if reference is None:
            self.unverified += 1
        elif reference in self.first:
            self.duplicates += 1
        else:
            self.first[reference] = arrival


async def _read_request(reader: asyncio.StreamReader) -> tuple[dict[str, str], bytes] | None:
    """One HTTP/1.1 request with a Content-Length body (what payrelay's dispatcher sends)."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        return None
    if len(head) > MAX_HEAD_BYTES:
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    if not 0 <= length <= MAX_BODY_BYTES:
        return None
    return headers, await reader.readexactly(length)
