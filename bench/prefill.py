"""Fill a payrelay store fast, for the benchmark only: never through HTTP.

The schema is the real one (``payrelay.db.migrate.upgrade``) and the rows are built from the real
tables (``payrelay.db.models``). Each fill is ONE set-based ``INSERT ... SELECT`` compiled by
SQLAlchemy core, whose rows come from a number series generated inside the database (a recursive
CTE on SQLite, ``generate_series`` on PostgreSQL), so a million rows never cross the driver one by
one. Constants such as instants go through the columns' own types (``UTCDateTime``, ``Numeric``),
so they are stored exactly as the service stores them.

Rows look like a store that has been in use: every transfer has an issuer order (``trade_no``),
ids are random (so the primary-key index fills in random order, as in production), and statuses
are final (80 % processed, 10 % failed, 10 % expired), so no background worker has anything to do
with them. References are ``bref`` + 9 digits and momo ids ``M`` + 9 digits, which the wrk
scripts regenerate to pick random existing rows.
"""

from __future__ import annotations

import typing
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    Integer,
    String,
    Table,
    case,
    cast,
    delete,
    func,
    insert,
    literal,
    null,
    select,
    text,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.sql.elements import ColumnElement

from payrelay.db.models import MomoTransaction, Transfer, TransferTransition
from payrelay.db.types import UTCDateTime

REFERENCE_PREFIX = "bref"  # + 9 digits: 13 characters, inside the 11..128 the API accepts
MOMO_PREFIX = "M"  # + 9 digits: 10 ASCII letters and digits, inside the 5..15 momo accepts
CREATED_PREFIX = "bcr"  # references the create scenario invents (see create.lua)
DIGITS = 9

SQLITE_BULK_CACHE_KIB = 1_000_000  # a large page cache while one big INSERT builds the indexes


def reference(index: int) -> str:
    return f"{REFERENCE_PREFIX}{index:0{DIGITS}d}"


def momo_id(index: int) -> str:
    return f"{MOMO_PREFIX}{index:0{DIGITS}d}"


class _Series:
    """The dialect-specific pieces: a series of integers and text formatting of them."""

    def __init__(self, dialect: str, start: int, stop: int) -> None:
        self.sqlite = dialect == "sqlite"
        if self.sqlite:
            seed = select(literal(start, Integer).label("i")).cte("n", recursive=True)
            series = seed.union_all(select((seed.c.i + 1).label("i")).where(seed.c.i < stop - 1))
            self.source: Any = series
            self.i: ColumnElement[int] = series.c.i
        else:
            generated = (
                func.generate_series(literal(start, Integer), literal(stop - 1, Integer))
                .table_valued("i")
                .render_derived()
            )
            self.source = generated
            self.i = generated.c.i

    def padded(self, prefix: str, width: int) -> ColumnElement[str]:
        """``prefix`` + the number in decimal, zero-padded to ``width``."""
        if self.sqlite:
            return func.printf(f"{prefix}%0{width}d", self.i)
        return literal(prefix) + func.lpad(cast(self.i, String), width, "0")

    def hex_padded(self, width: int) -> ColumnElement[str]:
        if self.sqlite:
            return func.printf(f"%0{width}x", self.i)
        return func.lpad(func.to_hex(self.i), width, "0")

    def random_id(self, prefix: str, salt: str) -> ColumnElement[str]:
        """An opaque id in random order (24 hex characters), like ``new_id`` gives."""
        if self.sqlite:
            return func.printf(f"{prefix}_%s", func.lower(func.hex(func.randomblob(12))))
        return literal(f"{prefix}_") + func.substr(
            func.md5(cast(self.i, String) + literal(salt)), 1, 24
        )


def _instant(value: datetime) -> ColumnElement[datetime]:
    return literal(value, UTCDateTime())


def _complete(table: Any, values: dict[str, ColumnElement[Any]]) -> None:
    """Columns added to the model since this was written: NULL where allowed, else refuse."""
    for column in table.c:
        if column.name in values:
            continue
        if not column.nullable:
            raise RuntimeError(
                f"bench/prefill.py gives no value for {table.name}.{column.name} (NOT NULL)"
            )
        values[column.name] = null()


def transfers_insert(dialect: str, merchant_id: str, start: int, stop: int) -> Any:
    """Transfers ``reference(start) .. reference(stop - 1)`` for one merchant in test mode."""
    series = _Series(dialect, start, stop)
    i = series.i
    created = datetime.now(UTC) - timedelta(days=2)
    table = typing.cast(Table, Transfer.__table__)
    values: dict[str, ColumnElement[Any]] = {
        "id": series.random_id("tr", f"{merchant_id}:{start}"),
        "merchant_id": literal(merchant_id),
        "mode": literal("test"),
        "reference": series.padded(REFERENCE_PREFIX, DIGITS),
        "request_fingerprint": series.hex_padded(64),
        "recipient": literal("0x9f3c1a2b4d5e6f708192a3b4c5d6e7f8091a2b3c"),
        "amount_cents": literal(100) + (i % 99991) * 7,
        "issuer": case((i % 2 == 0, "Bybit"), else_="Valr"),
        "acquirer": literal("Paystack"),
        "issuer_merchant_id": literal("bench-issuer-merchant"),
        "description": literal("2 x Coffee beans 500 g"),
        "terminal_type": literal("WEB"),
        "success_url": literal("https://example.com/paid"),
        "failed_url": literal("https://example.com/failed"),
        "webhook_url": literal("http://127.0.0.1:9/hooks/payrelay"),
        "currency": literal("ZAR"),
        "custom_reference": null(),
        "merchant_category_code": null(),
        "goods_type": null(),
        "link": literal("http://127.0.0.1:8000/sandbox/checkout/") + series.hex_padded(24),
        "status": case((i % 10 < 8, "processed"), (i % 10 == 8, "failed"), else_="expired"),
        "status_changed_at": _instant(created + timedelta(minutes=5)),
        "expires_at": _instant(created + timedelta(minutes=15)),
        "created_at": _instant(created),
        "paid_late": literal(False),
        "payment_count": case((i % 10 < 8, 1), else_=0),
        "trade_no": series.hex_padded(32),
        "issuer_order_id": series.padded("order-", 12),
        "issuer_link": literal("https://example.com/pay"),
        "issuer_details": literal("{}"),
        "pay_currency": literal("ZAR"),
        "pay_amount": literal(Decimal("10.00"), table.c.pay_amount.type),
        "rate": null(),
        "rate_at": null(),
        "last_polled_at": null(),
    }
    _complete(table, values)
    rows = select(*(value.label(name) for name, value in values.items())).select_from(series.source)
    return insert(table).from_select(list(values), rows)


def momo_insert(dialect: str, merchant_id: str, start: int, stop: int) -> Any:
    """Momo transactions ``momo_id(start) .. momo_id(stop - 1)``: a third each of Pending,
    Successful (with a confirmation id) and Unsuccessful."""
    series = _Series(dialect, start, stop)
    i = series.i
    at = datetime.now(UTC) - timedelta(days=1)
    table = typing.cast(Table, MomoTransaction.__table__)
    values: dict[str, ColumnElement[Any]] = {
        "id": series.random_id("momo", f"{merchant_id}:momo:{start}"),
        "merchant_id": literal(merchant_id),
        "mode": literal("test"),
        "transaction_id": series.padded(MOMO_PREFIX, DIGITS),
        "status": case((i % 3 == 0, "Pending"), (i % 3 == 1, "Successful"), else_="Unsuccessful"),
        "confirmation_id": case((i % 3 == 1, series.padded("C", DIGITS)), else_=""),
        "created_at": _instant(at),
        "status_changed_at": _instant(at),
    }
    _complete(table, values)
    rows = select(*(value.label(name) for name, value in values.items())).select_from(series.source)
    return insert(table).from_select(list(values), rows)


async def _tune(connection: AsyncConnection) -> None:
    """Bulk-load settings for this one connection; the server's own connections never see them."""
    if connection.dialect.name == "sqlite":
        await connection.exec_driver_sql(f"PRAGMA cache_size=-{SQLITE_BULK_CACHE_KIB}")
        return
    # Skip the per-row foreign-key trigger (every row names the one bench merchant, which
    # exists): about a third of PostgreSQL's load time. Needs a superuser; without one, the
    # fill is just slower.
    try:
        await connection.exec_driver_sql("SET session_replication_role = replica")
        await connection.commit()
    except DBAPIError:
        await connection.rollback()


async def fill(
    database_url: str,
    merchant_id: str,
    *,
    transfers: tuple[int, int] | None = None,
    momo: tuple[int, int] | None = None,
) -> None:
    """Insert transfers ``[start, stop)`` and momo rows ``[start, stop)`` in one transaction,
    then bring PostgreSQL's statistics and visibility map up to date, as autovacuum would."""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            await _tune(connection)
            dialect = connection.dialect.name
            if transfers and transfers[1] > transfers[0]:
                await connection.execute(transfers_insert(dialect, merchant_id, *transfers))
            if momo and momo[1] > momo[0]:
                await connection.execute(momo_insert(dialect, merchant_id, *momo))
            await connection.commit()
        if engine.dialect.name == "postgresql":
            async with engine.connect() as connection:
                autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
                await autocommit.exec_driver_sql("VACUUM ANALYZE transfers")
                await autocommit.exec_driver_sql("VACUUM ANALYZE momo_transactions")
    finally:
        await engine.dispose()


async def count_created(database_url: str, nonce: str) -> int:
    """How many transfers the create scenario stored under ``nonce`` (one per 2xx answer)."""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            value = await connection.scalar(
                select(func.count())
                .select_from(Transfer)
                .where(Transfer.reference.like(f"{CREATED_PREFIX}{nonce}%"))
            )
            return int(value or 0)
    finally:
        await engine.dispose()


async def delete_created(database_url: str) -> int:
    """Remove what the create scenario stored, so later phases see only the pre-filled rows
    (and the reconciler has no fresh pending orders to poll while they are measured)."""
    engine = create_async_engine(database_url)
    created = select(Transfer.id).where(Transfer.reference.like(f"{CREATED_PREFIX}%"))
    try:
        async with engine.begin() as connection:
            await connection.execute(
                delete(TransferTransition).where(TransferTransition.transfer_id.in_(created))
            )
            result = await connection.execute(
                delete(Transfer).where(Transfer.reference.like(f"{CREATED_PREFIX}%"))
            )
            return int(result.rowcount or 0)
    finally:
        await engine.dispose()


async def row_count(database_url: str) -> int:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            value = await connection.scalar(text("SELECT count(*) FROM transfers"))
            return int(value or 0)
    finally:
        await engine.dispose()
