"""Wire schemas of the transfer request operations, validated exactly as the contract states."""

from __future__ import annotations

import hashlib
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from payrelay.kit.jsonio import dumps_exact
from payrelay.kit.validation import STORABLE, HttpUrlText, MoneyAmount

# Caps for fields the contract leaves unbounded, so storage stays bounded (docs/api.md).
REFERENCE_MAX = 128
RECIPIENT_MAX = 256
MERCHANT_ID_MAX = 128


class TransferStatus(StrEnum):
    PENDING = "pending"
    PROCESSED = "processed"
    FAILED = "failed"
    EXPIRED = "expired"


class TransferRequestIn(BaseModel):
    """Body of ``POST /tx/createTransferRequest``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    recipient: Annotated[
        str, StringConstraints(strict=True, min_length=1, max_length=RECIPIENT_MAX), STORABLE
    ] = Field(description="Recipient wallet address.")
    amount: MoneyAmount = Field(
        description="ZAR amount: a JSON number >= 0.01, a multiple of 0.01, at most the configured "
        "maximum (default 1000000.00). Strings are refused.",
    )
    issuer: Literal["Binance", "Bybit", "Valr"]
    acquirerMerchantName: Literal["Paystack"]
    reference: Annotated[
        str, StringConstraints(strict=True, min_length=11, max_length=REFERENCE_MAX), STORABLE
    ] = Field(description="Unique per merchant and mode.")
    merchantID: Annotated[
        str, StringConstraints(strict=True, min_length=1, max_length=MERCHANT_ID_MAX), STORABLE
    ] = Field(description="The merchant's identifier at the issuer.")
    description: Annotated[
        str, StringConstraints(strict=True, min_length=1, max_length=100), STORABLE
    ]
    terminalType: Literal["APP", "WEB"]
    successUrl: HttpUrlText
    failedUrl: HttpUrlText
    webhookUrl: HttpUrlText
    currency: Literal["USDC", "USDT", "ZAR"] = "USDC"
    customReference: (
        Annotated[str, StringConstraints(strict=True, max_length=100), STORABLE] | None
    ) = None
    merchantCategoryCode: (
        Annotated[str, StringConstraints(strict=True, max_length=10), STORABLE] | None
    ) = None
    goodsType: Literal["01", "02"] | None = None

    def fingerprint(self) -> str:
        """Identity of the request's content, defaults applied, to tell a safe retry from reuse."""
        canonical = dumps_exact(dict(sorted(self.model_dump().items())))
        return hashlib.sha256(canonical).hexdigest()


class TransferCreated(BaseModel):
    link: str = Field(description="Issuer deeplink (the sandbox checkout page in test mode).")


class PaymentStatusOut(BaseModel):
    status: TransferStatus
    timestamp: datetime = Field(description="UTC time of the last status change, ISO 8601 with Z.")
    amount: Annotated[Decimal, Field(json_schema_extra={"type": "number"})] = Field(
        description="The ZAR amount, exact to the cent."
    )


class NewReference(BaseModel):
    reference: str = Field(description="A fresh, unused, URL-safe reference (22 characters).")
