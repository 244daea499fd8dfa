"""ORM models. Money is integer cents; instants are UTC; ids are opaque prefixed strings."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from payrelay.db.types import UTCDateTime, utcnow

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Merchant(Base):
    __tablename__ = "merchants"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ApiKey(Base):
    """Only the keyed hash of a key is stored, plus a short prefix for people to recognise it."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"), index=True)
    mode: Mapped[str] = mapped_column(String(4))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    display_prefix: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Transfer(Base):
    """A transfer request. ``(merchant_id, mode, reference)`` is unique: the database decides
    races between concurrent creates, not a check-then-insert."""

    __tablename__ = "transfers"
    __table_args__ = (
        UniqueConstraint("merchant_id", "mode", "reference", name="uq_transfers_reference"),
        Index("ix_transfers_pending_expiry", "status", "expires_at"),
        Index("ix_transfers_trade_no", "issuer", "trade_no"),
        Index("ix_transfers_next_poll", "status", "next_poll_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"))
    mode: Mapped[str] = mapped_column(String(4))
    reference: Mapped[str] = mapped_column(String(128))
    request_fingerprint: Mapped[str] = mapped_column(String(64))

    recipient: Mapped[str] = mapped_column(String(256))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    issuer: Mapped[str] = mapped_column(String(16))
    acquirer: Mapped[str] = mapped_column(String(32))
    issuer_merchant_id: Mapped[str] = mapped_column(String(128))
    description: Mapped[str] = mapped_column(String(100))
    terminal_type: Mapped[str] = mapped_column(String(3))
    success_url: Mapped[str] = mapped_column(String(256))
    failed_url: Mapped[str] = mapped_column(String(256))
    webhook_url: Mapped[str] = mapped_column(String(256))
    currency: Mapped[str] = mapped_column(String(4))
    custom_reference: Mapped[str | None] = mapped_column(String(100), nullable=True)
    merchant_category_code: Mapped[str | None] = mapped_column(String(10), nullable=True)
    goods_type: Mapped[str | None] = mapped_column(String(2), nullable=True)

    link: Mapped[str] = mapped_column(String(2048))
    status: Mapped[str] = mapped_column(String(16))
    status_changed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    paid_late: Mapped[bool] = mapped_column(Boolean, default=False)
    payment_count: Mapped[int] = mapped_column(Integer, default=0)

    # The order at the issuer. Pricing is recorded so the payer's amount can be explained later.
    trade_no: Mapped[str | None] = mapped_column(String(32), nullable=True)
    issuer_order_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    issuer_link: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    issuer_details: Mapped[str | None] = mapped_column(Text, nullable=True)
    pay_currency: Mapped[str | None] = mapped_column(String(4), nullable=True)
    pay_amount: Mapped[Decimal | None] = mapped_column(Numeric(24, 8), nullable=True)
    rate: Mapped[Decimal | None] = mapped_column(Numeric(24, 8), nullable=True)
    rate_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_polled_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # When the reconciler should ask the issuer next; backs off as the transfer ages.
    next_poll_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class TransferTransition(Base):
    """Every status change, with its cause, so the history of a payment can be audited."""

    __tablename__ = "transfer_transitions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    transfer_id: Mapped[str] = mapped_column(ForeignKey("transfers.id"), index=True)
    from_status: Mapped[str | None] = mapped_column(String(16), nullable=True)
    to_status: Mapped[str] = mapped_column(String(16))
    cause: Mapped[str] = mapped_column(String(16))
    at: Mapped[datetime] = mapped_column(UTCDateTime)


class MomoTransaction(Base):
    __tablename__ = "momo_transactions"
    __table_args__ = (
        UniqueConstraint("merchant_id", "mode", "transaction_id", name="uq_momo_transaction_id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"))
    mode: Mapped[str] = mapped_column(String(4))
    transaction_id: Mapped[str] = mapped_column(String(15))
    status: Mapped[str] = mapped_column(String(16))
    confirmation_id: Mapped[str] = mapped_column(String(10), default="")
    webhook_url: Mapped[str | None] = mapped_column(String(256), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    status_changed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class IssuerEvent(Base):
    """Inbox of verified issuer notifications: one row per real event, however often it is sent."""

    __tablename__ = "issuer_events"
    __table_args__ = (UniqueConstraint("issuer", "event_key", name="uq_issuer_events_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    issuer: Mapped[str] = mapped_column(String(16))
    mode: Mapped[str] = mapped_column(String(4))
    event_key: Mapped[str] = mapped_column(String(200))
    trade_no: Mapped[str | None] = mapped_column(String(64), nullable=True)
    state: Mapped[str] = mapped_column(String(16))
    raw_status: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text)
    transfer_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime)


class TransferPayment(Base):
    """Each movement of money an issuer reports for a transfer. More than one is a duplicate
    payment: the transfer answers 409 and every payment is kept for refund handling."""

    __tablename__ = "transfer_payments"
    __table_args__ = (UniqueConstraint("issuer", "payment_id", name="uq_transfer_payments_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    transfer_id: Mapped[str] = mapped_column(ForeignKey("transfers.id"), index=True)
    issuer: Mapped[str] = mapped_column(String(16))
    payment_id: Mapped[str] = mapped_column(String(100))
    amount: Mapped[Decimal] = mapped_column(Numeric(24, 8))
    currency: Mapped[str] = mapped_column(String(8))
    paid_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)


class WebhookSecret(Base):
    """A merchant's webhook signing secret, encrypted with a key derived from the server secret.

    Several may be active at once: during a rotation's overlap payrelay signs with each.
    """

    __tablename__ = "webhook_secrets"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"), index=True)
    secret_encrypted: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class WebhookEvent(Base):
    """The outbox: written in the same transaction as the state change it reports."""

    __tablename__ = "webhook_events"
    __table_args__ = (
        Index("ix_webhook_events_due", "state", "next_attempt_at"),
        Index("ix_webhook_events_reference", "merchant_id", "mode", "reference"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"))
    mode: Mapped[str] = mapped_column(String(4))
    type: Mapped[str] = mapped_column(String(32))
    reference: Mapped[str | None] = mapped_column(String(128), nullable=True)
    url: Mapped[str] = mapped_column(String(256))
    # scheme://host:port of ``url``: deliveries are limited per endpoint, so one slow
    # receiver cannot hold up anyone else's.
    endpoint: Mapped[str] = mapped_column(String(256))
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    state: Mapped[str] = mapped_column(String(16))  # pending, succeeded, failed
    attempt_count: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class WebhookAttempt(Base):
    """One HTTP attempt to deliver an event, kept for the merchant to inspect."""

    __tablename__ = "webhook_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    event_id: Mapped[str] = mapped_column(ForeignKey("webhook_events.id"), index=True)
    attempted_at: Mapped[datetime] = mapped_column(UTCDateTime)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    latency_ms: Mapped[int] = mapped_column(Integer)
    response_body: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(String(500), nullable=True)
