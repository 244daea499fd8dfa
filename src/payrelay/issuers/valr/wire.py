"""VALR's wire formats for the calls payrelay makes, and VALR's own error codes.

Sources: the ``valrdotcom/valr-agent-skills`` references (``pay.md``, ``authentication.md``,
``market-data.md``) and the research notes, section 3. History amounts are JSON numbers, lookup
amounts and market prices are strings; all of them are read as ``Decimal``, never as ``float``.
"""

from __future__ import annotations

from decimal import Decimal
from enum import IntEnum, StrEnum
from typing import NotRequired, TypedDict

from payrelay.issuers.base import IssuerUnavailable

API_KEY = "X-VALR-API-KEY"
TIMESTAMP = "X-VALR-TIMESTAMP"
SIGNATURE = "X-VALR-SIGNATURE"
SUB_ACCOUNT_ID = "X-VALR-SUB-ACCOUNT-ID"

HISTORY_PATH = "/v1/pay/history"
PAY_ID_PATH = "/v1/pay/payid"
TRANSACTION_PATH = "/v1/pay/transactionid/{transaction_id}"
MARKET_SUMMARY_PATH = "/v1/public/{pair}/marketsummary"


class PayStatus(StrEnum):
    """Every status ``GET /v1/pay/history`` documents (``pay.md``)."""

    INITIATED = "INITIATED"
    AUTHORISED = "AUTHORISED"
    COMPLETE = "COMPLETE"
    RETURNED = "RETURNED"
    FAILED = "FAILED"
    EXPIRED = "EXPIRED"


class EntryType(StrEnum):
    CREDIT = "CREDIT"  # received
    DEBIT = "DEBIT"  # sent


class Direction(StrEnum):
    """``GET /v1/pay/transactionid/{id}`` says ``direction`` where history says ``type``."""

    RECEIVE = "RECEIVE"
    SEND = "SEND"


class HistoryItem(TypedDict):
    """One entry of ``GET /v1/pay/history`` (and ``GET /v1/pay/identifier/{id}``)."""

    identifier: str
    otherPartyIdentifier: str
    amount: Decimal  # a JSON number on the wire
    currency: str
    status: NotRequired[str]  # "may be absent on some records"
    timestamp: str  # ISO-8601, e.g. 2022-04-29T09:46:51.132056Z
    note: NotRequired[str]
    transactionId: str
    anonymous: bool
    reversed: bool
    type: str


class TransactionLookup(TypedDict):
    """``GET /v1/pay/transactionid/{id}``: ``status`` is always present here."""

    amount: str
    currency: str
    timestamp: str
    transactionId: str
    status: str
    direction: str


class PayIdAnswer(TypedDict):
    payId: str


class MarketSummary(TypedDict):
    """``GET /v1/public/{pair}/marketsummary``; every price is a decimal string."""

    currencyPair: str
    askPrice: str
    bidPrice: str
    lastTradedPrice: str
    previousClosePrice: str
    baseVolume: str
    quoteVolume: str
    highPrice: str
    lowPrice: str
    created: str
    changeFromPrevious: str
    markPrice: str


class ErrorBody(TypedDict):
    """VALR's error shape: a negative integer code and VALR's own words, with an HTTP 4xx."""

    code: int
    message: str


class ValrErrorCode(IntEnum):
    INVALID_SIGNATURE = -11252  # "Request has an invalid signature" [seen in VALR replies]
    INVALID_API_KEY = -11251  # our choice: VALR's code for "API-key is invalid" is undocumented
    PAYMENT_FAILED = -15401  # "Unable to make payment. Please contact support"
    PAYMENT_NOT_FOUND = -15407  # "Cannot find payment"
    TOO_MANY_RECIPIENTS = -15417
    PAY_SELF = -15426
    BELOW_MINIMUM = -15430
    MARGIN_ACCOUNT = -15437


class ValrApiError(IssuerUnavailable):
    """VALR answered, but not with what we asked for; its status, code and words are kept.

    A refused poll says nothing about the order, so it is "could not get an answer" for payrelay,
    which retries later; ``code`` and ``message`` are VALR's own, for the logs and the operator.
    """

    def __init__(self, status_code: int, code: int | None, message: str) -> None:
        self.status_code = status_code
        self.code = code
        self.message = message
        prefix = "VALR refused payrelay's credentials" if status_code in (401, 403) else "VALR"
        shown = f"{code} {message}" if code is not None else message
        super().__init__(f"{prefix}: HTTP {status_code}: {shown}")
