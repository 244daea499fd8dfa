"""merchant webhooks

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 12:15:08.495347
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from payrelay.db.types import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "webhook_events",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("merchant_id", sa.String(length=40), nullable=False),
        sa.Column("mode", sa.String(length=4), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("reference", sa.String(length=128), nullable=True),
        sa.Column("url", sa.String(length=256), nullable=False),
        sa.Column("endpoint", sa.String(length=256), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempt_count", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=True),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["merchant_id"], ["merchants.id"], name=op.f("fk_webhook_events_merchant_id_merchants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_events")),
    )
    with op.batch_alter_table("webhook_events", schema=None) as batch_op:
        batch_op.create_index("ix_webhook_events_due", ["state", "next_attempt_at"], unique=False)
        batch_op.create_index(
            "ix_webhook_events_reference", ["merchant_id", "mode", "reference"], unique=False
        )

    op.create_table(
        "webhook_secrets",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("merchant_id", sa.String(length=40), nullable=False),
        sa.Column("secret_encrypted", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["merchant_id"], ["merchants.id"], name=op.f("fk_webhook_secrets_merchant_id_merchants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_secrets")),
    )
    with op.batch_alter_table("webhook_secrets", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_webhook_secrets_merchant_id"), ["merchant_id"], unique=False
        )

    op.create_table(
        "webhook_attempts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("event_id", sa.String(length=40), nullable=False),
        sa.Column("attempted_at", UTCDateTime(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("response_body", sa.Text(), nullable=False),
        sa.Column("error", sa.String(length=500), nullable=True),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["webhook_events.id"],
            name=op.f("fk_webhook_attempts_event_id_webhook_events"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_attempts")),
    )
    with op.batch_alter_table("webhook_attempts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_webhook_attempts_event_id"), ["event_id"], unique=False
        )

    with op.batch_alter_table("momo_transactions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("webhook_url", sa.String(length=256), nullable=True))


def downgrade() -> None:

    with op.batch_alter_table("momo_transactions", schema=None) as batch_op:
        batch_op.drop_column("webhook_url")

    with op.batch_alter_table("webhook_attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_webhook_attempts_event_id"))

    op.drop_table("webhook_attempts")
    with op.batch_alter_table("webhook_secrets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_webhook_secrets_merchant_id"))

    op.drop_table("webhook_secrets")
    with op.batch_alter_table("webhook_events", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_events_reference")
        batch_op.drop_index("ix_webhook_events_due")

    op.drop_table("webhook_events")
