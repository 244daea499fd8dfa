"""Pure ASGI middleware: request ids, response headers, body size, and the last-resort 500."""

from __future__ import annotations

import itertools
import json
import os
import re

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from payrelay.errors import InternalError, PayloadTooLarge, PayrelayError, render

MAX_BODY_BYTES = 64 * 1024
REQUEST_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")
NO_STORE_PREFIXES = ("/tx/", "/momo/", "/sandbox/")

log = structlog.get_logger("payrelay.http")

# Request ids need to be unique, not secret: a random per-process prefix and a counter cost
# nothing, where a uuid4 per request was 10% of a status lookup's CPU here (one getrandom each).
_ID_PREFIX = os.urandom(8).hex()
_id_counter = itertools.count(1)


def new_request_id() -> str:
    return f"{_ID_PREFIX}{next(_id_counter):016x}"


def _error_response_messages(error: PayrelayError, request_id: str) -> tuple[Message, Message]:
    body = json.dumps(render(error)).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-request-id", request_id.encode()),
        (b"cache-control", b"no-store"),
    ]
    return (
        {"type": "http.response.start", "status": error.status_code, "headers": headers},
        {"type": "http.response.body", "body": body},
    )


class RequestContextMiddleware:
    """Outermost layer. Every response carries X-Request-Id, payment responses carry
    ``Cache-Control: no-store``, bodies over 64 KiB are refused with 413, and anything that
    escapes the app becomes a shape-C 500 instead of a stack trace."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = self._request_id(scope)
        scope.setdefault("state", {})["request_id"] = request_id
        no_store = scope["path"].startswith(NO_STORE_PREFIXES)
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                if no_store:
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        declared = self._content_length(scope)
        if declared is not None and declared > MAX_BODY_BYTES:
            for message in _error_response_messages(PayloadTooLarge(), request_id):
                await send(message)
            return

        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > MAX_BODY_BYTES:
                    raise PayloadTooLarge()
            return message

        try:
            await self.app(scope, limited_receive, send_with_headers)
        except Exception:
            log.exception("request.unhandled", request_id=request_id, path=scope["path"])
            if not started:
                for message in _error_response_messages(InternalError(), request_id):
                    await send(message)

    @staticmethod
    def _request_id(scope: Scope) -> str:
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                candidate: str = value.decode("latin-1")
                if REQUEST_ID.fullmatch(candidate):
                    return candidate
                break
        return new_request_id()

    @staticmethod
    def _content_length(scope: Scope) -> int | None:
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    return int(value)
                except ValueError:
                    return None
        return None
