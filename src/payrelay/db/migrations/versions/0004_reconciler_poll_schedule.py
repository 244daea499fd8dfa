"""reconciler poll schedule

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 13:08:56.903382
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from payrelay.db.types import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:

    with op.batch_alter_table("transfers", schema=None) as batch_op:
        batch_op.add_column(sa.Column("next_poll_at", UTCDateTime(), nullable=True))
        batch_op.create_index("ix_transfers_next_poll", ["status", "next_poll_at"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("transfers", schema=None) as batch_op:
        batch_op.drop_index("ix_transfers_next_poll")
        batch_op.drop_column("next_poll_at")
