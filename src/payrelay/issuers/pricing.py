"""Which currency each issuer is paid in, and how a ZAR amount becomes the payer's amount.

``amount`` is always ZAR. Where the issuer takes a ZAR price we send ZAR; otherwise the ZAR
amount is converted at the rate provider's price and rounded up to the cent, so the merchant is
never short. A pair that cannot work is refused before anything is opened.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from typing import Protocol

from payrelay.issuers.base import Issuer

CENT = Decimal("0.01")


class Pricing(StrEnum):
    ZAR = "zar"  # the issuer takes the ZAR price itself
    CONVERT = "convert"  # we convert ZAR to the payer's stablecoin


# Binance Pay orders are priced in crypto only (fiatCurrency exists but ZAR is not documented).
# Bybit takes fiat prices (currencyType=fiat) and converts itself; VALR Pay moves ZAR natively.
RULES: dict[Issuer, dict[str, Pricing]] = {
    Issuer.BINANCE: {"USDC": Pricing.CONVERT, "USDT": Pricing.CONVERT},
    Issuer.BYBIT: {"USDC": Pricing.CONVERT, "USDT": Pricing.CONVERT, "ZAR": Pricing.ZAR},
    Issuer.VALR: {"USDC": Pricing.CONVERT, "USDT": Pricing.CONVERT, "ZAR": Pricing.ZAR},
}


def pricing_for(issuer: Issuer, currency: str) -> Pricing | None:
    return RULES[issuer].get(currency)


@dataclass(frozen=True)
class Quote:
    """ZAR per one unit of a currency, as the rate provider gave it."""

    pair: str
    rate: Decimal
    at: datetime


class RateSource(Protocol):
    async def zar_per_unit(self, currency: str) -> Quote: ...


@dataclass(frozen=True)
class Priced:
    pay_currency: str
    pay_amount: Decimal
    rate: Decimal | None
    rate_at: datetime | None


def convert(amount_zar: Decimal, rate: Decimal) -> Decimal:
    """ZAR to the payer's currency, rounded up to the cent, exactly: ``result * rate >=
    amount_zar`` and one cent less would fall short. Fractions, so no digit is ever lost."""
    exact = Fraction(amount_zar) / Fraction(rate) * 100
    cents = -(-exact.numerator // exact.denominator)  # ceiling
    return Decimal(cents) * CENT


async def price(rates: RateSource, issuer: Issuer, currency: str, amount_zar: Decimal) -> Priced:
    rule = pricing_for(issuer, currency)
    if rule is None:
        raise ValueError(f"{issuer.value} cannot take payment in {currency}")
    if rule is Pricing.ZAR:
        return Priced("ZAR", amount_zar, None, None)
    quote = await rates.zar_per_unit(currency)
    return Priced(currency, convert(amount_zar, quote.rate), quote.rate, quote.at)
