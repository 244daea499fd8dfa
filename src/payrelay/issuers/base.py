"""The one small interface every issuer connector implements, and the data it speaks.

"Could not reach the issuer" is an exception (``IssuerUnavailable`` and its subclasses);
"the issuer said no" is data (``OrderRejected``). Statuses the issuer reports are mapped onto
``OrderState`` exhaustively; anything unknown is ``PENDING``, so only an explicit final answer
ever moves a transfer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Protocol


class Issuer(StrEnum):
    BINANCE = "Binance"
    BYBIT = "Bybit"
    VALR = "Valr"

    @property
    def slug(self) -> str:
        """The issuer's name in paths and configuration: ``binance``, ``bybit``, ``valr``."""
        return self.value.lower()


class OrderState(StrEnum):
    PENDING = "pending"
    PAID = "paid"
    FAILED = "failed"
    EXPIRED = "expired"
    NOT_FOUND = "not_found"


@dataclass(frozen=True)
class OrderRequest:
    """What we ask an issuer to open, already priced in the currency the payer pays in."""

    trade_no: str
    reference: str
    issuer_merchant_id: str
    amount_zar: Decimal
    pay_currency: str
    pay_amount: Decimal
    description: str
    terminal_type: str
    goods_type: str | None
    success_url: str
    failed_url: str
    notify_url: str
    expires_at: datetime


@dataclass(frozen=True)
class OrderOpened:
    issuer_order_id: str
    link: str
    details: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class OrderRejected:
    """The issuer refused the order; ``reason`` is the issuer's own words."""

    code: str
    reason: str
    duplicate_trade_no: bool = False


@dataclass(frozen=True)
class Payment:
    """One movement of money the issuer reports for an order (VALR can report several)."""

    payment_id: str
    amount: Decimal
    currency: str
    paid_at: datetime | None


@dataclass(frozen=True)
class OrderReport:
    state: OrderState
    raw_status: str
    issuer_order_id: str | None = None
    payments: tuple[Payment, ...] = ()
    # The payer link, where the issuer's query returns one; needed to adopt an order that was
    # opened despite our timeout.
    link: str | None = None


@dataclass(frozen=True)
class IssuerNotification:
    """A verified push from the issuer. ``event_key`` is unique per real event (the inbox key)."""

    event_key: str
    trade_no: str | None
    issuer_order_id: str | None
    state: OrderState
    raw_status: str
    payments: tuple[Payment, ...] = ()


@dataclass(frozen=True)
class Acknowledgement:
    status_code: int
    media_type: str
    body: bytes


class IssuerError(Exception):
    """Base of transport and protocol failures talking to an issuer."""


class IssuerUnavailable(IssuerError):
    """Could not get an answer: connection refused, 5xx, malformed reply."""


class IssuerTimeout(IssuerUnavailable):
    """No answer within the explicit timeout; the issuer may still have acted."""


class InvalidNotification(Exception):
    """A notification whose signature or shape does not verify. Always fail closed."""


class IssuerConnector(Protocol):
    issuer: Issuer
    supports_close: bool
    pushes_notifications: bool

    async def create_order(self, order: OrderRequest) -> OrderOpened | OrderRejected: ...

    async def query_order(self, order: OrderRequest, issuer_order_id: str | None) -> OrderReport:
        """Ask for the order by trade number (or issuer id); ``NOT_FOUND`` if it does not exist."""
        ...

    async def close_order(self, order: OrderRequest, issuer_order_id: str | None) -> bool:
        """Close an unpaid order where the issuer allows it; False where it has no close."""
        ...

    async def verify_notification(
        self, headers: Mapping[str, str], body: bytes
    ) -> IssuerNotification | None:
        """Verify and parse; ``None`` means a genuine event we do not act on (e.g. a refund)."""
        ...

    def acknowledgement(self) -> Acknowledgement: ...


def trade_no_for(merchant_id: str, mode: str, reference: str) -> str:
    """Deterministic merchantTradeNo: 32 hex characters derived from the merchant's reference.

    A retry with the same reference yields the same trade number, so an order the issuer opened
    despite our timeout is found and adopted instead of a second one being opened.
    """
    digest = hashlib.sha256(f"{merchant_id}\x1f{mode}\x1f{reference}".encode()).hexdigest()
    return digest[:32]
