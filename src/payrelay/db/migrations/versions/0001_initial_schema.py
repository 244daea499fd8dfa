"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22 11:15:58.109453
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from payrelay.db.types import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "merchants",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_merchants")),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("merchant_id", sa.String(length=40), nullable=False),
        sa.Column("mode", sa.String(length=4), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("display_prefix", sa.String(length=20), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["merchant_id"], ["merchants.id"], name=op.f("fk_api_keys_merchant_id_merchants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_merchant_id"), ["merchant_id"], unique=False)

    op.create_table(
        "momo_transactions",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("merchant_id", sa.String(length=40), nullable=False),
        sa.Column("mode", sa.String(length=4), nullable=False),
        sa.Column("transaction_id", sa.String(length=15), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("confirmation_id", sa.String(length=10), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("status_changed_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["merchant_id"],
            ["merchants.id"],
            name=op.f("fk_momo_transactions_merchant_id_merchants"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_momo_transactions")),
        sa.UniqueConstraint("merchant_id", "mode", "transaction_id", name="uq_momo_transaction_id"),
    )
    op.create_table(
        "transfers",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("merchant_id", sa.String(length=40), nullable=False),
        sa.Column("mode", sa.String(length=4), nullable=False),
        sa.Column("reference", sa.String(length=128), nullable=False),
        sa.Column("request_fingerprint", sa.String(length=64), nullable=False),
        sa.Column("recipient", sa.String(length=256), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("issuer", sa.String(length=16), nullable=False),
        sa.Column("acquirer", sa.String(length=32), nullable=False),
        sa.Column("issuer_merchant_id", sa.String(length=128), nullable=False),
        sa.Column("description", sa.String(length=100), nullable=False),
        sa.Column("terminal_type", sa.String(length=3), nullable=False),
        sa.Column("success_url", sa.String(length=256), nullable=False),
        sa.Column("failed_url", sa.String(length=256), nullable=False),
        sa.Column("webhook_url", sa.String(length=256), nullable=False),
        sa.Column("currency", sa.String(length=4), nullable=False),
        sa.Column("custom_reference", sa.String(length=100), nullable=True),
        sa.Column("merchant_category_code", sa.String(length=10), nullable=True),
        sa.Column("goods_type", sa.String(length=2), nullable=True),
        sa.Column("link", sa.String(length=2048), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("status_changed_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("paid_late", sa.Boolean(), nullable=False),
        sa.Column("payment_count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["merchant_id"], ["merchants.id"], name=op.f("fk_transfers_merchant_id_merchants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transfers")),
        sa.UniqueConstraint("merchant_id", "mode", "reference", name="uq_transfers_reference"),
    )
    with op.batch_alter_table("transfers", schema=None) as batch_op:
        batch_op.create_index("ix_transfers_pending_expiry", ["status", "expires_at"], unique=False)

    op.create_table(
        "transfer_transitions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("transfer_id", sa.String(length=40), nullable=False),
        sa.Column("from_status", sa.String(length=16), nullable=True),
        sa.Column("to_status", sa.String(length=16), nullable=False),
        sa.Column("cause", sa.String(length=16), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["transfer_id"],
            ["transfers.id"],
            name=op.f("fk_transfer_transitions_transfer_id_transfers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transfer_transitions")),
    )
    with op.batch_alter_table("transfer_transitions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_transfer_transitions_transfer_id"), ["transfer_id"], unique=False
        )


def downgrade() -> None:

    with op.batch_alter_table("transfer_transitions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_transfer_transitions_transfer_id"))

    op.drop_table("transfer_transitions")
    with op.batch_alter_table("transfers", schema=None) as batch_op:
        batch_op.drop_index("ix_transfers_pending_expiry")

    op.drop_table("transfers")
    op.drop_table("momo_transactions")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_merchant_id"))

    op.drop_table("api_keys")
    op.drop_table("merchants")
