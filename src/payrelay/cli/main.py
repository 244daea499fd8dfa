"""The ``payrelay`` command: serve, migrate, and operator administration of merchants and keys."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Coroutine
from typing import Annotated, Any, TypeVar

import pydantic
import typer

from payrelay.auth.keys import Mode
from payrelay.cli.output import emit, fail, parse_duration
from payrelay.cli.simulate import simulate
from payrelay.cli.webhooks import webhook_app, worker
from payrelay.config import Settings
from payrelay.db import migrate as migrations
from payrelay.db.engine import Database
from payrelay.errors import PayrelayError
from payrelay.kit.logging import configure_logging
from payrelay.merchants import service as merchants

app = typer.Typer(help="payrelay payment gateway", no_args_is_help=True)
merchant_app = typer.Typer(help="Manage merchants.", no_args_is_help=True)
key_app = typer.Typer(help="Manage API keys.", no_args_is_help=True)
app.add_typer(merchant_app, name="merchant")
app.add_typer(key_app, name="key")
app.command("simulate")(simulate)
app.command("worker")(worker)
app.add_typer(webhook_app, name="webhook")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
T = TypeVar("T")


def _run(as_json: bool, work: Coroutine[Any, Any, T]) -> T:
    try:
        return asyncio.run(work)
    except PayrelayError as exc:
        raise fail(exc.message, as_json) from None
    except ValueError as exc:
        raise fail(str(exc), as_json) from None


def _database(settings: Settings, as_json: bool) -> Database:
    """The store for an admin command, migrated first so a fresh database just works."""
    try:
        migrations.upgrade(settings.database_url)
    except Exception as exc:
        raise fail(f"cannot reach or migrate the database: {type(exc).__name__}", as_json) from None
    return Database(settings.database_url, pool_size=1)


async def _disposing(database: Database, work: Awaitable[T]) -> T:
    try:
        return await work
    finally:
        await database.dispose()


@app.command()
def migrate(as_json: JsonFlag = False) -> None:
    """Apply database migrations up to the latest schema."""
    settings = Settings()
    migrations.upgrade(settings.database_url)
    emit({"migrated": True, "database": _safe_url(settings.database_url)}, as_json)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Interface to bind.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind.")] = None,
    demo: Annotated[
        bool, typer.Option("--demo", help="Create a test merchant and key and print them.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Apply migrations, then serve the API with the background workers in the same process."""
    overrides = {k: v for k, v in {"host": host, "port": port}.items() if v is not None}
    settings = Settings(**overrides)  # type: ignore[arg-type]
    configure_logging(settings.log_level)
    try:
        secret = settings.resolved_key_hash_secret()
    except ValueError as exc:
        raise fail(str(exc), as_json) from None
    migrations.upgrade(settings.database_url)
    info: dict[str, object] = {"base_url": settings.base_url}
    if demo:
        database = _database(settings, as_json)

        async def create_demo() -> dict[str, object]:
            merchant, webhook_secret = await merchants.onboard(database, secret, "Demo Merchant")
            key = await merchants.create_key(database, secret, merchant.id, Mode.TEST)
            return {
                "merchant_id": merchant.id,
                "merchant_name": merchant.name,
                "test_key": key.key,
                "webhook_secret": webhook_secret,
            }

        info.update(_run(as_json, _disposing(database, create_demo())))
    emit(info, as_json)
    # Imported here: admin commands should not pay for loading the whole web stack.
    import uvicorn

    from payrelay.app import create_app

    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        log_level=settings.log_level,
        access_log=settings.log_level == "debug",
        proxy_headers=False,
    )


@merchant_app.command("create")
def merchant_create(name: str, as_json: JsonFlag = False) -> None:
    """Create a merchant."""
    settings = Settings()
    database = _database(settings, as_json)
    try:
        secret = settings.resolved_key_hash_secret()
    except ValueError as exc:
        raise fail(str(exc), as_json) from None
    merchant, webhook_secret = _run(
        as_json, _disposing(database, merchants.onboard(database, secret, name))
    )
    emit({"id": merchant.id, "name": merchant.name, "webhook_secret": webhook_secret}, as_json)


@merchant_app.command("rotate-secret")
def merchant_rotate_secret(
    merchant_id: str,
    overlap: Annotated[
        str, typer.Option("--overlap", help="How long the old secret keeps signing, e.g. 24h.")
    ] = "24h",
    as_json: JsonFlag = False,
) -> None:
    """Make a new webhook signing secret; during the overlap payrelay signs with both."""
    settings = Settings()
    lifetime = parse_duration(overlap)
    database = _database(settings, as_json)
    try:
        secret = settings.resolved_key_hash_secret()
    except ValueError as exc:
        raise fail(str(exc), as_json) from None
    webhook_secret, old_until = _run(
        as_json,
        _disposing(
            database, merchants.rotate_webhook_secret(database, secret, merchant_id, lifetime)
        ),
    )
    emit(
        {"merchant_id": merchant_id, "webhook_secret": webhook_secret, "old_expires_at": old_until},
        as_json,
    )


@key_app.command("create")
def key_create(
    merchant_id: str,
    mode: Annotated[Mode, typer.Option(help="test or live.")],
    expires_in: Annotated[
        str | None, typer.Option("--expires-in", help="Lifetime, e.g. 30d, 12h.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create an API key. The plaintext is shown only once, here."""
    settings = Settings()
    lifetime = parse_duration(expires_in) if expires_in else None
    try:
        secret = settings.resolved_key_hash_secret()
    except ValueError as exc:
        raise fail(str(exc), as_json) from None
    database = _database(settings, as_json)
    issued = _run(
        as_json,
        _disposing(database, merchants.create_key(database, secret, merchant_id, mode, lifetime)),
    )
    emit(
        {
            "id": issued.id,
            "key": issued.key,
            "mode": issued.mode.value,
            "expires_at": issued.expires_at,
        },
        as_json,
    )


@key_app.command("list")
def key_list(merchant_id: str, as_json: JsonFlag = False) -> None:
    """List a merchant's keys (prefixes only; the plaintext is never stored)."""
    settings = Settings()
    database = _database(settings, as_json)
    rows = _run(as_json, _disposing(database, merchants.list_keys(database, merchant_id)))
    emit(
        {
            "merchant_id": merchant_id,
            "keys": [
                {
                    "id": row.id,
                    "mode": row.mode,
                    "prefix": row.display_prefix,
                    "created_at": row.created_at,
                    "expires_at": row.expires_at,
                    "revoked_at": row.revoked_at,
                }
                for row in rows
            ],
        },
        as_json,
    )


@key_app.command("revoke")
def key_revoke(key_id: str, as_json: JsonFlag = False) -> None:
    """Revoke a key; it stops working at once."""
    settings = Settings()
    database = _database(settings, as_json)
    row = _run(as_json, _disposing(database, merchants.revoke_key(database, key_id)))
    emit({"id": row.id, "revoked_at": row.revoked_at}, as_json)


def _safe_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def main() -> None:
    """Console entry point: with ``--json``, even usage and configuration errors are one JSON
    object on stdout."""
    as_json = "--json" in sys.argv
    try:
        # Without standalone mode, an Exit raised by a command comes back as its exit code.
        result = app(standalone_mode=False)
        if isinstance(result, int) and result:
            raise SystemExit(result)
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        raise SystemExit(130) from None
    except typer.TyperException as exc:
        # Usage errors: a bad option value, a missing argument.
        exit_code = getattr(exc, "exit_code", 2)
        if as_json:
            format_message = getattr(exc, "format_message", None)
            message = format_message() if callable(format_message) else str(exc)
            typer.echo(json.dumps({"error": message}))
        else:
            show = getattr(exc, "show", None)
            if callable(show):
                show()
            else:
                typer.echo(f"error: {exc}", err=True)
        raise SystemExit(exit_code) from None
    except pydantic.ValidationError as exc:
        message = "invalid configuration: " + "; ".join(
            f"PAYRELAY_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}"
            for e in exc.errors()
        )
        if as_json:
            typer.echo(json.dumps({"error": message}))
        else:
            typer.echo(f"error: {message}", err=True)
        raise SystemExit(1) from None
