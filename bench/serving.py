"""How the baselines are served: exactly as ``payrelay serve`` runs uvicorn (payrelay/cli/main.py),
one process with uvloop and httptools, so a ratio compares the application and nothing else."""

from __future__ import annotations

import argparse
from typing import Any

import uvicorn

# The body both baselines answer: the shape and size of a payment-status answer.
BODY = b'{"status":"processed","timestamp":"2026-11-22T11:24:09.504Z","amount":149.90}'

# Keep in step with the uvicorn.run(...) call in payrelay/cli/main.py `serve`.
UVICORN_OPTIONS: dict[str, Any] = {
    "loop": "uvloop",
    "http": "httptools",
    "log_level": "warning",
    "access_log": False,
    "proxy_headers": False,
}


def serve(app: Any, description: str) -> None:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, **UVICORN_OPTIONS)
