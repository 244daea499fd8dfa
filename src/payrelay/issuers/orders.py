"""Between our transfer rows and the connector's ``OrderRequest``."""

from __future__ import annotations

from decimal import Decimal

from payrelay.db.models import Transfer
from payrelay.issuers.base import OrderRequest
from payrelay.kit.validation import CENT


def notify_url(base_url: str, issuer_slug: str) -> str:
    return f"{base_url}/issuers/{issuer_slug}/notifications"


def order_request_for(transfer: Transfer, notify: str = "") -> OrderRequest:
    """Rebuild the order we opened, to query or close it later."""
    return OrderRequest(
        trade_no=transfer.trade_no or "",
        reference=transfer.reference,
        issuer_merchant_id=transfer.issuer_merchant_id,
        amount_zar=Decimal(transfer.amount_cents) * CENT,
        pay_currency=transfer.pay_currency or transfer.currency,
        pay_amount=transfer.pay_amount
        if transfer.pay_amount is not None
        else Decimal(transfer.amount_cents) * CENT,
        description=transfer.description,
        terminal_type=transfer.terminal_type,
        goods_type=transfer.goods_type,
        success_url=transfer.success_url,
        failed_url=transfer.failed_url,
        notify_url=notify,
        expires_at=transfer.expires_at,
    )
