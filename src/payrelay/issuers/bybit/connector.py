"""Bybit Pay (QR payment, ``E_COMMERCE``) behind payrelay's ``IssuerConnector``.

- A non-success ``retCode`` on create is returned as ``OrderRejected`` with Bybit's own ``retMsg``,
  including a bad signature (``400002``), a clock outside the receive window (``400003``) and an
  unknown API key: nothing was opened, and the reason reaches the merchant. ``400620`` (this
  ``merchantTradeNo`` already has an order) is marked ``duplicate_trade_no`` so the order is
  adopted by querying. ``500000`` (Bybit's internal error), HTTP 5xx, transport errors and
  unreadable answers raise ``IssuerUnavailable``; a timeout raises ``IssuerTimeout``.
- A query has no rejection shape: ``400004`` is ``NOT_FOUND``, any other error raises
  ``IssuerUnavailable`` with Bybit's code and message.
- Bybit documents no way to close an unpaid order (its state machine names a cancel API that is
  not published), so ``supports_close`` is False and the order ends by ``TIMEOUT``.
- Notifications are verified with the platform public key from configuration; without one,
  every notification is refused (fail closed) and outcomes arrive by polling only. A
  ``timestamp`` more than five minutes from our clock is refused: Bybit states that window for
  its recurring-payment webhooks only, and we apply it to QR payments as well.
- The acknowledgement is HTTP 200 ``text/plain`` ``success``: the QR pages do not say, the
  recurring product documents exactly this.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import httpx
import structlog
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
from payrelay.issuers.bybit import signing, transformers
from payrelay.issuers.bybit.wire import (
    CREATE_PAY_PATH,
    DEEPLINK_TEMPLATE,
    PAY_RESULT_PATH,
    Envelope,
    RetCode,
)

log = structlog.get_logger("payrelay.issuers.bybit")

DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=3.0)
NOTIFICATION_MAX_SKEW = timedelta(minutes=5)
_MAX_TIMESTAMP_DIGITS = 12


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class BybitCredentials:
    """A Bybit API key pair (system-generated, HMAC) and Bybit's platform public key (PEM)."""

    api_key: str = field(repr=False)
    api_secret: SecretStr
    platform_public_key: str | None = field(default=None, repr=False)


class BybitConnector:
    issuer = Issuer.BYBIT
    supports_close = False
    pushes_notifications = True

    def __init__(
        self,
        credentials: BybitCredentials,
        base_url: str,
        client: httpx.AsyncClient,
        *,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        recv_window_ms: int = signing.DEFAULT_RECV_WINDOW_MS,
        checkout_link_template: str = DEEPLINK_TEMPLATE,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        """``checkout_link_template`` (with ``{pay_id}``) rebuilds the payer link when an order
        is adopted: the real deeplink by default, ``{simulator}/checkout/{pay_id}`` for the
        simulator. A malformed platform public key raises ``ValueError`` here, not later."""
        self._credentials = credentials
        self._base_url = base_url.rstrip("/")
        self._client = client
        self._timeout = timeout
        self._recv_window_ms = recv_window_ms
        self._link_template = checkout_link_template
        self._clock = clock
        key = credentials.platform_public_key
        self._platform_key = signing.load_public_key(key) if key else None

    async def create_order(self, order: OrderRequest) -> OrderOpened | OrderRejected:
        request = transformers.create_pay_request(order, now=self._clock())
        body = json.dumps(request, separators=(",", ":")).encode()
        envelope = await self._call("POST", CREATE_PAY_PATH, body.decode(), body=body)
        try:
            result = transformers.opened_or_rejected(envelope)
        except ValueError as exc:
            raise IssuerUnavailable("Bybit create_pay succeeded without a usable result") from exc
        if isinstance(result, OrderRejected):
            log.info("issuer.rejected", issuer="bybit", trade_no=order.trade_no, code=result.code)
        return result

    async def query_order(self, order: OrderRequest, issuer_order_id: str | None) -> OrderReport:
        params = transformers.pay_result_query(order, issuer_order_id)
        url_query = "&".join(f"{name}={quote(value, safe='')}" for name, value in params)
        envelope = await self._call(
            "GET", f"{PAY_RESULT_PATH}?{url_query}", transformers.query_string(params)
        )
        try:
            return transformers.report(envelope, self._link_for)
        except ValueError as exc:
            raise IssuerUnavailable(f"Bybit pay_result failed: {exc}") from exc

    async def close_order(self, order: OrderRequest, issuer_order_id: str | None) -> bool:
        return False

    async def verify_notification(
        self, headers: Mapping[str, str], body: bytes
    ) -> IssuerNotification | None:
        if self._platform_key is None:
            raise InvalidNotification("no Bybit platform public key is configured")
        lowered = {name.lower(): value for name, value in headers.items()}
        timestamp = lowered.get(signing.NOTIFY_TIMESTAMP, "")
        signature = lowered.get(signing.NOTIFY_SIGNATURE, "")
        if not signature:
            raise InvalidNotification("missing signature header")
        if not (
            timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= _MAX_TIMESTAMP_DIGITS
        ):
            raise InvalidNotification("missing or malformed timestamp header")
        skew = abs(self._clock().timestamp() - int(timestamp))
        if skew > NOTIFICATION_MAX_SKEW.total_seconds():
            raise InvalidNotification("notification timestamp is more than 5 minutes from now")
        if not signing.notification_signature_matches(
            self._platform_key, timestamp, body, signature
        ):
            raise InvalidNotification("notification signature does not verify")
        try:
            return transformers.notification(body)
        except ValueError as exc:
            raise InvalidNotification("notification body is not a Bybit PayOrder") from exc

    def acknowledgement(self) -> Acknowledgement:
        return Acknowledgement(status_code=200, media_type="text/plain", body=b"success")

    def _link_for(self, pay_id: str) -> str:
        return self._link_template.format(pay_id=pay_id)

    async def _call(
        self, method: str, path: str, payload: str, *, body: bytes | None = None
    ) -> Envelope:
        """One signed call. ``payload`` is what Bybit signs: the body, or the unescaped query."""
        endpoint = path.split("?", 1)[0]
        headers = signing.request_headers(
            self._credentials.api_key,
            self._credentials.api_secret.get_secret_value(),
            payload,
            timestamp_ms=int(self._clock().timestamp() * 1000),
            recv_window_ms=self._recv_window_ms,
        )
        try:
            response = await self._client.request(
                method, self._base_url + path, content=body, headers=headers, timeout=self._timeout
            )
        except httpx.TimeoutException as exc:
            raise IssuerTimeout(f"Bybit {endpoint} did not answer in time") from exc
        except httpx.HTTPError as exc:
            raise IssuerUnavailable(f"Bybit {endpoint}: {type(exc).__name__}") from exc
        if response.status_code >= 500:
            raise IssuerUnavailable(f"Bybit {endpoint} answered HTTP {response.status_code}")
        try:
            envelope = transformers.parse_envelope(response.content)
        except ValueError as exc:
            raise IssuerUnavailable(
                f"Bybit {endpoint} answered HTTP {response.status_code} without a JSON envelope"
            ) from exc
        if envelope.retCode == RetCode.INTERNAL_ERROR:
            raise IssuerUnavailable(f"Bybit {endpoint}: {envelope.retMsg or 'internal error'}")
        return envelope
