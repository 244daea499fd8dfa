"""A Binance Pay simulator that speaks the merchant API as documented, for test mode and tests.

What it checks on every ``/binancepay/openapi/*`` call, in this order, answering with Binance's
own envelopes: POST with ``content-type: application/json`` and a body (else ``100001001``
"System abnormality"); ``BinancePay-Certificate-SN`` is our API key (else ``400004``);
``BinancePay-Timestamp`` is in milliseconds and within 1 s of arrival (else ``400003``);
``BinancePay-Nonce`` is 32 letters or digits (else ``400001``); ``BinancePay-Signature`` is the
exact upper-case HMAC-SHA512 of ``ts\\nnonce\\nbody\\n`` (else ``400002``). An unknown path gets the
CloudFront 403 page Binance's edge answers with.

Choices where the documentation is silent:

- Refusals are HTTP 400 with ``{"status":"FAIL","code":...,"errorMessage":...}``; ``fail_next``
  answers HTTP 500 with ``400000``; ``reject_next`` refuses a create with ``400203``.
- A duplicate ``merchantTradeNo`` is refused with ``400201`` (Binance: "invalid or duplicate").
- ``orderAmount`` (number or numeric string) needs at most 8 decimals and at least 0.00000001;
  currencies are USDT, USDC, BNB, BTC, ETH and FDUSD; ``orderExpireTime`` must be in the future
  (no maximum is enforced: v3's limit is undocumented); without it an order lives one hour.
- ``checkoutUrl``, ``universalUrl`` and ``qrContent`` are the payer page
  ``{public_base_url}/checkout/{prepayId}``; ``deeplink`` is a ``bnc://`` link, which a desktop
  browser cannot open, so APP orders are driven through ``/_control`` (payrelay's sandbox
  controls) or through the ``checkoutUrl`` page. No ``qrcodeLink`` image is served.
- Binance pushes no decline. A payer's Decline marks the order ``CANCELED`` and sends
  ``PAY_CLOSED``, as a merchant close does; an expiry marks it ``EXPIRED`` and sends
  ``PAY_CLOSED``. Expiry is applied lazily, when the order is next looked at.
- The certificate serial is the MD5 hex of the public key's DER encoding; ``certPublic`` is PEM.
  ``POST /_control/rotate-key`` replaces the key pair; only the current key is served.
- Close is asynchronous as documented: it answers ``data: true`` and sends ``PAY_CLOSED``
  afterwards. Notifications go to the order's ``webhookUrl``; an order without one sends none.
- A call whose caller has disconnected (``hang_next`` after the caller's timeout) stops waiting.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from payrelay.issuers import simkit
from payrelay.issuers.binance import signing
from payrelay.issuers.binance.wire import (
    CERTIFICATES_PATH,
    CLOSE_ORDER_PATH,
    CREATE_ORDER_PATH,
    QUERY_ORDER_PATH,
    SUCCESS_CODE,
    SUCCESS_STATUS,
    TERMINAL_TYPES,
    BizStatus,
    BizType,
    ErrorCode,
    OrderStatus,
)
from payrelay.kit.jsonio import ExactJSONResponse, dumps_exact, loads_exact

TIMESTAMP_WINDOW_MS = 1000
DEFAULT_ORDER_LIFETIME_MS = 3_600_000
MIN_AMOUNT = Decimal("0.00000001")
SUPPORTED_CURRENCIES = frozenset({"USDT", "USDC", "BNB", "BTC", "ETH", "FDUSD"})
SIMULATED_MERCHANT_ID = "350000001"
MAX_URL_LENGTH = 256
_TRADE_NO = re.compile(r"[A-Za-z0-9]{1,32}")
_NONCE = re.compile(r"[A-Za-z0-9]{32}")
_OPEN = (OrderStatus.INITIAL, OrderStatus.PENDING)
_CLOUDFRONT_403 = (
    "<html><head><title>ERROR: The request could not be satisfied</title></head><body>"
    "<h1>403 ERROR</h1><h2>The request could not be satisfied.</h2></body></html>"
)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Refusal(Exception):
    """A business or authentication refusal, rendered as Binance's FAIL envelope."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def fail(code: str, message: str, status_code: int = 400) -> ExactJSONResponse:
    body = {"status": "FAIL", "code": code, "errorMessage": message}
    return ExactJSONResponse(body, status_code=status_code)


def system_abnormality() -> ExactJSONResponse:
    body = {
        "status": "ERROR",
        "type": "SYS",
        "code": ErrorCode.SYSTEM_ABNORMALITY.value,
        "errorData": "System abnormality",
    }
    return ExactJSONResponse(body, status_code=400)


def unknown_error() -> Response:
    return fail(ErrorCode.UNKNOWN_ERROR, "An unknown error occurred, please retry.", 500)


def success(data: Any) -> ExactJSONResponse:
    body = {"status": SUCCESS_STATUS, "code": SUCCESS_CODE, "data": data, "errorMessage": ""}
    return ExactJSONResponse(body)


@dataclass
class SimOrder:
    prepay_id: str
    trade_no: str
    terminal_type: str
    amount: Decimal
    currency: str
    description: str
    goods_type: str
    sub_merchant_id: str | None
    return_url: str | None
    cancel_url: str | None
    webhook_url: str | None
    create_time: int
    expire_time: int
    status: OrderStatus = OrderStatus.INITIAL
    transaction_id: str | None = None
    transact_time: int | None = None
    open_user_id: str | None = None


@dataclass
class SigningKey:
    private_key: rsa.RSAPrivateKey
    public_pem: str
    serial: str

    @classmethod
    def generate(cls) -> SigningKey:
        private_key = signing.generate_private_key()
        public_pem = signing.public_key_pem(private_key)
        return cls(private_key, public_pem, signing.certificate_serial(public_pem))


# Request validation -----------------------------------------------------------------------


def authenticate(
    config: simkit.SimulatorConfig, request: Request, body: bytes, received: int
) -> None:
    headers = request.headers
    if headers.get(signing.CERTIFICATE_SN) != config.api_key:
        raise Refusal(
            ErrorCode.INVALID_API_KEY_OR_IP, "API identity key is invalid or IP is not allowed."
        )
    timestamp = headers.get(signing.TIMESTAMP, "")
    if not (timestamp.isdigit() and abs(received - int(timestamp)) <= TIMESTAMP_WINDOW_MS):
        raise Refusal(
            ErrorCode.INVALID_TIMESTAMP, "Timestamp for this request is outside of the recvWindow."
        )
    nonce = headers.get(signing.NONCE, "")
    if not _NONCE.fullmatch(nonce):
        raise Refusal(
            ErrorCode.INVALID_REQUEST, "Nonce must be a random string of 32 letters or digits."
        )
    signature = headers.get(signing.SIGNATURE, "")
    if not signing.request_signature_matches(config.api_secret, timestamp, nonce, body, signature):
        raise Refusal(ErrorCode.INVALID_SIGNATURE, "Signature for this request is not valid.")


def _text(body: dict[str, Any], name: str, *, required: bool, limit: int = 256) -> str | None:
    value = body.get(name)
    if value is None or value == "":
        if required:
            raise Refusal(ErrorCode.MANDATORY_PARAM_EMPTY_OR_MALFORMED, f"{name} is mandatory.")
        return None
    if not isinstance(value, str):
        raise Refusal(ErrorCode.MANDATORY_PARAM_EMPTY_OR_MALFORMED, f"{name} must be a string.")
    if len(value) > limit:
        raise Refusal(ErrorCode.INVALID_PARAM_WRONG_LENGTH, f"{name} exceeds {limit} characters.")
    return value


def _object(body: dict[str, Any], name: str, *, required: bool) -> dict[str, Any]:
    value = body.get(name)
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise Refusal(ErrorCode.MANDATORY_PARAM_EMPTY_OR_MALFORMED, f"{name} is mandatory.")
    return value


def _amount(value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, Decimal | int | str):
        raise Refusal(ErrorCode.MANDATORY_PARAM_EMPTY_OR_MALFORMED, "orderAmount is mandatory.")
    try:
        amount = Decimal(value)
        valid = (
            amount.is_finite() and amount >= MIN_AMOUNT and amount == amount.quantize(MIN_AMOUNT)
        )
    except InvalidOperation:
        valid = False
    if not valid:
        raise Refusal(
            ErrorCode.INVALID_PARAM_WRONG_VALUE,
            "orderAmount must be a number of at least 0.00000001 with at most 8 decimal places.",
        )
    return amount


def _goods_type(body: dict[str, Any]) -> str:
    goods = body.get("goodsDetails")
    if not isinstance(goods, list) or not goods or not all(isinstance(g, dict) for g in goods):
        raise Refusal(ErrorCode.MANDATORY_PARAM_EMPTY_OR_MALFORMED, "goodsDetails is mandatory.")
    for item in goods:
        if item.get("goodsType") not in ("01", "02"):
            raise Refusal(ErrorCode.INVALID_PARAM_WRONG_VALUE, "goodsType must be 01 or 02.")
        _text(item, "goodsCategory", required=True, limit=4)
        _text(item, "referenceGoodsId", required=True, limit=64)
        _text(item, "goodsName", required=True)
    return str(goods[0]["goodsType"])


def _url(body: dict[str, Any], name: str) -> str | None:
    url = _text(body, name, required=False, limit=MAX_URL_LENGTH)
    if url is not None and not url.startswith(("http://", "https://")):
        raise Refusal(ErrorCode.INVALID_PARAM_WRONG_VALUE, f"{name} must be an http(s) URL.")
    return url


def order_from(body: dict[str, Any], now: int) -> SimOrder:
    """Validate a v3 create body the way Binance documents it."""
    terminal_type = _object(body, "env", required=True).get("terminalType")
    if terminal_type not in TERMINAL_TYPES:
        raise Refusal(ErrorCode.INVALID_PARAM_WRONG_VALUE, "env.terminalType is invalid.")
    trade_no = body.get("merchantTradeNo")
    if not isinstance(trade_no, str) or not _TRADE_NO.fullmatch(trade_no):
        raise Refusal(ErrorCode.INVALID_MERCHANT_TRADE_NO, "merchantTradeNo is invalid.")
    amount = _amount(body.get("orderAmount"))
    currency = body.get("currency")
    if currency not in SUPPORTED_CURRENCIES:
        raise Refusal(ErrorCode.INVALID_PARAM_WRONG_VALUE, "currency is not supported.")
    sub_merchant_id = _text(
        _object(body, "merchant", required=False), "subMerchantId", required=False, limit=19
    )
    description = _text(body, "description", required=True)
    goods_type = _goods_type(body)
    expire_time = body.get("orderExpireTime", now + DEFAULT_ORDER_LIFETIME_MS)
    if isinstance(expire_time, bool) or not isinstance(expire_time, int) or expire_time <= now:
        raise Refusal(
            ErrorCode.INVALID_PARAM_WRONG_VALUE, "orderExpireTime must be a future epoch in ms."
        )
    return SimOrder(
        prepay_id=str(10**17 + secrets.randbelow(9 * 10**17)),
        trade_no=trade_no,
        terminal_type=terminal_type,
        amount=amount,
        currency=currency,
        description=description or "",
        goods_type=goods_type,
        sub_merchant_id=sub_merchant_id,
        return_url=_url(body, "returnUrl"),
        cancel_url=_url(body, "cancelUrl"),
        webhook_url=_url(body, "webhookUrl"),
        create_time=now,
        expire_time=expire_time,
    )


# The simulated exchange ---------------------------------------------------------------------


@dataclass
class BinancePaySim:
    config: simkit.SimulatorConfig
    faults: simkit.Faults
    notifier: simkit.Notifier
    key: SigningKey
    orders: dict[str, SimOrder] = field(default_factory=dict)  # by merchantTradeNo
    by_prepay_id: dict[str, SimOrder] = field(default_factory=dict)
    background: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def base(self) -> str:
        return self.config.public_base_url.rstrip("/")

    def checkout_url(self, order: SimOrder) -> str:
        return f"{self.base}/checkout/{order.prepay_id}"

    def find(self, key: str) -> SimOrder:
        """By merchantTradeNo or prepayId; ``KeyError`` when neither matches."""
        order = self.orders.get(key) or self.by_prepay_id.get(key)
        if order is None:
            raise KeyError(key)
        return order

    def lookup(self, body: dict[str, Any]) -> SimOrder:
        prepay_id, trade_no = body.get("prepayId"), body.get("merchantTradeNo")
        if not prepay_id and not trade_no:
            raise Refusal(
                ErrorCode.MANDATORY_PARAM_EMPTY_OR_MALFORMED,
                "prepayId or merchantTradeNo is mandatory.",
            )
        order = (
            self.by_prepay_id.get(str(prepay_id)) if prepay_id else self.orders.get(str(trade_no))
        )
        if order is None:
            raise Refusal(ErrorCode.ORDER_NOT_FOUND, "Order not found.")
        self.expire_if_due(order)
        return order

    # API calls

    async def create(self, body: dict[str, Any]) -> Any:
        if self.faults.reject_next > 0:
            self.faults.reject_next -= 1
            raise Refusal(
                ErrorCode.INVALID_ACCOUNT_STATUS,
                "Merchant account status is not allowed to create orders.",
            )
        order = order_from(body, _now_ms())
        if order.trade_no in self.orders:
            raise Refusal(ErrorCode.INVALID_MERCHANT_TRADE_NO, "merchantTradeNo is duplicated.")
        self.orders[order.trade_no] = order
        self.by_prepay_id[order.prepay_id] = order
        checkout = self.checkout_url(order)
        return {
            "prepayId": order.prepay_id,
            "terminalType": order.terminal_type,
            "expireTime": order.expire_time,
            "qrContent": checkout,
            "checkoutUrl": checkout,
            "deeplink": f"bnc://app.binance.com/payment/secpay?linkToken={secrets.token_hex(16)}",
            "universalUrl": checkout,
            "currency": order.currency,
            "totalFee": order.amount,
        }

    async def query(self, body: dict[str, Any]) -> Any:
        order = self.lookup(body)
        data: dict[str, Any] = {
            "merchantId": SIMULATED_MERCHANT_ID,
            "prepayId": order.prepay_id,
            "transactionId": order.transaction_id,
            "merchantTradeNo": order.trade_no,
            "status": order.status.value,
            "currency": order.currency,
            "orderAmount": format(order.amount, "f"),
            "openUserId": order.open_user_id,
            "transactTime": order.transact_time,
            "createTime": order.create_time,
        }
        return {name: value for name, value in data.items() if value is not None}

    async def close(self, body: dict[str, Any]) -> Any:
        order = self.lookup(body)
        if order.status != OrderStatus.INITIAL:
            raise Refusal(
                ErrorCode.INVALID_ORDER_STATUS, "Order status does not allow it to be closed."
            )
        order.status = OrderStatus.CANCELED
        self.notify_later(order, BizStatus.PAY_CLOSED)
        return True

    async def certificates(self, body: dict[str, Any]) -> Any:
        return [{"certSerial": self.key.serial, "certPublic": self.key.public_pem}]

    # The payer and the clock

    def expire_if_due(self, order: SimOrder) -> None:
        if order.status in _OPEN and _now_ms() >= order.expire_time:
            order.status = OrderStatus.EXPIRED
            self.notify_later(order, BizStatus.PAY_CLOSED)

    def apply(self, order: SimOrder, outcome: str) -> BizStatus | None:
        """Move an open order; the notification to send, or None if nothing changed."""
        self.expire_if_due(order)
        if order.status not in _OPEN:
            return None
        if outcome == "pay":
            order.status = OrderStatus.PAID
            order.transaction_id = f"M_P_{secrets.randbelow(10**17):017d}"
            order.transact_time = _now_ms()
            order.open_user_id = secrets.token_hex(16)
            return BizStatus.PAY_SUCCESS
        order.status = OrderStatus.CANCELED if outcome == "decline" else OrderStatus.EXPIRED
        return BizStatus.PAY_CLOSED

    async def settle(self, order_key: str, outcome: str) -> dict[str, Any]:
        order = self.find(order_key)
        biz_status = self.apply(order, outcome)
        if biz_status is not None:
            await self.notify(order, biz_status)
        return {
            "merchantTradeNo": order.trade_no,
            "prepayId": order.prepay_id,
            "status": order.status.value,
            "changed": biz_status is not None,
        }

    def rotate_key(self) -> SigningKey:
        self.key = SigningKey.generate()
        return self.key

    # Notifications

    def notification(self, order: SimOrder, biz_status: BizStatus) -> tuple[dict[str, str], bytes]:
        data: dict[str, Any] = {
            "merchantTradeNo": order.trade_no,
            "productType": order.goods_type,
            "productName": order.description,
            "transactTime": order.transact_time or _now_ms(),
            "tradeType": order.terminal_type,
            "totalFee": order.amount,
            "currency": order.currency,
        }
        if biz_status is BizStatus.PAY_SUCCESS:
            data |= {
                "transactionId": order.transaction_id,
                "openUserId": order.open_user_id,
                "commission": Decimal("0"),
                "paymentInfo": {
                    "payerId": order.open_user_id,
                    "payMethod": "funding",
                    "paymentInstructions": [
                        {"currency": order.currency, "amount": order.amount, "price": Decimal("1")}
                    ],
                    "channel": "DEFAULT",
                },
            }
        body = dumps_exact(
            {
                "bizType": BizType.PAY.value,
                "bizId": int(order.prepay_id),
                "bizIdStr": order.prepay_id,
                "bizStatus": biz_status.value,
                "data": dumps_exact(data).decode(),
            }
        )
        timestamp, nonce = str(_now_ms()), signing.make_nonce()
        headers = {
            "Content-Type": "application/json",
            signing.CERTIFICATE_SN: self.key.serial,
            signing.NONCE: nonce,
            signing.TIMESTAMP: timestamp,
            signing.SIGNATURE: signing.sign_notification(
                self.key.private_key, timestamp, nonce, body
            ),
        }
        return headers, body

    async def notify(self, order: SimOrder, biz_status: BizStatus) -> None:
        if order.webhook_url is None:
            return
        headers, body = self.notification(order, biz_status)
        await self.notifier.deliver(order.webhook_url, headers, body)

    def notify_later(self, order: SimOrder, biz_status: BizStatus) -> None:
        """Send after the current reply, as Binance does for closes and expiries."""
        task = asyncio.get_running_loop().create_task(self.notify(order, biz_status))
        self.background.add(task)
        task.add_done_callback(self.background.discard)


# HTTP ---------------------------------------------------------------------------------------


async def _unless_disconnected(
    request: Request, work: Awaitable[Response | None]
) -> Response | None:
    """Await ``work``, giving up when the caller hangs up (so a hang never outlives its caller)."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.05)
            if done:
                return task.result()
            if await request.is_disconnected():
                return Response(status_code=499)
    finally:
        task.cancel()


def _api_routes(sim: BinancePaySim) -> dict[str, Callable[[dict[str, Any]], Awaitable[Any]]]:
    return {
        CREATE_ORDER_PATH: sim.create,
        QUERY_ORDER_PATH: sim.query,
        CLOSE_ORDER_PATH: sim.close,
        CERTIFICATES_PATH: sim.certificates,
    }


def _add_api(app: FastAPI, sim: BinancePaySim) -> None:
    routes = _api_routes(sim)

    @app.api_route(
        "/binancepay/openapi/{rest:path}", methods=["GET", "POST", "PUT", "DELETE", "PATCH"]
    )
    async def api(request: Request, rest: str) -> Response:
        received = _now_ms()
        body = await request.body()
        faulted = await _unless_disconnected(
            request, simkit.api_fault(sim.faults, unknown_error, request.url.path)
        )
        if faulted is not None:
            return faulted
        handler = routes.get(f"/binancepay/openapi/{rest}")
        if handler is None:
            return HTMLResponse(_CLOUDFRONT_403, status_code=403)
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if request.method != "POST" or content_type != "application/json" or not body:
            return system_abnormality()
        try:
            authenticate(sim.config, request, body, received)
            parsed = loads_exact(body)
            if not isinstance(parsed, dict):
                raise Refusal(ErrorCode.INVALID_REQUEST, "The request body must be a JSON object.")
            return success(await handler(parsed))
        except Refusal as refusal:
            return fail(refusal.code, refusal.message)
        except (ValueError, RecursionError):
            return fail(ErrorCode.INVALID_REQUEST, "The request body is not valid JSON.")


def _add_payer_page(app: FastAPI, sim: BinancePaySim) -> None:
    @app.get("/checkout/{prepay_id}")
    async def checkout(prepay_id: str) -> Response:
        order = sim.by_prepay_id.get(prepay_id)
        if order is None:
            return HTMLResponse("<h1>Order not found</h1>", status_code=404)
        sim.expire_if_due(order)
        page = sim.checkout_url(order)
        return simkit.payer_page(
            issuer="Binance Pay",
            title=f"Merchant {order.sub_merchant_id or SIMULATED_MERCHANT_ID}",
            amount=format(order.amount, "f"),
            currency=order.currency,
            description=order.description,
            pay_action=f"{page}/pay",
            decline_action=f"{page}/decline",
            status=None if order.status in _OPEN else order.status.value.lower(),
        )

    @app.post("/checkout/{prepay_id}/{outcome}")
    async def press(prepay_id: str, outcome: str) -> Response:
        order = sim.by_prepay_id.get(prepay_id)
        if order is None or outcome not in ("pay", "decline"):
            return HTMLResponse("<h1>Order not found</h1>", status_code=404)
        await sim.settle(prepay_id, outcome)
        target = order.return_url if order.status == OrderStatus.PAID else order.cancel_url
        return RedirectResponse(target or sim.checkout_url(order), status_code=303)


def create_simulator(
    config: simkit.SimulatorConfig, *, notify_client: httpx.AsyncClient | None = None
) -> simkit.Simulator:
    faults = simkit.Faults()
    notifier = simkit.Notifier(faults, notify_client or httpx.AsyncClient())
    sim = BinancePaySim(config, faults, notifier, SigningKey.generate())
    simulator = simkit.Simulator(app=None, faults=faults, notifier=notifier)
    simulator.public_key_pem = sim.key.public_pem

    app = FastAPI(title="Binance Pay simulator", docs_url=None, redoc_url=None, openapi_url=None)
    _add_api(app, sim)
    _add_payer_page(app, sim)
    app.include_router(simkit.control_router(faults, notifier, sim.settle))

    @app.post("/_control/rotate-key")
    async def rotate_key() -> Response:
        key = sim.rotate_key()
        simulator.public_key_pem = key.public_pem
        return ExactJSONResponse({"certSerial": key.serial})

    simulator.app = app
    return simulator
