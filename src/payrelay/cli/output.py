"""Output for CLI commands: one JSON object with ``--json``, readable lines otherwise."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

import typer

from payrelay.db.types import iso_utc
from payrelay.kit.jsonio import dumps_exact

DURATION = re.compile(r"(\d+)([smhd])")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_duration(text: str) -> timedelta:
    match = DURATION.fullmatch(text.strip())
    if not match or int(match.group(1)) == 0:
        raise typer.BadParameter("use a positive duration such as 45s, 90m, 12h or 30d")
    return timedelta(**{UNITS[match.group(2)]: int(match.group(1))})


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def emit(payload: dict[str, Any], as_json: bool) -> None:
    payload = _plain(payload)
    if as_json:
        typer.echo(dumps_exact(payload).decode())  # Decimals (a webhook's amount) stay exact
        return
    for key, value in payload.items():
        if isinstance(value, list):
            typer.echo(f"{key}:")
            for item in value:
                typer.echo("  " + "  ".join(f"{k}={v}" for k, v in item.items()))
        else:
            typer.echo(f"{key}: {value}")


def fail(message: str, as_json: bool, code: int = 1) -> typer.Exit:
    if as_json:
        typer.echo(json.dumps({"error": message}))
    else:
        typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)
