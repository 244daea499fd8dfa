"""A VALR simulator: VALR Pay history, lookups and PayID, the pay page, and market summaries.

It checks payrelay's signatures exactly as ``authentication.md`` documents: ``X-VALR-API-KEY``,
``X-VALR-TIMESTAMP`` (ms) and ``X-VALR-SIGNATURE`` = lower-case hex HMAC-SHA512 over
``timestamp + VERB + path-with-query + body + subaccountId`` (``X-VALR-SUB-ACCOUNT-ID`` or "").
The path is the one under the simulator's mount point, as a client whose base URL includes the
mount signs it. Choices where VALR documents nothing (marked [U] in the research notes):

- Without ``Content-Type: application/json`` an API call is 403 ``{"message": "Forbidden"}``.
- An unknown or missing key is 401 ``{"code": -11251, "message": "API-key is invalid"}`` (the
  words are VALR's as seen in client code; the code is ours). A bad, missing or stale signature
  is 401 ``{"code": -11252, "message": "Request has an invalid signature"}`` (VALR's body as seen
  in real replies); "stale" means more than ``timestamp_window`` (60 s) either side of our clock.
- Faults apply to every API call (history, lookups, PayID, market summaries); ``reject_next``
  has nothing to refuse, as there is no create call. An induced 5xx is 500
  ``{"message": "Internal Server Error"}``; a hung call is abandoned when the caller hangs up.
- An unknown transaction id is 400 ``{"code": -15407, "message": "Cannot find payment"}``; an
  unknown pair is 400 ``{"message": "Currency pair not found"}``.
- History is newest first, ``skip`` defaults to 0 and ``limit`` to 100 (at most 100).
- One account receives every payment, whatever PayID the link names, so test merchants may use
  any ``merchantID``; ``GET /v1/pay/payid`` answers ``pay_id`` (by default derived from the key).
- The pay page (``GET /payments/send``) takes ``payId``, ``amount``, ``currency``, ``note`` and,
  for payrelay's test mode only, ``successUrl``/``failedUrl``. Pay adds a ``COMPLETE`` credit,
  Decline a ``FAILED`` one; both answer 303 to the return URL (or to a small result page). The
  page can be paid twice, as the real one can: that is a duplicate payment.
- VALR pushes nothing, so the notifier exists but is never used. ``/_control/orders/{trade_no}/
  pay|decline`` pays as the last link seen for that note (the page was opened, or
  ``POST /_control/expect`` told us); ``expire`` changes nothing, as on VALR.
  ``POST /_control/credits`` adds any history entry (duplicates, underpayments, other
  currencies, debits, entries without a status); ``POST /_control/rates`` sets market prices.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from payrelay.issuers.simkit import (
    Faults,
    Notifier,
    Simulator,
    SimulatorConfig,
    api_fault,
    control_router,
    payer_page,
)
from payrelay.issuers.valr import signing
from payrelay.issuers.valr.transformers import parse_amount, parse_timestamp
from payrelay.issuers.valr.wire import (
    API_KEY,
    SIGNATURE,
    SUB_ACCOUNT_ID,
    TIMESTAMP,
    Direction,
    EntryType,
    PayStatus,
    ValrErrorCode,
)
from payrelay.kit.jsonio import ExactJSONResponse, is_json_content_type, loads_exact

DEFAULT_RATES = {"USDCZAR": Decimal("18.20"), "USDTZAR": Decimal("18.25")}
PRICE_FIELDS = ("askPrice", "bidPrice", "lastTradedPrice")
MAX_LIMIT = 100


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_pay_id(api_key: str) -> str:
    """A stable 20-character upper-case PayID for the account behind ``api_key``."""
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    digest = hashlib.sha256(api_key.encode()).digest()
    return "".join(alphabet[byte % len(alphabet)] for byte in digest[:20])


@dataclass(frozen=True)
class Expectation:
    pay_id: str
    amount: Decimal
    currency: str


@dataclass
class Entry:
    """One VALR Pay movement on the simulated account."""

    sequence: int
    transaction_id: str
    identifier: str
    type: str
    status: str | None
    amount: Decimal
    currency: str
    note: str
    timestamp: datetime
    status_in_history: bool = True
    other_party: str = "Simulated payer"

    def history_item(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "identifier": self.identifier,
            "otherPartyIdentifier": self.other_party,
            "amount": self.amount,
            "currency": self.currency,
        }
        if self.status is not None and self.status_in_history:
            item["status"] = self.status
        item.update(
            {
                "timestamp": _iso(self.timestamp),
                "note": self.note,
                "transactionId": self.transaction_id,
                "anonymous": False,
                "reversed": False,
                "type": self.type,
            }
        )
        return item

    def lookup(self) -> dict[str, Any]:
        direction = Direction.RECEIVE if self.type == EntryType.CREDIT else Direction.SEND
        return {
            "amount": format(self.amount, "f"),
            "currency": self.currency,
            "timestamp": _iso(self.timestamp),
            "transactionId": self.transaction_id,
            "status": self.status or PayStatus.INITIATED.value,
            "direction": direction.value,
        }


@dataclass
class Account:
    pay_id: str
    entries: list[Entry] = field(default_factory=list)
    expectations: dict[str, Expectation] = field(default_factory=dict)
    rates: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    _sequence: itertools.count[int] = field(default_factory=itertools.count)
    _transaction_ids: itertools.count[int] = field(
        default_factory=lambda: itertools.count(900_000_000_000_000_000 + secrets.randbelow(10**15))
    )

    def add(
        self,
        *,
        amount: Decimal,
        currency: str,
        note: str,
        status: str | None,
        entry_type: str = EntryType.CREDIT.value,
        timestamp: datetime | None = None,
        status_in_history: bool = True,
    ) -> Entry:
        entry = Entry(
            sequence=next(self._sequence),
            transaction_id=str(next(self._transaction_ids)),
            identifier=str(uuid.uuid4()),
            type=entry_type,
            status=status,
            amount=amount,
            currency=currency,
            note=note,
            timestamp=timestamp or datetime.now(UTC),
            status_in_history=status_in_history,
        )
        self.entries.append(entry)
        return entry

    def newest_first(self) -> list[Entry]:
        return sorted(self.entries, key=lambda e: (e.timestamp, e.sequence), reverse=True)

    def find(self, *, transaction_id: str | None = None, identifier: str | None = None) -> Entry:
        for entry in self.entries:
            if transaction_id is not None and entry.transaction_id == transaction_id:
                return entry
            if identifier is not None and entry.identifier == identifier:
                return entry
        raise KeyError(transaction_id or identifier)


def _error(status_code: int, code: int | None, message: str) -> JSONResponse:
    body: dict[str, Any] = {"message": message}
    if code is not None:
        body = {"code": code, "message": message}
    return JSONResponse(body, status_code=status_code)


def _server_error() -> Response:
    return _error(500, None, "Internal Server Error")


def _signed_path(request: Request) -> str:
    """The path (with its raw query string) the client signed: relative to the mount point."""
    raw_path = request.scope.get("raw_path") or request.url.path.encode()
    path = bytes(raw_path).decode("latin-1")
    root = str(request.scope.get("root_path") or "")
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    query = bytes(request.scope.get("query_string") or b"").decode("latin-1")
    return f"{path}?{query}" if query else path


async def _until_disconnected(request: Request) -> None:
    while True:
        if await request.is_disconnected():
            return
        await asyncio.sleep(0.05)


def _return_url(value: str | None) -> str | None:
    if not value:
        return None
    return value if urlsplit(value).scheme in ("http", "https") else None


def create_simulator(
    config: SimulatorConfig,
    *,
    notify_client: httpx.AsyncClient | None = None,
    pay_id: str | None = None,
    timestamp_window: timedelta = timedelta(seconds=60),
) -> Simulator:
    faults = Faults()
    owns_client = notify_client is None
    client = notify_client or httpx.AsyncClient()
    notifier = Notifier(faults, client)
    account = Account(pay_id or default_pay_id(config.api_key))
    account.rates = {pair: dict.fromkeys(PRICE_FIELDS, p) for pair, p in DEFAULT_RATES.items()}
    window_ms = int(timestamp_window.total_seconds() * 1000)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        if owns_client:
            await client.aclose()

    app = FastAPI(title="VALR simulator", lifespan=lifespan)

    async def fault(request: Request) -> Response | None:
        """``api_fault``, abandoned when the caller hangs up (so a hang never outlives a test)."""
        if not (faults.hang_next or faults.latency_seconds):
            return await api_fault(faults, _server_error, request.url.path)
        applied = asyncio.ensure_future(api_fault(faults, _server_error, request.url.path))
        gone = asyncio.ensure_future(_until_disconnected(request))
        done, pending = await asyncio.wait({applied, gone}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        if applied in done:
            return applied.result()
        return Response(status_code=499)

    def authenticate(request: Request, body: str) -> Response | None:
        if not is_json_content_type(request.headers.get("content-type")):
            return _error(403, None, "Forbidden")
        key = request.headers.get(API_KEY)
        if not key or not secrets.compare_digest(key.encode(), config.api_key.encode()):
            return _error(401, ValrErrorCode.INVALID_API_KEY, "API-key is invalid")
        timestamp = request.headers.get(TIMESTAMP, "")
        signature = request.headers.get(SIGNATURE, "")
        invalid = _error(401, ValrErrorCode.INVALID_SIGNATURE, "Request has an invalid signature")
        if not timestamp.isdigit() or not signature:
            return invalid
        if abs(int(time.time() * 1000) - int(timestamp)) > window_ms:
            return invalid
        if not signing.signature_matches(
            config.api_secret,
            timestamp,
            request.method,
            _signed_path(request),
            body,
            request.headers.get(SUB_ACCOUNT_ID, ""),
            signature,
        ):
            return invalid
        return None

    async def guard(request: Request, *, signed: bool = True) -> Response | None:
        body = (await request.body()).decode("utf-8", errors="replace")
        refused = await fault(request)
        if refused is None and signed:
            refused = authenticate(request, body)
        elif refused is None and not is_json_content_type(request.headers.get("content-type")):
            refused = _error(403, None, "Forbidden")
        return refused

    # --- VALR Pay API ---------------------------------------------------------------------

    @app.get("/v1/pay/history")
    async def history(request: Request) -> Response:
        if (refused := await guard(request)) is not None:
            return refused
        try:
            skip = max(int(request.query_params.get("skip", "0")), 0)
            limit = min(max(int(request.query_params.get("limit", str(MAX_LIMIT))), 1), MAX_LIMIT)
        except ValueError:
            return _error(400, None, "skip and limit must be integers")
        wanted = {s for s in request.query_params.get("status", "").split(",") if s}
        entries = [e for e in account.newest_first() if not wanted or (e.status or "") in wanted]
        return ExactJSONResponse([e.history_item() for e in entries[skip : skip + limit]])

    @app.get("/v1/pay/payid")
    async def own_pay_id(request: Request) -> Response:
        if (refused := await guard(request)) is not None:
            return refused
        return JSONResponse({"payId": account.pay_id})

    @app.get("/v1/pay/transactionid/{transaction_id}")
    async def by_transaction_id(request: Request, transaction_id: str) -> Response:
        if (refused := await guard(request)) is not None:
            return refused
        try:
            return JSONResponse(account.find(transaction_id=transaction_id).lookup())
        except KeyError:
            return _error(400, ValrErrorCode.PAYMENT_NOT_FOUND, "Cannot find payment")

    @app.get("/v1/pay/identifier/{identifier}")
    async def by_identifier(request: Request, identifier: str) -> Response:
        if (refused := await guard(request)) is not None:
            return refused
        try:
            return ExactJSONResponse(account.find(identifier=identifier).history_item())
        except KeyError:
            return _error(400, ValrErrorCode.PAYMENT_NOT_FOUND, "Cannot find payment")

    # --- public market data ---------------------------------------------------------------

    @app.get("/v1/public/{pair}/marketsummary")
    async def market_summary(request: Request, pair: str) -> Response:
        if (refused := await guard(request, signed=False)) is not None:
            return refused
        prices = account.rates.get(pair)
        if prices is None:
            return _error(400, None, "Currency pair not found")
        last = prices["lastTradedPrice"]
        summary = {
            "currencyPair": pair,
            "askPrice": format(prices["askPrice"], "f"),
            "bidPrice": format(prices["bidPrice"], "f"),
            "lastTradedPrice": format(last, "f"),
            "previousClosePrice": format(last, "f"),
            "baseVolume": "125000.5",
            "quoteVolume": format(last * Decimal("125000.5"), "f"),
            "highPrice": format(max(prices.values()), "f"),
            "lowPrice": format(min(prices.values()), "f"),
            "created": _iso(datetime.now(UTC)),
            "changeFromPrevious": "0",
            "markPrice": format(last, "f"),
        }
        return JSONResponse(summary)

    # --- the payer's page -----------------------------------------------------------------

    def link_expectation(params: Mapping[str, str]) -> tuple[Expectation, str] | str:
        pay_id = params.get("payId", "").strip()
        amount = parse_amount(params.get("amount", ""))
        currency = params.get("currency", "").strip()
        if not pay_id:
            return "payId is required"
        if amount is None or amount <= 0:
            return "amount must be a positive number"
        if not currency:
            return "currency is required"
        return Expectation(pay_id, amount, currency), params.get("note", "")

    def page_query(expected: Expectation, note: str, params: Mapping[str, str]) -> str:
        query = {
            "payId": expected.pay_id,
            "amount": format(expected.amount, "f"),
            "currency": expected.currency,
            "note": note,
        }
        for name in ("successUrl", "failedUrl"):
            if params.get(name):
                query[name] = params[name]
        return urlencode(query)

    @app.get("/payments/send")
    async def pay_page(request: Request) -> Response:
        params = dict(request.query_params)
        parsed = link_expectation(params)
        if isinstance(parsed, str):
            return HTMLResponse(f"<p>Cannot pay: {parsed}.</p>", status_code=400)
        expected, note = parsed
        if note:
            account.expectations[note] = expected
        query = page_query(expected, note, params)
        return payer_page(
            issuer="VALR",
            title=f"Pay {expected.pay_id}",
            amount=format(expected.amount, "f"),
            currency=expected.currency,
            description=f"Note: {note}" if note else "No note",
            pay_action=f"send/pay?{query}",
            decline_action=f"send/decline?{query}",
        )

    async def payer_acts(request: Request, status: PayStatus, url_param: str) -> Response:
        params = dict(request.query_params)
        parsed = link_expectation(params)
        if isinstance(parsed, str):
            return HTMLResponse(f"<p>Cannot pay: {parsed}.</p>", status_code=400)
        expected, note = parsed
        account.add(amount=expected.amount, currency=expected.currency, note=note, status=status)
        target = _return_url(params.get(url_param)) or f"done?{urlencode({'status': status})}"
        return RedirectResponse(target, status_code=303)

    @app.post("/payments/send/pay")
    async def pay(request: Request) -> Response:
        return await payer_acts(request, PayStatus.COMPLETE, "successUrl")

    @app.post("/payments/send/decline")
    async def decline(request: Request) -> Response:
        return await payer_acts(request, PayStatus.FAILED, "failedUrl")

    @app.get("/payments/send/done")
    async def done(status: str = "") -> Response:
        return payer_page(
            issuer="VALR",
            title="VALR Pay",
            amount="",
            currency="",
            description="",
            pay_action="",
            decline_action="",
            status=status.lower() or "unknown",
        )

    # --- control --------------------------------------------------------------------------

    async def settle(trade_no: str, outcome: str) -> dict[str, Any]:
        if outcome == "expire":
            return {
                "note": "VALR Pay has no order expiry: nothing happened on VALR's side; "
                "payrelay's own expiry applies",
            }
        expected = account.expectations[trade_no]
        status = PayStatus.COMPLETE if outcome == "pay" else PayStatus.FAILED
        entry = account.add(
            amount=expected.amount, currency=expected.currency, note=trade_no, status=status
        )
        return {"credit": _plain(entry.history_item())}

    app.include_router(control_router(faults, notifier, settle))

    async def control_body(request: Request) -> dict[str, Any] | JSONResponse:
        try:
            parsed = loads_exact(await request.body())
        except (ValueError, RecursionError) as exc:
            return JSONResponse({"error": f"invalid JSON: {exc}"}, status_code=400)
        if not isinstance(parsed, dict):
            return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
        return parsed

    @app.post("/_control/expect")
    async def expect(request: Request) -> JSONResponse:
        body = await control_body(request)
        if isinstance(body, JSONResponse):
            return body
        params = {k: str(v) for k, v in body.items() if v is not None}
        if "link" in params:
            params = dict(parse_qsl(urlsplit(params["link"]).query))
        parsed = link_expectation(params)
        if isinstance(parsed, str):
            return JSONResponse({"error": parsed}, status_code=400)
        expected, note = parsed
        if not note:
            return JSONResponse({"error": "note is required"}, status_code=400)
        account.expectations[note] = expected
        return JSONResponse({"note": note, "amount": format(expected.amount, "f")})

    @app.post("/_control/credits")
    async def add_credit(request: Request) -> JSONResponse:
        body = await control_body(request)
        if isinstance(body, JSONResponse):
            return body
        amount = parse_amount(body.get("amount"))
        currency = body.get("currency")
        note = body.get("note", "")
        status = body.get("status", PayStatus.COMPLETE.value)
        entry_type = body.get("type", EntryType.CREDIT.value)
        raw_timestamp = body.get("timestamp")
        timestamp = parse_timestamp(raw_timestamp) if raw_timestamp is not None else None
        if (
            amount is None
            or not isinstance(currency, str)
            or not isinstance(note, str)
            or not (status is None or isinstance(status, str))
            or not isinstance(entry_type, str)
            or (raw_timestamp is not None and timestamp is None)
        ):
            return JSONResponse({"error": "need amount, currency and valid fields"}, 400)
        entry = account.add(
            amount=amount,
            currency=currency,
            note=note,
            status=status,
            entry_type=entry_type,
            timestamp=timestamp,
            status_in_history=not body.get("hideStatus", False),
        )
        return JSONResponse(_plain(entry.history_item()))

    @app.post("/_control/rates")
    async def set_rates(request: Request) -> JSONResponse:
        body = await control_body(request)
        if isinstance(body, JSONResponse):
            return body
        for pair, value in body.items():
            if isinstance(value, dict):
                prices = dict(account.rates.get(pair) or {})
                updates = value
            else:
                prices = {}
                updates = dict.fromkeys(PRICE_FIELDS, value)
            for name, raw in updates.items():
                price = parse_amount(raw)
                if name not in PRICE_FIELDS or price is None or price <= 0:
                    return JSONResponse({"error": f"bad {name} for {pair}"}, status_code=400)
                prices[name] = price
            if set(prices) != set(PRICE_FIELDS):
                return JSONResponse({"error": f"{pair} needs {', '.join(PRICE_FIELDS)}"}, 400)
            account.rates[pair] = prices
        return JSONResponse(
            {pair: {k: format(v, "f") for k, v in ps.items()} for pair, ps in account.rates.items()}
        )

    @app.get("/_control/history")
    async def whole_history() -> JSONResponse:
        return JSONResponse([_plain(e.history_item()) for e in account.newest_first()])

    return Simulator(app=app, faults=faults, notifier=notifier)


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    """A history item for a control answer: the amount as its exact decimal string."""
    return {k: format(v, "f") if isinstance(v, Decimal) else v for k, v in item.items()}
