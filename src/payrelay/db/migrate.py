"""Apply Alembic migrations programmatically (``payrelay migrate`` and ``payrelay serve``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")


async def upgrade_async(database_url: str) -> None:
    from payrelay.db.engine import Database

    database = Database(database_url, pool_size=1)
    try:
        async with database.write_engine.begin() as connection:
            await connection.run_sync(_upgrade)
    finally:
        await database.dispose()


def upgrade(database_url: str) -> None:
    """Bring the schema to head. Safe to run from several processes at once on PostgreSQL."""
    asyncio.run(upgrade_async(database_url))
