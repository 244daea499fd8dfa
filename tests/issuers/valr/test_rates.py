"""Pricing: the exact round-up, the market-summary parsing, and the cached provider over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from payrelay.issuers.base import IssuerTimeout, IssuerUnavailable
from payrelay.issuers.simkit import SimulatorConfig
from payrelay.issuers.valr.rates import (
    Rate,
    UnsupportedCurrency,
    ValrRateProvider,
    price_in,
    rate_from_summary,
)
from payrelay.issuers.valr.simulator import create_simulator
from tests.issuers.valr.support import API_KEY, API_SECRET
from tests.servers import serve_app

CENT = Decimal("0.01")
NOW = datetime(2026, 3, 8, 15, 55, 18, tzinfo=UTC)

amounts = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("1000000"), places=2)
rates = st.decimals(min_value=Decimal("0.00000001"), max_value=Decimal("2000000"), places=8)


def rate(value: Decimal | str, pair: str = "USDCZAR") -> Rate:
    return Rate(pair=pair, rate=Decimal(value), at=NOW)


class TestPriceIn:
    @given(amount=amounts, value=rates)
    def test_merchant_is_never_short_and_never_overcharged_by_a_cent(
        self, amount: Decimal, value: Decimal
    ) -> None:
        price = price_in("USDC", amount, rate(value))
        assert price == price.quantize(CENT)
        exact_rate = Fraction(value)
        assert Fraction(price) * exact_rate >= Fraction(amount)
        assert Fraction(price - CENT) * exact_rate < Fraction(amount)

    def test_worked_example(self) -> None:
        assert price_in("USDC", Decimal("182.00"), rate("18.20")) == Decimal("10.00")
        assert price_in("USDC", Decimal("182.01"), rate("18.20")) == Decimal("10.01")
        assert price_in("USDT", Decimal("100.00"), rate("18.25", "USDTZAR")) == Decimal("5.48")

    def test_edge_just_below_a_cent_boundary(self) -> None:
        # 1e-30 ZAR less than 10.00 USDC at 18.20 still needs 10.00, never 10.01.
        amount = Decimal("182.00") - Decimal("1e-30")
        assert price_in("USDC", amount, rate("18.20")) == Decimal("10.00")

    def test_zero(self) -> None:
        assert price_in("USDC", Decimal("0"), rate("18.20")) == Decimal("0.00")

    @pytest.mark.parametrize(
        ("currency", "value", "amount"),
        [
            ("USDT", "18.20", "1"),  # a USDC rate cannot price USDT
            ("USDC", "0", "1"),
            ("USDC", "-1", "1"),
            ("USDC", "NaN", "1"),
            ("USDC", "18.20", "-1"),
        ],
    )
    def test_refused(self, currency: str, value: str, amount: str) -> None:
        with pytest.raises(ValueError):  # noqa: PT011
            price_in(currency, Decimal(amount), rate(value))


SUMMARY = {
    "currencyPair": "USDCZAR",
    "askPrice": "18.31",
    "bidPrice": "18.29",
    "lastTradedPrice": "18.30",
    "created": "2026-03-08T15:55:18.385Z",
}


class TestSummary:
    def test_bid_by_default_exactly(self) -> None:
        parsed = rate_from_summary("USDCZAR", SUMMARY, price_field="bidPrice", fetched_at=NOW)
        assert parsed == Rate(
            "USDCZAR", Decimal("18.29"), datetime(2026, 3, 8, 15, 55, 18, 385000, UTC)
        )

    def test_other_price_field(self) -> None:
        parsed = rate_from_summary("USDCZAR", SUMMARY, price_field="askPrice", fetched_at=NOW)
        assert parsed.rate == Decimal("18.31")

    def test_fetch_time_when_created_is_missing(self) -> None:
        summary = {k: v for k, v in SUMMARY.items() if k != "created"}
        assert (
            rate_from_summary("USDCZAR", summary, price_field="bidPrice", fetched_at=NOW).at == NOW
        )

    @pytest.mark.parametrize(
        "summary",
        [
            {**SUMMARY, "bidPrice": "0"},
            {**SUMMARY, "bidPrice": "abc"},
            {k: v for k, v in SUMMARY.items() if k != "bidPrice"},
            {**SUMMARY, "currencyPair": "USDTZAR"},
            ["USDCZAR"],
        ],
    )
    def test_unusable(self, summary: object) -> None:
        with pytest.raises(ValueError):  # noqa: PT011
            rate_from_summary("USDCZAR", summary, price_field="bidPrice", fetched_at=NOW)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def valr(http: httpx.AsyncClient) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    simulator = create_simulator(SimulatorConfig(API_KEY, API_SECRET), notify_client=http)
    async with serve_app(simulator.app) as base_url:
        yield base_url, http


class TestProvider:
    async def test_default_simulated_prices(self, valr: tuple[str, httpx.AsyncClient]) -> None:
        base_url, client = valr
        provider = ValrRateProvider(base_url, client)
        usdc = await provider.zar_per_unit("USDC")
        usdt = await provider.zar_per_unit("USDT")
        assert (usdc.pair, usdc.rate) == ("USDCZAR", Decimal("18.20"))
        assert (usdt.pair, usdt.rate) == ("USDTZAR", Decimal("18.25"))
        assert isinstance(usdc.rate, Decimal)
        assert usdc.at.tzinfo is not None

    async def test_cached_for_ttl_then_refetched(self, valr: tuple[str, httpx.AsyncClient]) -> None:
        base_url, client = valr
        clock = Clock()
        provider = ValrRateProvider(base_url, client, ttl=timedelta(seconds=30), clock=clock)
        assert (await provider.zar_per_unit("USDC")).rate == Decimal("18.20")
        await client.post(f"{base_url}/_control/rates", json={"USDCZAR": "19.05"})
        clock.now += timedelta(seconds=29)
        assert (await provider.zar_per_unit("USDC")).rate == Decimal("18.20")
        clock.now += timedelta(seconds=1)
        assert (await provider.zar_per_unit("USDC")).rate == Decimal("19.05")

    async def test_bid_and_ask_are_told_apart(self, valr: tuple[str, httpx.AsyncClient]) -> None:
        base_url, client = valr
        answer = await client.post(
            f"{base_url}/_control/rates",
            json={"USDTZAR": {"bidPrice": "18.10", "askPrice": "18.40"}},
        )
        assert answer.status_code == 200
        bid = await ValrRateProvider(base_url, client).zar_per_unit("USDT")
        ask = await ValrRateProvider(base_url, client, price_field="askPrice").zar_per_unit("USDT")
        assert (bid.rate, ask.rate) == (Decimal("18.10"), Decimal("18.40"))

    async def test_unsupported_currency(self, valr: tuple[str, httpx.AsyncClient]) -> None:
        base_url, client = valr
        with pytest.raises(UnsupportedCurrency):
            await ValrRateProvider(base_url, client).zar_per_unit("BTC")

    async def test_5xx_is_unavailable(self, valr: tuple[str, httpx.AsyncClient]) -> None:
        base_url, client = valr
        await client.post(f"{base_url}/_control/faults", json={"fail_next": 1})
        with pytest.raises(IssuerUnavailable, match="500"):
            await ValrRateProvider(base_url, client).zar_per_unit("USDC")

    async def test_unknown_pair_is_unavailable(self, valr: tuple[str, httpx.AsyncClient]) -> None:
        base_url, client = valr
        provider = ValrRateProvider(base_url, client, pairs={"EURC": "EURCZAR"})
        with pytest.raises(IssuerUnavailable, match="400"):
            await provider.zar_per_unit("EURC")

    async def test_hang_is_timeout(self, valr: tuple[str, httpx.AsyncClient]) -> None:
        base_url, client = valr
        await client.post(f"{base_url}/_control/faults", json={"hang_next": 1})
        provider = ValrRateProvider(base_url, client, timeout=httpx.Timeout(0.3))
        with pytest.raises(IssuerTimeout):
            await provider.zar_per_unit("USDC")

    async def test_nothing_listening_is_unavailable(self, http: httpx.AsyncClient) -> None:
        provider = ValrRateProvider("http://127.0.0.1:9", http)
        with pytest.raises(IssuerUnavailable):
            await provider.zar_per_unit("USDC")
