"""Single-row reads for the hot paths, in one round trip on the raw driver.

Payment status, momo status and key checks are SELECTs of one row by a unique key. Through an
ORM session each cost about 1 ms of CPU here (pool checkout, pre-ping, BEGIN, the statement,
ROLLBACK; on SQLite every one of those is a hop to aiosqlite's thread), against 10 µs on sqlite3
and 130 µs on asyncpg (README.md, Performance). So these statements are still written with
SQLAlchemy Core and still decoded by SQLAlchemy's own column types, but compiled once per
dialect and run directly: on asyncpg's pool, or on one read-only sqlite3 connection (see
SqlitePointReader for why that one runs on the event loop). Each read is one autocommit
statement: one snapshot.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import asyncpg
from sqlalchemy import Select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect, make_url

STATEMENT_TIMEOUT_S = 10.0
# A WAL reader is almost never told "busy" (only around recovery or a truncating checkpoint);
# when it is, it must not stall the event loop for long: fail the one request instead.
SQLITE_LOOP_BUSY_TIMEOUT_MS = 100

Processor = Callable[[Any], Any] | None
AnySelect = Select[*tuple[Any, ...]]


class PointQuery:
    """A Core SELECT compiled for one dialect, with SQLAlchemy's bind and result processing."""

    def __init__(self, statement: AnySelect, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        self.sql = compiled.string
        binds = compiled.binds
        names = compiled.positiontup or []
        self._binds: list[tuple[str, Processor]] = [
            (name, binds[name].type.dialect_impl(dialect).bind_processor(dialect)) for name in names
        ]
        self._results: list[Processor] = [
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in statement.selected_columns
        ]

    def parameters(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(
            values[name] if process is None else process(values[name])
            for name, process in self._binds
        )

    def decode(self, raw: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(
            value if process is None else process(value)
            for value, process in zip(raw, self._results, strict=True)
        )


class PointReader(Protocol):
    async def fetch_one(
        self, statement: AnySelect, values: Mapping[str, Any]
    ) -> tuple[Any, ...] | None: ...

    async def close(self) -> None: ...


class _Compiled:
    """Compile each statement once; the hot-path statements are module constants."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._queries: dict[int, tuple[AnySelect, PointQuery]] = {}

    def __call__(self, statement: AnySelect) -> PointQuery:
        found = self._queries.get(id(statement))
        if found is None or found[0] is not statement:
            found = (statement, PointQuery(statement, self.dialect))
            self._queries[id(statement)] = found
        return found[1]


class SqlitePointReader:
    """One sqlite3 connection that refuses writes (``query_only``), used on the event loop.

    A deliberate, measured exception to "no blocking I/O on the loop": these statements are a
    unique-index lookup of one row, a few pages from the OS cache, 10 µs here. Handing each to a
    thread cost more than the read (40 µs) and, on one core, the reader threads and the event
    loop took turns at the GIL so badly that p99 reached 75 ms at a p50 of 6 ms; on the loop,
    p99 is 11 ms and throughput is 20 % higher (README.md, Performance). Scans, writes and
    fsyncs still run on aiosqlite's thread.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._compiled = _Compiled(sqlite.dialect())
        self._connection: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection:
        if self._connection is None:
            connection = sqlite3.connect(self._path, isolation_level=None)
            connection.execute(f"PRAGMA busy_timeout={SQLITE_LOOP_BUSY_TIMEOUT_MS}")
            connection.execute("PRAGMA query_only=ON")
            self._connection = connection
        return self._connection

    async def fetch_one(
        self, statement: AnySelect, values: Mapping[str, Any]
    ) -> tuple[Any, ...] | None:
        query = self._compiled(statement)
        raw = self._open().execute(query.sql, query.parameters(values)).fetchone()
        return None if raw is None else query.decode(raw)

    async def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class AsyncpgPointReader:
    """asyncpg's own pool, created on first use; asyncpg prepares and caches each statement."""

    def __init__(self, connect_args: dict[str, Any], max_size: int) -> None:
        self._connect_args = connect_args
        self._max_size = max_size
        self._compiled = _Compiled(postgresql.asyncpg.dialect())  # type: ignore[no-untyped-call]
        self._pool: asyncpg.Pool | None = None
        self._opening = asyncio.Lock()

    async def _acquire_pool(self) -> asyncpg.Pool:
        if self._pool is None:
            async with self._opening:
                if self._pool is None:
                    self._pool = await asyncpg.create_pool(
                        **self._connect_args,
                        min_size=1,
                        max_size=self._max_size,
                        command_timeout=STATEMENT_TIMEOUT_S,
                        timeout=STATEMENT_TIMEOUT_S,
                    )
        return self._pool

    async def fetch_one(
        self, statement: AnySelect, values: Mapping[str, Any]
    ) -> tuple[Any, ...] | None:
        query = self._compiled(statement)
        pool = await self._acquire_pool()
        parameters = query.parameters(values)
        try:
            raw = await pool.fetchrow(query.sql, *parameters)
        except (asyncpg.PostgresConnectionError, asyncpg.InterfaceError, OSError):
            # A pooled connection the server dropped (a restart, say): a SELECT is safe to
            # send again, and the pool has replaced the connection by now.
            raw = await pool.fetchrow(query.sql, *parameters)
        return None if raw is None else query.decode(tuple(raw))

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


def point_reader(url: str, *, pool_size: int) -> PointReader:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return SqlitePointReader(parsed.database or "")
    return AsyncpgPointReader(asyncpg_connect_args(url), pool_size)


def asyncpg_connect_args(url: str) -> dict[str, Any]:
    """What SQLAlchemy's asyncpg dialect would pass to asyncpg for ``url``: query options such
    as ``?ssl=require`` become connect arguments instead of server settings asyncpg would send
    (and the server refuse)."""
    dialect = postgresql.asyncpg.dialect()  # type: ignore[no-untyped-call]
    _, options = dialect.create_connect_args(make_url(url))  # type: ignore[no-untyped-call]
    arguments = dict(options)
    cache_size = arguments.pop("prepared_statement_cache_size", None)
    if cache_size is not None:
        arguments["statement_cache_size"] = int(cache_size)
    arguments.pop("prepared_statement_name_func", None)
    arguments.pop("async_fallback", None)
    return arguments
