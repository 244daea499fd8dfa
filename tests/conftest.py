"""Every HTTP test runs four ways: {SQLite, PostgreSQL} x {in-process, real `payrelay serve`}.

The PostgreSQL half reads PAYRELAY_TEST_POSTGRES_URL and is skipped, with a notice, only when it is
unset. Each session gets its own freshly migrated database.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy.engine import make_url

from payrelay.app import create_app
from payrelay.config import Settings
from payrelay.db import migrate
from payrelay.db.engine import Database
from tests.harness import KEY_SECRET, Harness, start_server, stop_server

POSTGRES_ENV = "PAYRELAY_TEST_POSTGRES_URL"
INPROC_BASE_URL = "http://payrelay.test"


def pytest_report_header(config: pytest.Config) -> str:
    if os.environ.get(POSTGRES_ENV):
        return f"payrelay: PostgreSQL tests enabled ({POSTGRES_ENV} is set)"
    return f"payrelay: NOTICE: {POSTGRES_ENV} is unset; PostgreSQL tests will be SKIPPED"


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _admin(base: str, statement: str) -> None:
    connection = await asyncpg.connect(_asyncpg_dsn(base))
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    base = os.environ.get(POSTGRES_ENV)
    if not base:
        pytest.skip(f"{POSTGRES_ENV} is unset")
    name = f"payrelay_test_{secrets.token_hex(4)}"
    asyncio.run(_admin(base, f'CREATE DATABASE "{name}"'))
    url = make_url(base).set(drivername="postgresql+asyncpg", database=name)
    yield url.render_as_string(hide_password=False)
    asyncio.run(_admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path: Path = tmp_path_factory.mktemp("store") / "payrelay.db"
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue(f"{request.param}_url")
    migrate.upgrade(url)
    return url


@pytest.fixture(scope="session")
async def store(store_url: str) -> AsyncIterator[Database]:
    database = Database(store_url)
    yield database
    await database.dispose()


def make_settings(database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "key_hash_secret": KEY_SECRET,
        "public_base_url": INPROC_BASE_URL,
        "rate_limit_per_second": 0,
        "issuer_timeout": timedelta(seconds=2),
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture(scope="session", params=["inproc", "server"])
async def api(
    request: pytest.FixtureRequest, store_url: str, store: Database
) -> AsyncIterator[Harness]:
    """The service under test, reached over HTTP."""
    store_name = "sqlite" if store_url.startswith("sqlite") else "postgres"
    if request.param == "inproc":
        app = create_app(make_settings(store_url), run_workers=False)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url=INPROC_BASE_URL) as client:
                yield Harness(
                    store_name,
                    "inproc",
                    store_url,
                    INPROC_BASE_URL,
                    client,
                    store,
                    extra={"context": app.state.context},
                )
        return
    process, base_url = start_server(store_url)
    try:
        # Idle connections are dropped well before uvicorn's 5 s keep-alive timeout, so the
        # client never sends on a connection the server is closing at that moment (ReadError).
        limits = httpx.Limits(keepalive_expiry=2)
        async with httpx.AsyncClient(base_url=base_url, timeout=30, limits=limits) as client:
            yield Harness(store_name, "server", store_url, base_url, client, store)
    finally:
        stop_server(process)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def chromium_path() -> Iterator[str]:
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if Path(candidate).exists():
            yield candidate
            return
    pytest.skip("Debian's chromium is not installed")
