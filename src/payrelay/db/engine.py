"""Engines and units of work.

SQLite allows one writer at a time. A deferred transaction that reads and then writes can fail
with SQLITE_BUSY without waiting, so on SQLite every write unit starts with ``BEGIN IMMEDIATE``
on a dedicated single-connection writer engine; reads use a separate pool and never block.
On PostgreSQL both roles share one engine.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from payrelay.db.groupcommit import GroupInserter
from payrelay.db.pointread import PointReader, point_reader

SQLITE_BUSY_TIMEOUT_MS = 10_000


def _sqlite_engine(url: str, *, immediate: bool, pool_size: int) -> AsyncEngine:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url, pool_size=pool_size, max_overflow=0)

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take over transaction control from the driver so BEGIN is ours to issue.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class Database:
    """Owns the engines; hands out read and write sessions that commit or roll back as a unit,
    ``points`` for the hot paths' single-row reads (payrelay.db.pointread) and ``inserts`` for
    group-committed inserts (payrelay.db.groupcommit)."""

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url = url
        self.is_sqlite = make_url(url).get_backend_name() == "sqlite"
        if self.is_sqlite:
            self.read_engine = _sqlite_engine(url, immediate=False, pool_size=pool_size)
            self.write_engine = _sqlite_engine(url, immediate=True, pool_size=1)
        else:
            self.read_engine = create_async_engine(
                url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True
            )
            self.write_engine = self.read_engine
        self._read_sessions = async_sessionmaker(self.read_engine, expire_on_commit=False)
        self._write_sessions = async_sessionmaker(self.write_engine, expire_on_commit=False)
        self.inserts = GroupInserter(self)
        self.points: PointReader = point_reader(url, pool_size=pool_size)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        async with self._read_sessions() as session:
            yield session

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """One transaction: committed when the block exits cleanly, rolled back otherwise."""
        async with self._write_sessions() as session, session.begin():
            yield session

    async def ping(self) -> None:
        async with self.read_engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        await self.inserts.close()
        await self.points.close()
        await self.read_engine.dispose()
        if self.write_engine is not self.read_engine:
            await self.write_engine.dispose()
