"""Binance Pay connector: create, query and close orders; verify and parse notifications.

Transport failures become ``IssuerTimeout``/``IssuerUnavailable`` here, at the boundary; a
business refusal of a create comes back as ``OrderRejected`` data (see ``transformers``).

Notification keys come from the certificates endpoint and are cached by serial. A serial the
cache does not hold triggers one refetch, at most once per ``certificate_refetch_interval``
seconds, so forged serials cannot turn each request into a call to Binance; a serial still unknown
after that is refused. If the certificates endpoint itself cannot be reached,
``IssuerUnavailable`` propagates: the notification may be genuine, so payrelay should answer with
a 5xx and let Binance resend it (it resends up to six times).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric import rsa
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
from payrelay.issuers.binance import signing, transformers
from payrelay.issuers.binance.wire import (
    CERTIFICATES_PATH,
    CLOSE_ORDER_PATH,
    CREATE_ORDER_PATH,
    QUERY_ORDER_PATH,
    Certificate,
    Envelope,
)
from payrelay.kit.jsonio import dumps_exact, loads_exact

DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=3.0)
ACKNOWLEDGEMENT_BODY = b'{"returnCode":"SUCCESS","returnMessage":null}'
_NOTIFICATION_HEADERS = (
    signing.CERTIFICATE_SN,
    signing.NONCE,
    signing.TIMESTAMP,
    signing.SIGNATURE,
)


@dataclass(frozen=True)
class BinanceCredentials:
    """The merchant API identity key and its secret, from the Merchant Management Platform."""

    api_key: SecretStr
    api_secret: SecretStr


class BinanceConnector:
    issuer = Issuer.BINANCE
    supports_close = True
    pushes_notifications = True

    def __init__(
        self,
        credentials: BinanceCredentials,
        *,
        base_url: str,
        client: httpx.AsyncClient,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        certificate_refetch_interval: float = 5.0,
    ) -> None:
        self._credentials = credentials
        self._base_url = base_url.rstrip("/")
        self._client = client
        self._timeout = timeout
        self._refetch_interval = certificate_refetch_interval
        self._keys: dict[str, rsa.RSAPublicKey] = {}
        self._keys_fetched_at: float | None = None
        self._keys_lock = asyncio.Lock()

    async def create_order(self, order: OrderRequest) -> OrderOpened | OrderRejected:
        envelope = await self._post(CREATE_ORDER_PATH, transformers.create_order_body(order))
        try:
            return transformers.order_outcome(envelope, order.terminal_type)
        except ValueError as exc:
            raise IssuerUnavailable(f"Binance Pay create reply is malformed: {exc}") from exc

    async def query_order(self, order: OrderRequest, issuer_order_id: str | None) -> OrderReport:
        lookup = transformers.order_lookup(order, issuer_order_id)
        envelope = await self._post(QUERY_ORDER_PATH, lookup)
        try:
            return transformers.order_report(envelope)
        except ValueError as exc:
            raise IssuerUnavailable(f"Binance Pay query reply is malformed: {exc}") from exc

    async def close_order(self, order: OrderRequest, issuer_order_id: str | None) -> bool:
        lookup = transformers.order_lookup(order, issuer_order_id)
        return transformers.close_accepted(await self._post(CLOSE_ORDER_PATH, lookup))

    async def verify_notification(
        self, headers: Mapping[str, str], body: bytes
    ) -> IssuerNotification | None:
        lowered = {name.lower(): value for name, value in headers.items()}
        serial, nonce, timestamp, signature = (
            lowered.get(name.lower(), "") for name in _NOTIFICATION_HEADERS
        )
        if not (serial and nonce and timestamp.isdigit() and signature):
            raise InvalidNotification("missing or malformed BinancePay-* signature headers")
        key = await self._public_key(serial)
        if not signing.notification_signature_matches(key, timestamp, nonce, body, signature):
            raise InvalidNotification("the notification signature does not verify")
        try:
            return transformers.notification_event(body)
        except (ValueError, RecursionError) as exc:
            raise InvalidNotification(f"the notification body is malformed: {exc}") from exc

    def acknowledgement(self) -> Acknowledgement:
        return Acknowledgement(
            status_code=200, media_type="application/json", body=ACKNOWLEDGEMENT_BODY
        )

    async def _public_key(self, serial: str) -> rsa.RSAPublicKey:
        if (key := self._keys.get(serial)) is not None:
            return key
        async with self._keys_lock:
            if (key := self._keys.get(serial)) is not None:
                return key
            now = time.monotonic()
            throttled = (
                self._keys_fetched_at is not None
                and now - self._keys_fetched_at < self._refetch_interval
            )
            if not throttled:
                self._keys_fetched_at = now
                await self._fetch_certificates()
        if (key := self._keys.get(serial)) is None:
            raise InvalidNotification("the notification names an unknown certificate serial")
        return key

    async def _fetch_certificates(self) -> None:
        envelope = await self._post(CERTIFICATES_PATH, {})
        if not envelope.succeeded:
            raise IssuerUnavailable(
                f"Binance Pay refused the certificates query: {envelope.code} {envelope.reason}"
            )
        try:
            if not isinstance(envelope.data, list):
                raise ValueError("data is not a list")
            certificates = [Certificate.model_validate(item) for item in envelope.data]
            keys = {
                cert.certSerial: signing.load_public_key(cert.certPublic) for cert in certificates
            }
        except ValueError as exc:
            raise IssuerUnavailable(f"Binance Pay certificates are malformed: {exc}") from exc
        self._keys.update(keys)

    async def _post(self, path: str, body: Mapping[str, Any]) -> Envelope:
        """One signed call; the exact bytes signed are the bytes sent."""
        raw = dumps_exact(body)
        headers = signing.request_headers(
            self._credentials.api_key.get_secret_value(),
            self._credentials.api_secret.get_secret_value(),
            raw,
            timestamp_ms=time.time_ns() // 1_000_000,
            nonce=signing.make_nonce(),
        )
        try:
            response = await self._client.post(
                self._base_url + path, content=raw, headers=headers, timeout=self._timeout
            )
        except httpx.TimeoutException as exc:
            raise IssuerTimeout(f"Binance Pay did not answer {path} in time") from exc
        except httpx.HTTPError as exc:
            raise IssuerUnavailable(f"Binance Pay could not be reached for {path}: {exc}") from exc
        if response.status_code >= 500:
            raise IssuerUnavailable(f"Binance Pay answered {path} with HTTP {response.status_code}")
        try:
            return Envelope.model_validate(loads_exact(response.content))
        except (ValueError, RecursionError) as exc:
            raise IssuerUnavailable(
                f"Binance Pay answered {path} with HTTP {response.status_code} and no envelope"
            ) from exc
