"""Alembic environment. Runs inside a connection handed over by ``payrelay.db.migrate``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from payrelay.db.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through 'payrelay migrate'")

if connection.dialect.name == "postgresql":
    # Serialise concurrent migrators (several workers starting at once) on one advisory lock.
    connection.execute(text("SELECT pg_advisory_xact_lock(727274)"))
    connection.execute(text("SET LOCAL lock_timeout = '10s'"))

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
context.run_migrations()
