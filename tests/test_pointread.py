"""Point reads: one statement on the raw driver, decoded by SQLAlchemy's own column types."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import pytest
from sqlalchemy import bindparam, func, select
from sqlalchemy.engine import make_url

from payrelay.auth.dependencies import KEY_BY_HASH
from payrelay.auth.keys import Mode, hash_key
from payrelay.db.engine import Database
from payrelay.db.models import ApiKey
from payrelay.db.pointread import AsyncpgPointReader, SqlitePointReader, asyncpg_connect_args
from payrelay.merchants import service as merchants
from tests.harness import KEY_SECRET

KEY_EXPIRY = select(ApiKey.expires_at).where(ApiKey.id == bindparam("key_id"))


async def test_a_key_reads_back_with_its_types_and_an_unknown_hash_reads_nothing(
    store: Database,
) -> None:
    merchant = await merchants.create_merchant(store, "Point reads")
    issued = await merchants.create_key(store, KEY_SECRET.encode(), merchant.id, Mode.TEST)

    row = await store.points.fetch_one(
        KEY_BY_HASH, {"key_hash": hash_key(KEY_SECRET.encode(), issued.key)}
    )

    assert row is not None
    key_id, merchant_id, mode, _hash, expires_at, revoked_at = row
    assert (key_id, merchant_id, mode, revoked_at) == (issued.id, merchant.id, "test", None)
    assert expires_at is None
    assert await store.points.fetch_one(KEY_BY_HASH, {"key_hash": "0" * 64}) is None


async def test_an_instant_reads_back_as_the_same_utc_instant(store: Database) -> None:
    merchant = await merchants.create_merchant(store, "Point read instants")
    issued = await merchants.create_key(
        store, KEY_SECRET.encode(), merchant.id, Mode.TEST, expires_in=timedelta(days=3)
    )
    async with store.read() as session:
        stored = await session.scalar(KEY_EXPIRY, {"key_id": issued.id})

    row = await store.points.fetch_one(KEY_EXPIRY, {"key_id": issued.id})

    assert row is not None
    assert stored is not None
    assert row[0] == stored
    assert row[0].utcoffset() == timedelta(0)


async def test_the_sqlite_reader_refuses_to_write(store: Database) -> None:
    if not store.is_sqlite:
        pytest.skip("the SQLite reader's own guard")
    reader = SqlitePointReader(make_url(store.url).database or "")
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader._open().execute("DELETE FROM api_keys")
    finally:
        await reader.close()


def test_url_options_become_asyncpg_connect_arguments_not_server_settings() -> None:
    url = "postgresql+asyncpg://u:p@db.example:6432/pay?ssl=require&prepared_statement_cache_size=0"
    assert asyncpg_connect_args(url) == {
        "host": "db.example",
        "port": 6432,
        "user": "u",
        "password": "p",
        "database": "pay",
        "ssl": "require",
        "statement_cache_size": 0,
    }


async def test_a_postgresql_url_with_options_reads(postgres_url: str) -> None:
    url = f"{postgres_url}?ssl=disable&prepared_statement_cache_size=0"
    reader = AsyncpgPointReader(asyncpg_connect_args(url), max_size=1)
    try:
        row = await reader.fetch_one(select(func.current_database()), {})
        assert row == (make_url(postgres_url).database,)
    finally:
        await reader.close()
