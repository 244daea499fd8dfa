"""Pure conversions between payrelay's orders and VALR Pay's wire formats.

VALR has no merchant order API and sends no notifications (research notes, section 3), so an
"order" is only a payer link we build ourselves plus a rule for finding the payment in the
receiving account's VALR Pay history. Choices where VALR documents nothing:

- The link is ``{pay_url}?payId=&amount=&currency=&note=``. The real page is only known to honour
  ``payId``; prefilling the amount, currency and note is our assumption. Where VALR ignores them,
  the payer types them, and the note must be the trade number exactly. In test mode
  ``successUrl``/``failedUrl`` are appended for the simulator's page; VALR has no return URLs.
- ``issuer_order_id`` is the trade number: there is no VALR order id.
- A history entry matches an order when it is a ``CREDIT``, its ``note`` (surrounding whitespace
  stripped) equals the trade number exactly (case-sensitive), its ``currency`` equals the pay
  currency, and its ``amount`` is at least the pay amount. Overpayments match and are kept as
  paid; the surplus is the merchant's to return.
- An underpayment (a matching credit with a smaller amount) is never a payment and never
  completes the order, not even with a second credit topping it up: each credit stands alone.
  A completed one is reported as ``UNDERPAID:<amount>`` in ``raw_status`` so payrelay can surface
  it; the merchant returns it with VALR's reverse (``PUT /v1/pay/transactionid/{id}/reverse``).
- Every matching ``COMPLETE`` credit is one ``Payment`` (``payment_id`` = ``transactionId``); two
  of them are a duplicate payment, which payrelay keeps for refund handling. Entries seen twice
  while paging (history shifts as credits arrive) are counted once, by ``transactionId``.
- The order is ``PAID`` with any matching complete credit. Otherwise a matching credit still in
  flight (``INITIATED``/``AUTHORISED`` or no status) keeps it ``PENDING``; then a ``FAILED`` or
  ``RETURNED`` one makes it ``FAILED``; then an ``EXPIRED`` one makes it ``EXPIRED``; with none it
  is ``PENDING``. VALR never expires anything on its side, so expiry is payrelay's own clock.
- ``reversed`` is ignored: a reversed credit still moved money, and the reversal is a refund.
- A matching entry without a ``status`` (history may omit it) is looked up by ``transactionId``,
  whose answer always carries one; unparseable entries are skipped, never guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlencode

from payrelay.issuers.base import (
    OrderOpened,
    OrderRejected,
    OrderReport,
    OrderRequest,
    OrderState,
    Payment,
)
from payrelay.issuers.valr.wire import (
    HISTORY_PATH,
    TRANSACTION_PATH,
    EntryType,
    PayStatus,
    ValrApiError,
)
from payrelay.kit.jsonio import loads_exact

LIVE_PAY_URL = "https://www.valr.com/payments/send"

STATUS_STATES: dict[PayStatus, OrderState] = {
    PayStatus.INITIATED: OrderState.PENDING,
    PayStatus.AUTHORISED: OrderState.PENDING,
    PayStatus.COMPLETE: OrderState.PAID,
    PayStatus.FAILED: OrderState.FAILED,
    PayStatus.RETURNED: OrderState.FAILED,  # the money went back to the payer
    PayStatus.EXPIRED: OrderState.EXPIRED,
}

NO_CREDIT = "NO_CREDIT"
NO_STATUS = "NO_STATUS"
HISTORY_TRUNCATED = "HISTORY_TRUNCATED"


def state_for(status: str | None) -> OrderState:
    """VALR's status as ours; a missing or unknown status is ``PENDING``."""
    if status is None:
        return OrderState.PENDING
    try:
        return STATUS_STATES[PayStatus(status)]
    except ValueError:
        return OrderState.PENDING


# --- the payer's link -------------------------------------------------------------------------


def payer_link(order: OrderRequest, pay_url: str, *, append_return_urls: bool = False) -> str:
    params = {
        "payId": order.issuer_merchant_id,
        "amount": format(order.pay_amount, "f"),
        "currency": order.pay_currency,
        "note": order.trade_no,
    }
    if append_return_urls:
        params["successUrl"] = order.success_url
        params["failedUrl"] = order.failed_url
    separator = "&" if "?" in pay_url else "?"
    return f"{pay_url}{separator}{urlencode(params)}"


def opened(
    order: OrderRequest, pay_url: str, *, append_return_urls: bool = False
) -> OrderOpened | OrderRejected:
    """The order "opened" locally: nothing is sent to VALR until the payer pays."""
    if not order.issuer_merchant_id.strip():
        return OrderRejected("INVALID_PAY_ID", "VALR Pay needs the merchant's PayID as merchantID")
    if order.pay_amount <= 0:
        return OrderRejected("INVALID_AMOUNT", "VALR Pay needs a positive amount")
    return OrderOpened(
        issuer_order_id=order.trade_no,
        link=payer_link(order, pay_url, append_return_urls=append_return_urls),
        details={
            "payId": order.issuer_merchant_id,
            "amount": format(order.pay_amount, "f"),
            "currency": order.pay_currency,
            "note": order.trade_no,
        },
    )


# --- history --------------------------------------------------------------------------------


def history_path(skip: int, limit: int) -> str:
    return f"{HISTORY_PATH}?skip={skip}&limit={limit}"


def transaction_path(transaction_id: str) -> str:
    return TRANSACTION_PATH.format(transaction_id=transaction_id)


@dataclass(frozen=True)
class HistoryEntry:
    """One VALR Pay history item, parsed exactly."""

    transaction_id: str
    type: str
    status: str | None
    currency: str
    amount: Decimal
    note: str
    timestamp: datetime | None


_ISO = re.compile(
    r"^(?P<base>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2})(?:\.(?P<fraction>\d+))?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2})?$"
)


def parse_timestamp(value: object) -> datetime | None:
    """VALR's ISO-8601 timestamps (``Z``, any number of fraction digits); naive means UTC."""
    if not isinstance(value, str):
        return None
    match = _ISO.match(value.strip())
    if match is None:
        return None
    fraction = (match["fraction"] or "")[:6].ljust(6, "0")
    zone = match["zone"] or "+00:00"
    zone = "+00:00" if zone == "Z" else zone
    try:
        parsed = datetime.fromisoformat(f"{match['base']}.{fraction}{zone}")
    except ValueError:
        return None
    return parsed.astimezone(UTC)


def parse_amount(value: object) -> Decimal | None:
    """A JSON number (already a ``Decimal`` or ``int`` from ``loads_exact``) or a decimal string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, Decimal | int):
        amount = Decimal(value)
    elif isinstance(value, str):
        try:
            amount = Decimal(value.strip())
        except InvalidOperation:
            return None
    else:
        return None
    return amount if amount.is_finite() else None


def _text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def parse_entry(raw: object) -> HistoryEntry | None:
    """A history item, or ``None`` when it lacks what matching needs."""
    if not isinstance(raw, Mapping):
        return None
    transaction_id = _text(raw.get("transactionId"))
    entry_type = raw.get("type")
    currency = raw.get("currency")
    amount = parse_amount(raw.get("amount"))
    status = raw.get("status")
    note = raw.get("note")
    if (
        not transaction_id
        or not isinstance(entry_type, str)
        or not isinstance(currency, str)
        or amount is None
        or not (status is None or isinstance(status, str))
        or not (note is None or isinstance(note, str))
    ):
        return None
    return HistoryEntry(
        transaction_id=transaction_id,
        type=entry_type,
        status=status,
        currency=currency,
        amount=amount,
        note=note or "",
        timestamp=parse_timestamp(raw.get("timestamp")),
    )


def parse_history(raw: object) -> list[HistoryEntry]:
    """A history page; an answer that is not a list is a protocol error (``ValueError``)."""
    if not isinstance(raw, list):
        raise ValueError("VALR Pay history is not a JSON array")
    return [entry for item in raw if (entry := parse_entry(item)) is not None]


def parse_lookup_status(raw: object) -> str | None:
    """The ``status`` of a ``GET /v1/pay/transactionid/{id}`` answer."""
    if isinstance(raw, Mapping) and isinstance(raw.get("status"), str):
        return str(raw["status"])
    return None


def oldest(entries: Iterable[HistoryEntry]) -> datetime | None:
    stamps = [entry.timestamp for entry in entries if entry.timestamp is not None]
    return min(stamps) if stamps else None


# --- matching -------------------------------------------------------------------------------


def is_candidate(entry: HistoryEntry, order: OrderRequest) -> bool:
    """A credit for this order in its currency, whatever the amount."""
    return (
        entry.type == EntryType.CREDIT
        and entry.note.strip() == order.trade_no
        and entry.currency == order.pay_currency
    )


def unique(entries: Iterable[HistoryEntry]) -> list[HistoryEntry]:
    seen: set[str] = set()
    kept: list[HistoryEntry] = []
    for entry in entries:
        if entry.transaction_id not in seen:
            seen.add(entry.transaction_id)
            kept.append(entry)
    return kept


def needs_lookup(entries: Iterable[HistoryEntry], order: OrderRequest) -> list[str]:
    """Transaction ids of candidate credits whose history entry has no status."""
    return [
        e.transaction_id for e in unique(entries) if e.status is None and is_candidate(e, order)
    ]


def with_statuses(
    entries: Iterable[HistoryEntry], statuses: Mapping[str, str]
) -> list[HistoryEntry]:
    """Fill in statuses looked up by transaction id where the history left them out."""
    return [
        HistoryEntry(
            transaction_id=e.transaction_id,
            type=e.type,
            status=statuses.get(e.transaction_id),
            currency=e.currency,
            amount=e.amount,
            note=e.note,
            timestamp=e.timestamp,
        )
        if e.status is None and e.transaction_id in statuses
        else e
        for e in entries
    ]


def _payment(entry: HistoryEntry) -> Payment:
    return Payment(
        payment_id=entry.transaction_id,
        amount=entry.amount,
        currency=entry.currency,
        paid_at=entry.timestamp,
    )


def report_for(
    order: OrderRequest, entries: Iterable[HistoryEntry], *, truncated: bool = False
) -> OrderReport:
    """What the history says about one order; see the module docstring for the rules."""
    candidates = [entry for entry in unique(entries) if is_candidate(entry, order)]
    paying = [entry for entry in candidates if entry.amount >= order.pay_amount]
    underpaid = [
        entry
        for entry in candidates
        if entry.amount < order.pay_amount and state_for(entry.status) is OrderState.PAID
    ]
    parts = [entry.status or NO_STATUS for entry in paying]
    parts += [f"UNDERPAID:{entry.amount}" for entry in underpaid]
    if truncated:
        parts.append(HISTORY_TRUNCATED)
    raw_status = ";".join(parts) or NO_CREDIT

    states = [state_for(entry.status) for entry in paying]
    if OrderState.PAID in states:
        payments = tuple(_payment(e) for e in paying if state_for(e.status) is OrderState.PAID)
        return OrderReport(OrderState.PAID, raw_status, order.trade_no, payments)
    for state in (OrderState.PENDING, OrderState.FAILED, OrderState.EXPIRED):
        if state in states:
            return OrderReport(state, raw_status, order.trade_no)
    return OrderReport(OrderState.PENDING, raw_status, order.trade_no)


# --- errors ---------------------------------------------------------------------------------


def error_from(status_code: int, body: bytes) -> ValrApiError:
    """VALR's ``{"code": <negative int>, "message": ...}``, or whatever came instead."""
    code: int | None = None
    message = ""
    try:
        parsed: Any = loads_exact(body) if body else None
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, Mapping):
        raw_code = parsed.get("code")
        if isinstance(raw_code, int) and not isinstance(raw_code, bool):
            code = raw_code
        raw_message = parsed.get("message")
        if isinstance(raw_message, str):
            message = raw_message
    if not message:
        message = body[:200].decode(errors="replace").strip() or "no body"
    return ValrApiError(status_code, code, message)
