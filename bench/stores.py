"""Stores for a bench run: fresh SQLite files or PostgreSQL databases, and their merchant."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from tempfile import gettempdir
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

from bench.processes import BenchError
from payrelay.auth.keys import Mode
from payrelay.db.engine import Database
from payrelay.merchants import service as merchants

POSTGRES_ENV = "PAYRELAY_BENCH_POSTGRES_URL"
DEFAULT_POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
HANGING_SHARE = 0.2  # the "20% of the receivers hanging"
RUNS = {"healthy": 0.0, "hanging": HANGING_SHARE}  # webhook runs: share of receivers hanging


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _postgres_admin(base_url: str, *statements: str) -> list[Any]:
    connection = await asyncpg.connect(_asyncpg_dsn(base_url), timeout=10)
    try:
        return [await connection.fetchval(statement) for statement in statements]
    finally:
        await connection.close()


@dataclass(frozen=True)
class StoreUrls:
    kind: str
    main: str  # status, momo, create, then grown to the large size
    small: str  # the small side of the size comparison
    webhook: dict[str, str]  # one fresh store per webhook run (healthy, hanging)
    settings: dict[str, Any]


def postgres_base_url() -> str:
    return os.environ.get(POSTGRES_ENV) or DEFAULT_POSTGRES_URL


def postgres_settings(base: str) -> dict[str, Any]:
    """What makes PostgreSQL figures comparable (and durable); fails clearly if it is down."""
    try:
        version, fsync, commit = asyncio.run(
            _postgres_admin(base, "SHOW server_version", "SHOW fsync", "SHOW synchronous_commit")
        )
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise BenchError(
            f"PostgreSQL at {make_url(base).render_as_string(hide_password=True)} does not "
            f"answer ({exc}); start it, set {POSTGRES_ENV}, or run with --store sqlite"
        ) from exc
    return {"server_version": version, "fsync": fsync, "synchronous_commit": commit}


@contextmanager
def provisioned(kind: str, work_dir: Path) -> Iterator[StoreUrls]:
    """Fresh, empty stores for one run; PostgreSQL databases are dropped afterwards."""
    if kind == "sqlite":
        yield StoreUrls(
            kind,
            f"sqlite+aiosqlite:///{work_dir / 'bench-main.db'}",
            f"sqlite+aiosqlite:///{work_dir / 'bench-small.db'}",
            {run: f"sqlite+aiosqlite:///{work_dir / f'bench-webhook-{run}.db'}" for run in RUNS},
            {"journal_mode": "wal", "synchronous": "full", "database_dir": gettempdir()},
        )
        return
    base = postgres_base_url()
    settings = postgres_settings(base)
    name = f"payrelay_bench_{secrets.token_hex(4)}"
    names = (name, f"{name}_small", *(f"{name}_webhook_{run}" for run in RUNS))
    try:
        asyncio.run(_postgres_admin(base, *(f'CREATE DATABASE "{n}"' for n in names)))
        main_url, small_url, *webhook_urls = (
            make_url(base)
            .set(drivername="postgresql+asyncpg", database=n)
            .render_as_string(hide_password=False)
            for n in names
        )
        yield StoreUrls(
            kind, main_url, small_url, dict(zip(RUNS, webhook_urls, strict=True)), settings
        )
    finally:
        asyncio.run(
            _postgres_admin(base, *(f'DROP DATABASE IF EXISTS "{n}" WITH (FORCE)' for n in names))
        )


async def bench_merchant(url: str, secret: bytes) -> tuple[str, str]:
    """A merchant and a test key, made by payrelay's own administration code."""
    database = Database(url, pool_size=1)
    try:
        merchant = await merchants.create_merchant(database, "Bench Merchant")
        key = await merchants.create_key(database, secret, merchant.id, Mode.TEST)
        return merchant.id, key.key
    finally:
        await database.dispose()


async def webhook_merchant(url: str, secret: bytes) -> tuple[str, str]:
    """A merchant onboarded as payrelay onboards one (its whsec_ secret returned once), and a
    test key: (api key, webhook secret)."""
    database = Database(url, pool_size=1)
    try:
        merchant, webhook_secret = await merchants.onboard(database, secret, "Bench Webhooks")
        key = await merchants.create_key(database, secret, merchant.id, Mode.TEST)
        return key.key, webhook_secret
    finally:
        await database.dispose()
