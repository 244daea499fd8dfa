"""Baseline L0: a raw ASGI app answering a fixed JSON body, served like payrelay.

``python -m bench.baseline_l0 --port 8100``
"""

from __future__ import annotations

from starlette.types import Message, Receive, Scope, Send

from bench.serving import BODY, serve

START: Message = {
    "type": "http.response.start",
    "status": 200,
    "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(BODY)).encode()),
    ],
}
RESPONSE_BODY: Message = {"type": "http.response.body", "body": BODY}


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] == "http":
        await send(START)
        await send(RESPONSE_BODY)


if __name__ == "__main__":
    serve(app, "Baseline L0: raw ASGI, fixed JSON body.")
