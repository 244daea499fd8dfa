"""Operator commands for webhooks (``payrelay webhook ...``) and the standalone worker."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from datetime import datetime
from typing import Annotated, Any

import typer

from payrelay.cli.output import emit, fail
from payrelay.config import Settings
from payrelay.db import migrate as migrations
from payrelay.db.engine import Database
from payrelay.errors import PayrelayError
from payrelay.kit.logging import configure_logging
from payrelay.webhooks import service

webhook_app = typer.Typer(help="Inspect and replay webhook deliveries.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]


def _with_database(as_json: bool, work: Any) -> Any:
    async def run() -> Any:
        database = Database(Settings().database_url, pool_size=1)
        try:
            return await work(database)
        finally:
            await database.dispose()

    try:
        return asyncio.run(run())
    except PayrelayError as exc:
        raise fail(exc.message, as_json) from None


@webhook_app.command("list")
def webhook_list(
    merchant_id: str,
    mode: Annotated[str, typer.Option(help="test or live.")] = "test",
    reference: Annotated[str | None, typer.Option(help="Only this reference.")] = None,
    state: Annotated[str | None, typer.Option(help="pending, succeeded, failed, skipped.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """A merchant's webhook events, newest first."""
    events = _with_database(
        as_json,
        lambda db: service.list_events(db, merchant_id, mode, reference=reference, state=state),
    )
    emit({"merchant_id": merchant_id, "events": events}, as_json)


@webhook_app.command("show")
def webhook_show(event_id: str, as_json: JsonFlag = False) -> None:
    """One event with its payload and every delivery attempt."""
    emit(_with_database(as_json, lambda db: service.show_event(db, event_id)), as_json)


@webhook_app.command("replay")
def webhook_replay(
    event_id: Annotated[str | None, typer.Argument(help="The event to send again.")] = None,
    merchant_id: Annotated[str | None, typer.Option(help="With --failed-since.")] = None,
    failed_since: Annotated[
        datetime | None, typer.Option(help="Replay every failed event created since then.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Send an event again (same webhook-id), or every failed one of a merchant since a time."""
    if event_id is not None:
        emit(_with_database(as_json, lambda db: service.replay_event(db, event_id)), as_json)
        return
    if merchant_id is None or failed_since is None:
        raise fail("give an EVENT_ID, or --merchant-id with --failed-since", as_json, code=2)
    since = failed_since if failed_since.tzinfo else failed_since.astimezone()
    replayed = _with_database(
        as_json, lambda db: service.replay_failed_since(db, merchant_id, None, since)
    )
    emit({"replayed": replayed}, as_json)


def worker(as_json: JsonFlag = False) -> None:
    """Run the background loops without the HTTP API: webhook dispatch, expiry and the issuer
    reconciler. Any number may run against PostgreSQL; on SQLite run one."""
    from payrelay.app import create_app

    settings = Settings()
    configure_logging(settings.log_level)
    migrations.upgrade(settings.database_url)
    app = create_app(settings, run_workers=True, serving=False)
    emit({"worker": "started", "database": settings.database_url.split("@")[-1]}, as_json)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        async with app.router.lifespan_context(app):
            await stop.wait()

    asyncio.run(run())
