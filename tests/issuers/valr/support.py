"""An order to test with, and a signed call helper for the simulator's own endpoints."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from payrelay.issuers.base import OrderRequest, trade_no_for
from payrelay.issuers.valr import signing

API_KEY = "valr-test-key"
API_SECRET = "4961b74efac86b25cce8fbe4c9811c4c7a787b7a5996660afcc2e287ad864363"
PAY_ID = "ZJ9UX4LBBTRAXD2W7Z5V"


def make_order(reference: str = "order-1", **overrides: Any) -> OrderRequest:
    order = OrderRequest(
        trade_no=trade_no_for("merchant-1", "test", reference),
        reference=reference,
        issuer_merchant_id=PAY_ID,
        amount_zar=Decimal("182.00"),
        pay_currency="USDC",
        pay_amount=Decimal("10.00"),
        description="Two coffees",
        terminal_type="WEB",
        goods_type=None,
        success_url="https://shop.example/ok?order=1",
        failed_url="https://shop.example/failed?order=1",
        notify_url="https://payrelay.example/issuers/valr/notifications",
        expires_at=datetime.now(UTC) + timedelta(minutes=15),
    )
    return replace(order, **overrides)


def signed(path: str, *, secret: str = API_SECRET, key: str = API_KEY) -> dict[str, str]:
    return signing.request_headers(key, secret, "GET", path, timestamp_ms=int(time.time() * 1000))
