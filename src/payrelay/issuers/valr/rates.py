"""ZAR prices of the payer's stablecoins, from VALR's public market summary, and the rounding.

``GET /v1/public/{pair}/marketsummary`` (no authentication) for ``USDCZAR`` and ``USDTZAR``;
prices are decimal strings, read exactly. Choices:

- The rate is the **bid** price by default (``price_field``): the crypto the merchant receives
  turns back into ZAR at the bid, so pricing at the bid (the lower price) asks the payer for
  enough that the merchant is never short. Pricing at the ask or last trade would leave the
  merchant short by the spread whenever the crypto is sold.
- The rate's time is VALR's ``created``; the cache runs on our own clock from the moment of the
  fetch, for ``ttl``. Any failure (timeout, transport, non-200, bad JSON, a price that is not a
  positive number) is ``IssuerUnavailable``/``IssuerTimeout``; nothing stale is served past
  ``ttl``.
- ``price_in`` divides exactly (rationals, no 28-digit rounding) and rounds up to the cent, so
  ``price * rate >= amount_zar`` and ``(price - 0.01) * rate < amount_zar`` hold exactly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx

from payrelay.issuers.base import IssuerTimeout, IssuerUnavailable
from payrelay.issuers.pricing import Quote, convert
from payrelay.issuers.valr.transformers import parse_amount, parse_timestamp
from payrelay.issuers.valr.wire import MARKET_SUMMARY_PATH
from payrelay.kit.jsonio import loads_exact

# The shared pricing module's quote type, so this provider is a ``pricing.RateSource``.
Rate = Quote

PAIRS: dict[str, str] = {"USDC": "USDCZAR", "USDT": "USDTZAR"}
CENT = Decimal("0.01")
DEFAULT_TTL = timedelta(seconds=30)
DEFAULT_TIMEOUT = httpx.Timeout(5.0, connect=3.0)


class UnsupportedCurrency(ValueError):
    """No VALR pair prices this currency in ZAR."""


def _now() -> datetime:
    return datetime.now(UTC)


def rate_from_summary(
    pair: str, summary: object, *, price_field: str, fetched_at: datetime
) -> Rate:
    """One market summary as a rate; ``ValueError`` when it does not carry a usable price."""
    if not isinstance(summary, Mapping):
        raise ValueError("market summary is not a JSON object")
    named = summary.get("currencyPair")
    if named is not None and named != pair:
        raise ValueError(f"market summary is for {named!r}, not {pair}")
    price = parse_amount(summary.get(price_field))
    if price is None or price <= 0:
        raise ValueError(f"market summary has no positive {price_field}")
    at = parse_timestamp(summary.get("created")) or fetched_at
    return Rate(pair=pair, rate=price, at=at)


def price_in(currency: str, amount_zar: Decimal, rate: Rate) -> Decimal:
    """``amount_zar`` in ``currency`` at ``rate``, rounded up to the cent, exactly."""
    if rate.pair != f"{currency}ZAR":
        raise ValueError(f"a {rate.pair} rate cannot price {currency}")
    if not rate.rate.is_finite() or rate.rate <= 0:
        raise ValueError("the rate must be a positive number")
    if not amount_zar.is_finite() or amount_zar < 0:
        raise ValueError("the amount must be a non-negative number")
    return convert(amount_zar, rate.rate)


class ValrRateProvider:
    """ZAR per unit of USDC or USDT, cached for ``ttl``."""

    def __init__(
        self,
        base_url: str,
        client: httpx.AsyncClient,
        *,
        ttl: timedelta = DEFAULT_TTL,
        price_field: str = "bidPrice",
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        pairs: Mapping[str, str] = PAIRS,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._client = client
        self._ttl = ttl
        self._price_field = price_field
        self._timeout = timeout
        self._pairs = dict(pairs)
        self._clock = clock
        self._cache: dict[str, tuple[datetime, Rate]] = {}
        self._lock = asyncio.Lock()

    async def zar_per_unit(self, currency: str) -> Rate:
        pair = self._pairs.get(currency)
        if pair is None:
            raise UnsupportedCurrency(f"VALR has no ZAR price for {currency}")
        cached = self._fresh(pair)
        if cached is not None:
            return cached
        async with self._lock:
            cached = self._fresh(pair)
            if cached is not None:
                return cached
            fetched_at = self._clock()
            rate = await self._fetch(pair, fetched_at)
            self._cache[pair] = (fetched_at, rate)
            return rate

    def _fresh(self, pair: str) -> Rate | None:
        entry = self._cache.get(pair)
        if entry is None:
            return None
        fetched_at, rate = entry
        return rate if self._clock() - fetched_at < self._ttl else None

    async def _fetch(self, pair: str, fetched_at: datetime) -> Rate:
        path = MARKET_SUMMARY_PATH.format(pair=pair)
        try:
            response = await self._client.get(
                self._base_url + path,
                headers={"Content-Type": "application/json"},
                timeout=self._timeout,
            )
        except httpx.TimeoutException as exc:
            raise IssuerTimeout(f"VALR did not answer GET {path} in time") from exc
        except httpx.HTTPError as exc:
            raise IssuerUnavailable(f"VALR GET {path} failed: {exc!r}") from exc
        if response.status_code != 200:
            raise IssuerUnavailable(f"VALR answered GET {path} with HTTP {response.status_code}")
        try:
            summary: Any = loads_exact(response.content)
            return rate_from_summary(
                pair, summary, price_field=self._price_field, fetched_at=fetched_at
            )
        except (ValueError, RecursionError) as exc:
            raise IssuerUnavailable(f"VALR's {pair} market summary is unusable: {exc}") from exc
