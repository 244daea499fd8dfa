"""Fixtures of the webhook delivery tests. They use stores of their own, never the general
suite's: a dispatcher claims every due event in its store, so sharing one would let another
test's `payrelay serve` deliver (and time) events that these tests are watching."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from payrelay.db import migrate
from payrelay.db.engine import Database
from tests.conftest import POSTGRES_ENV, _admin
from tests.harness import Harness
from tests.servers import serve_app
from tests.webhooks.support import Receiver, ReceiverServer, running_payrelay


def _new_store(kind: str, directory: Path) -> tuple[str, str | None]:
    """A freshly migrated store: (url, the PostgreSQL database to drop afterwards)."""
    if kind == "sqlite":
        url = f"sqlite+aiosqlite:///{directory / 'hooks.db'}"
        migrate.upgrade(url)
        return url, None
    base = os.environ.get(POSTGRES_ENV)
    if not base:
        pytest.skip(f"{POSTGRES_ENV} is unset")
    name = f"payrelay_hooks_{secrets.token_hex(4)}"
    asyncio.run(_admin(base, f'CREATE DATABASE "{name}"'))
    url = make_url(base).set(drivername="postgresql+asyncpg", database=name)
    rendered = url.render_as_string(hide_password=False)
    migrate.upgrade(rendered)
    return rendered, name


def _drop(name: str | None) -> None:
    base = os.environ.get(POSTGRES_ENV)
    if name and base:
        asyncio.run(_admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def hook_store_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """One store per kind for the in-process delivery tests."""
    url, name = _new_store(request.param, tmp_path_factory.mktemp("hooks"))
    yield url
    _drop(name)


@pytest.fixture(scope="session")
async def hook_store(hook_store_url: str) -> AsyncIterator[Database]:
    database = Database(hook_store_url)
    yield database
    await database.dispose()


@pytest.fixture(scope="session")
async def hooks(hook_store_url: str, hook_store: Database) -> AsyncIterator[Harness]:
    """payrelay in process on ``hook_store``, its dispatcher on the short schedule."""
    async with running_payrelay(hook_store_url, hook_store) as harness:
        yield harness


@pytest.fixture(params=["sqlite", "postgres"])
def fresh_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store of its own for one test (the worker-process tests)."""
    url, name = _new_store(request.param, tmp_path)
    yield url
    _drop(name)


@pytest.fixture(scope="session")
async def receiver_server() -> AsyncIterator[ReceiverServer]:
    """A real HTTP receiver on a loopback port, for the whole session."""
    server = ReceiverServer()
    async with serve_app(server.app) as base_url:
        server.base_url = base_url
        try:
            yield server
        finally:
            server.release.set()


@pytest.fixture(scope="session")
async def other_receiver_server() -> AsyncIterator[ReceiverServer]:
    """A second one: another endpoint (host:port), as another merchant's would be."""
    server = ReceiverServer()
    async with serve_app(server.app) as base_url:
        server.base_url = base_url
        try:
            yield server
        finally:
            server.release.set()


@pytest.fixture
def receiver(receiver_server: ReceiverServer) -> Receiver:
    """This test's paths on the receiver."""
    return receiver_server.view()


@pytest.fixture
def other_receiver(other_receiver_server: ReceiverServer) -> Receiver:
    return other_receiver_server.view()
