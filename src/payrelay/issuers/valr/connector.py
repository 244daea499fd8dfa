"""The VALR Pay connector: a locally built payer link, and polling of VALR Pay history.

Nothing is sent to VALR to open an order (VALR has none). The outcome is found by reading the
receiving account's ``GET /v1/pay/history`` with payrelay's signed credentials, so in live mode
a VALR merchant's ``merchantID`` must be the PayID of the account those credentials read (or of
the sub-account named in ``subaccount_id``); credits to any other PayID are invisible to us.

Paging: ``skip=0&limit=100`` and onwards while a page is full, assuming newest-first order
(undocumented), until a page reaches entries older than ``expires_at - max_order_lifetime`` or
``max_pages`` pages were read; a cut-short read says ``HISTORY_TRUNCATED`` in ``raw_status``.

Errors: a timeout is ``IssuerTimeout``; a transport error, a 5xx, an unparseable answer and
every 4xx are ``IssuerUnavailable``. A 401/403 (bad key, bad signature, missing content type)
means payrelay cannot poll at all: it is raised as ``ValrApiError`` (an ``IssuerUnavailable``)
carrying VALR's own code and words, as is 429 (rate limited).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
from pydantic import SecretStr

from payrelay.issuers.base import (
    Acknowledgement,
    InvalidNotification,
    Issuer,
    IssuerNotification,
    IssuerTimeout,
    IssuerUnavailable,
    OrderOpened,
    OrderRejected,
    OrderReport,
    OrderRequest,
)
from payrelay.issuers.valr import signing, transformers
from payrelay.issuers.valr.transformers import HistoryEntry
from payrelay.issuers.valr.wire import ValrApiError, ValrErrorCode
from payrelay.kit.jsonio import loads_exact

DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=3.0)
PAGE_SIZE = 100
MAX_PAGES = 20
MAX_ORDER_LIFETIME = timedelta(days=2)


@dataclass(frozen=True)
class ValrCredentials:
    api_key: str
    api_secret: SecretStr = field(repr=False)
    subaccount_id: str = ""  # a main-account key reading a sub-account's history


def _now_ms() -> int:
    return int(time.time() * 1000)


class ValrConnector:
    issuer = Issuer.VALR
    supports_close = False
    pushes_notifications = False

    def __init__(
        self,
        credentials: ValrCredentials,
        *,
        base_url: str,
        client: httpx.AsyncClient,
        pay_url: str = transformers.LIVE_PAY_URL,
        append_return_urls: bool = False,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        page_size: int = PAGE_SIZE,
        max_pages: int = MAX_PAGES,
        max_order_lifetime: timedelta = MAX_ORDER_LIFETIME,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self._credentials = credentials
        self._base_url = base_url.rstrip("/")
        self._client = client
        self._pay_url = pay_url
        self._append_return_urls = append_return_urls
        self._timeout = timeout
        self._page_size = page_size
        self._max_pages = max_pages
        self._max_order_lifetime = max_order_lifetime
        self._clock_ms = clock_ms

    async def create_order(self, order: OrderRequest) -> OrderOpened | OrderRejected:
        """No HTTP call: the link is built here, and the same order always gets the same link."""
        return transformers.opened(
            order, self._pay_url, append_return_urls=self._append_return_urls
        )

    async def query_order(self, order: OrderRequest, issuer_order_id: str | None) -> OrderReport:
        entries, truncated = await self._history_since(order)
        missing = transformers.needs_lookup(entries, order)
        if missing:
            statuses = {tx: status for tx in missing if (status := await self._lookup(tx))}
            entries = transformers.with_statuses(entries, statuses)
        return transformers.report_for(order, entries, truncated=truncated)

    async def close_order(self, order: OrderRequest, issuer_order_id: str | None) -> bool:
        return False

    async def verify_notification(
        self, headers: Mapping[str, str], body: bytes
    ) -> IssuerNotification | None:
        raise InvalidNotification("VALR sends no notifications")

    def acknowledgement(self) -> Acknowledgement:
        """Never used (VALR pushes nothing); present because every connector has one."""
        return Acknowledgement(200, "application/json", b"{}")

    async def _history_since(self, order: OrderRequest) -> tuple[list[HistoryEntry], bool]:
        cutoff = order.expires_at - self._max_order_lifetime
        entries: list[HistoryEntry] = []
        for page in range(self._max_pages):
            raw = await self._get(
                transformers.history_path(page * self._page_size, self._page_size)
            )
            try:
                page_entries = transformers.parse_history(raw)
            except ValueError as exc:
                raise IssuerUnavailable(str(exc)) from exc
            entries.extend(page_entries)
            page_oldest = transformers.oldest(page_entries)
            if len(raw) < self._page_size or (page_oldest is not None and page_oldest < cutoff):
                return entries, False
        return entries, True

    async def _lookup(self, transaction_id: str) -> str | None:
        try:
            raw = await self._get(transformers.transaction_path(transaction_id))
        except ValrApiError as exc:
            if exc.code == ValrErrorCode.PAYMENT_NOT_FOUND:
                return None  # stays without a status: PENDING
            raise
        return transformers.parse_lookup_status(raw)

    async def _get(self, path: str) -> Any:
        credentials = self._credentials
        headers = signing.request_headers(
            credentials.api_key,
            credentials.api_secret.get_secret_value(),
            "GET",
            path,
            timestamp_ms=self._clock_ms(),
            subaccount_id=credentials.subaccount_id,
        )
        try:
            response = await self._client.get(
                self._base_url + path, headers=headers, timeout=self._timeout
            )
        except httpx.TimeoutException as exc:
            raise IssuerTimeout(f"VALR did not answer GET {path} in time") from exc
        except httpx.HTTPError as exc:
            raise IssuerUnavailable(f"VALR GET {path} failed: {exc!r}") from exc
        if response.status_code != 200:
            raise transformers.error_from(response.status_code, response.content)
        try:
            return loads_exact(response.content)
        except (ValueError, RecursionError) as exc:
            raise IssuerUnavailable(f"VALR answered GET {path} with invalid JSON") from exc
