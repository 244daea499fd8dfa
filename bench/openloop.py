"""A lean HTTP/1.1 client for open-loop sending to one loopback server.

An open-loop sender must never be the bottleneck: each event goes out at its scheduled time on
an idle keep-alive connection, or on a new one, never waiting for an earlier answer. httpx's
pool costs far more CPU per request once hundreds are outstanding, and an overloaded load core
would delay both the sends and the receivers' timestamps. Bodyless POSTs only (all the bench
needs); answers must carry Content-Length, as uvicorn's do.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

MAX_CONNECTIONS = 1024  # past this, sends wait for a connection (and show as send lag)
MAX_HEAD_BYTES = 16 * 1024
# uvicorn closes a keep-alive connection after 5 s idle; one idle for less than this is reused,
# so a request is never written into a connection the server is closing.
MAX_IDLE_SECONDS = 2.0


class HttpError(Exception):
    """The exchange failed on the wire (refused, reset, malformed answer)."""


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class OpenLoopClient:
    def __init__(self, host: str, port: int, limit: int = MAX_CONNECTIONS) -> None:
        self.host, self.port = host, port
        self._idle: list[tuple[float, Connection]] = []  # (idle since, connection)
        self._slots = asyncio.Semaphore(limit)
        self.opened = 0  # connections opened in all, for the report

    async def post(self, path: str) -> tuple[int, bytes]:
        """``POST path`` with an empty body; (status, body)."""
        async with self._slots:
            connection = self._reusable() or await self._open()
            try:
                status, body, keep = await self._exchange(connection, path)
            except (
                OSError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                ValueError,
            ) as exc:
                connection[1].close()
                raise HttpError(f"failed on the wire: {type(exc).__name__}") from None
            if keep:
                self._idle.append((time.monotonic(), connection))
            else:
                connection[1].close()
            return status, body

    def _reusable(self) -> Connection | None:
        """The most recently used idle connection still safe to reuse; older ones are closed."""
        while self._idle:
            since, connection = self._idle.pop()
            if time.monotonic() - since < MAX_IDLE_SECONDS and not connection[0].at_eof():
                return connection
            connection[1].close()
        return None

    async def aclose(self) -> None:
        for _, (_, writer) in self._idle:
            writer.close()
        for _, (_, writer) in self._idle:
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        self._idle.clear()

    async def _open(self) -> Connection:
        try:
            connection = await asyncio.open_connection(self.host, self.port)
        except OSError as exc:
            raise HttpError(f"cannot connect to {self.host}:{self.port}: {exc}") from None
        self.opened += 1
        return connection

    async def _exchange(self, connection: Connection, path: str) -> tuple[int, bytes, bool]:
        reader, writer = connection
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Length: 0\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > MAX_HEAD_BYTES:
            raise ValueError("answer head too large")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        headers = {}
        for line in lines:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip().lower()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return status, body, headers.get("connection") != "close"
