"""Open the order at the issuer before the transfer is stored.

Nothing is stored when the issuer refuses (502) or does not answer (504), so the merchant may
retry with the same reference. The trade number is derived from the reference, so a retry after
a timeout finds an order the issuer opened anyway and adopts it instead of opening a second.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import structlog

from payrelay.auth.dependencies import Caller
from payrelay.context import AppContext
from payrelay.errors import BadRequest, ServiceUnavailable, UpstreamError, UpstreamTimeout
from payrelay.issuers.base import (
    Issuer,
    IssuerConnector,
    IssuerTimeout,
    IssuerUnavailable,
    OrderOpened,
    OrderRejected,
    OrderRequest,
    OrderState,
    trade_no_for,
)
from payrelay.issuers.orders import notify_url
from payrelay.issuers.pricing import Priced, price, pricing_for
from payrelay.transfers.schemas import TransferRequestIn

log = structlog.get_logger("payrelay.issuers")


@dataclass(frozen=True)
class OpenedOrder:
    trade_no: str
    issuer_order_id: str
    link: str
    details_json: str
    priced: Priced


def check_pair(request: TransferRequestIn) -> None:
    """Refuse an issuer-currency pair that cannot work, before anything is opened."""
    if pricing_for(Issuer(request.issuer), request.currency) is None:
        raise BadRequest(
            f"{request.issuer} cannot take payment in {request.currency}; choose USDC or USDT.",
            details={"currency": f"not supported by {request.issuer}"},
        )


def require_connector(context: AppContext, caller: Caller, issuer: Issuer) -> IssuerConnector:
    connector = context.connectors.get(issuer, caller.mode)
    if connector is None:
        raise ServiceUnavailable(
            f"The {issuer.value} issuer connector is not configured for {caller.mode.value} "
            "mode; set its credentials (see docs/issuers.md)."
        )
    return connector


async def open_order(
    context: AppContext, caller: Caller, request: TransferRequestIn, expires_at: datetime
) -> OpenedOrder:
    issuer = Issuer(request.issuer)
    connector = require_connector(context, caller, issuer)
    rates = context.connectors.rate_source(caller.mode)
    if rates is None:
        raise ServiceUnavailable("No exchange-rate provider is configured.")
    try:
        priced = await price(rates, issuer, request.currency, request.amount)
    except IssuerUnavailable as exc:
        raise ServiceUnavailable("The exchange-rate provider is unavailable; retry.") from exc
    order = OrderRequest(
        trade_no=trade_no_for(caller.merchant_id, caller.mode.value, request.reference),
        reference=request.reference,
        issuer_merchant_id=request.merchantID,
        amount_zar=request.amount,
        pay_currency=priced.pay_currency,
        pay_amount=priced.pay_amount,
        description=request.description,
        terminal_type=request.terminalType,
        goods_type=request.goodsType,
        success_url=request.successUrl,
        failed_url=request.failedUrl,
        notify_url=notify_url(context.settings.base_url, issuer.slug),
        expires_at=expires_at,
    )
    try:
        result = await connector.create_order(order)
        if isinstance(result, OrderRejected) and result.duplicate_trade_no:
            result = await _adopt(connector, order, result)
    except IssuerTimeout as exc:
        log.warning("issuer.create_timeout", issuer=issuer.value, trade_no=order.trade_no)
        raise UpstreamTimeout(
            f"{issuer.value} did not answer in time. Nothing was stored: retry with the same "
            "reference."
        ) from exc
    except IssuerUnavailable as exc:
        raise UpstreamError(
            f"{issuer.value} could not be reached. Nothing was stored: retry with the same "
            "reference.",
            details={"issuer": str(exc) or type(exc).__name__},
        ) from exc
    if isinstance(result, OrderRejected):
        raise UpstreamError(
            f"{issuer.value} refused the order: {result.reason}",
            details={"issuer": result.reason, "code": result.code},
        )
    return OpenedOrder(
        trade_no=order.trade_no,
        issuer_order_id=result.issuer_order_id,
        link=result.link,
        details_json=json.dumps(result.details, sort_keys=True),
        priced=priced,
    )


async def _adopt(
    connector: IssuerConnector, order: OrderRequest, rejection: OrderRejected
) -> OrderOpened | OrderRejected:
    """The issuer already has this trade number: an earlier attempt of ours timed out after the
    issuer acted. Take that order over if it is still open and we can give the payer its link."""
    report = await connector.query_order(order, None)
    if report.state is OrderState.NOT_FOUND or report.issuer_order_id is None:
        return rejection
    if report.state is not OrderState.PENDING or not report.link:
        return OrderRejected(
            rejection.code,
            f"an order for this reference already exists at the issuer ({report.raw_status}) "
            "and cannot be resumed; use a new reference",
        )
    log.info("issuer.order_adopted", issuer=connector.issuer.value, trade_no=order.trade_no)
    return OrderOpened(report.issuer_order_id, report.link, {"adopted": "true"})
