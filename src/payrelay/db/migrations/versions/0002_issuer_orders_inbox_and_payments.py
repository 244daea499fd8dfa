"""issuer orders, inbox and payments

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 11:27:22.094344
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from payrelay.db.types import UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "issuer_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("issuer", sa.String(length=16), nullable=False),
        sa.Column("mode", sa.String(length=4), nullable=False),
        sa.Column("event_key", sa.String(length=200), nullable=False),
        sa.Column("trade_no", sa.String(length=64), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("raw_status", sa.String(length=64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("transfer_id", sa.String(length=40), nullable=True),
        sa.Column("received_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_issuer_events")),
        sa.UniqueConstraint("issuer", "event_key", name="uq_issuer_events_key"),
    )
    op.create_table(
        "transfer_payments",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("transfer_id", sa.String(length=40), nullable=False),
        sa.Column("issuer", sa.String(length=16), nullable=False),
        sa.Column("payment_id", sa.String(length=100), nullable=False),
        sa.Column("amount", sa.Numeric(precision=24, scale=8), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("paid_at", UTCDateTime(), nullable=True),
        sa.Column("recorded_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["transfer_id"],
            ["transfers.id"],
            name=op.f("fk_transfer_payments_transfer_id_transfers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transfer_payments")),
        sa.UniqueConstraint("issuer", "payment_id", name="uq_transfer_payments_id"),
    )
    with op.batch_alter_table("transfer_payments", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_transfer_payments_transfer_id"), ["transfer_id"], unique=False
        )

    with op.batch_alter_table("transfers", schema=None) as batch_op:
        batch_op.add_column(sa.Column("trade_no", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("issuer_order_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("issuer_link", sa.String(length=2048), nullable=True))
        batch_op.add_column(sa.Column("issuer_details", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("pay_currency", sa.String(length=4), nullable=True))
        batch_op.add_column(
            sa.Column("pay_amount", sa.Numeric(precision=24, scale=8), nullable=True)
        )
        batch_op.add_column(sa.Column("rate", sa.Numeric(precision=24, scale=8), nullable=True))
        batch_op.add_column(sa.Column("rate_at", UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("last_polled_at", UTCDateTime(), nullable=True))
        batch_op.create_index("ix_transfers_trade_no", ["issuer", "trade_no"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("transfers", schema=None) as batch_op:
        batch_op.drop_index("ix_transfers_trade_no")
        batch_op.drop_column("last_polled_at")
        batch_op.drop_column("rate_at")
        batch_op.drop_column("rate")
        batch_op.drop_column("pay_amount")
        batch_op.drop_column("pay_currency")
        batch_op.drop_column("issuer_details")
        batch_op.drop_column("issuer_link")
        batch_op.drop_column("issuer_order_id")
        batch_op.drop_column("trade_no")

    with op.batch_alter_table("transfer_payments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_transfer_payments_transfer_id"))

    op.drop_table("transfer_payments")
    op.drop_table("issuer_events")
