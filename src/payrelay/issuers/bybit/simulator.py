"""A Bybit Pay simulator speaking the QR payment API (``E_COMMERCE``) as documented.

What it checks, as Bybit does: the V5 headers and HMAC-SHA256 signature of every API call (POST:
raw body; GET: the unescaped query string), the timestamp rule
``server_time - recv_window <= timestamp < server_time + 1000`` (``400003``), the API key, the
``Version`` header (absent, ``5.00`` or ``5.01``), and the create fields the documentation marks
required. Errors come back in Bybit's envelope with HTTP 200; an induced 5xx is HTTP 500 with
``retCode`` 500000.

Where it differs from the real exchange:

- ``checkoutLink`` is the simulator's payer page ``{public_base_url}/checkout/{payId}``, not a
  ``bybitapp://`` deeplink, and ``qrContent`` is a placeholder 1x1 PNG, not a scannable code.
- A reused ``merchantTradeNo`` for the same ``merchantId`` is refused with ``400620``.
- Orders never time out on their own: ``/_control/orders/{key}/expire`` plays the clock (so a
  test can still pay an order after our own expiry, the late-payment case). ``{key}`` is the
  ``merchantTradeNo`` or the ``payId``.
- Accepted currencies: USDT and USDC as ``crypto`` (up to 8 decimals), ZAR, USD and EUR as
  ``fiat`` (up to 2 decimals); others get ``400009``, too many decimals ``400008``.
- An unknown API key gets ``10003`` (the general V5 code; the Pay error table has none).
- ``reject_next`` refuses a create with ``500102`` (merchant not available via API).
- Notifications are signed with a 1024-bit RSA key made when the simulator starts; its public
  half is ``Simulator.public_key_pem``. Refunds are not simulated.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import unquote

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from payrelay.issuers.bybit import signing
from payrelay.issuers.bybit.wire import (
    CREATE_PAY_PATH,
    CURRENCY_TYPES,
    MAX_EXPIRY_SECONDS,
    MAX_GOODS_DETAIL,
    MAX_GOODS_NAME,
    MAX_URL_LENGTH,
    PAY_RESULT_PATH,
    PAYMENT_TYPE,
    REFUND_PAYMENT_TYPE,
    TERMINAL_TYPES,
    PayStatus,
    RetCode,
)
from payrelay.issuers.simkit import (
    Faults,
    Notifier,
    Simulator,
    SimulatorConfig,
    api_fault,
    control_router,
    payer_page,
)

VERSIONS = frozenset({"5.00", "5.01"})
CURRENCIES = {"crypto": frozenset({"USDT", "USDC"}), "fiat": frozenset({"ZAR", "USD", "EUR"})}
DECIMALS = {"crypto": 8, "fiat": 2}
PLACEHOLDER_QR = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_OPEN = (PayStatus.INIT, PayStatus.PAY_PROCESS)
_OUTCOMES = {"pay": PayStatus.PAY_SUCCESS, "decline": PayStatus.PAY_FAILED}


class _Refused(Exception):
    def __init__(self, code: RetCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _pay_id() -> str:
    """ULID-shaped: 48-bit milliseconds then 80 random bits, Crockford base32 (26 chars)."""
    value = (time.time_ns() // 1_000_000) << 80 | secrets.randbits(80)
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


@dataclass
class _Order:
    merchant_id: str
    trade_no: str
    pay_id: str
    amount: str
    currency: str
    currency_type: str
    goods_name: str
    terminal_type: str
    success_url: str
    failed_url: str
    webhook_url: str
    create_time: int
    expire_time: int
    status: PayStatus = PayStatus.INIT
    payment_time: int = 0
    finish_time: int = 0
    payer_uid: str = ""

    def wire(self) -> dict[str, Any]:
        return {
            "merchantId": self.merchant_id,
            "paymentType": PAYMENT_TYPE,
            "merchantTradeNo": self.trade_no,
            "payId": self.pay_id,
            "status": str(self.status),
            "amount": self.amount,
            "currency": self.currency,
            "currencyType": self.currency_type,
            "createTime": self.create_time,
            "paymentTime": self.payment_time,
            "finishTime": self.finish_time,
        }

    def customer(self) -> dict[str, str]:
        return {"uid": self.payer_uid} if self.payer_uid else {}


def _envelope(code: RetCode, message: str, result: Any = None, status: int = 200) -> JSONResponse:
    body = {
        "retCode": int(code),
        "retMsg": message,
        "result": result if result is not None else {},
        "retExtInfo": {},
        "time": time.time_ns() // 1_000_000,
    }
    return JSONResponse(body, status_code=status)


def _internal_error() -> Response:
    return _envelope(RetCode.INTERNAL_ERROR, "Internal system error, please retry", status=500)


def _text(document: dict[str, Any], name: str, limit: int | None = None) -> str:
    value = document.get(name)
    if not isinstance(value, str) or not value:
        raise _Refused(RetCode.INVALID_PARAMETERS, f"{name} is required")
    if limit is not None and len(value) > limit:
        raise _Refused(RetCode.INVALID_PARAMETERS, f"{name} exceeds {limit} characters")
    return value


def _amount(document: dict[str, Any], currency_type: str) -> str:
    text = _text(document, "orderAmount")
    try:
        amount = Decimal(text)
    except InvalidOperation as exc:
        raise _Refused(RetCode.INVALID_PARAMETERS, "orderAmount is not a decimal") from exc
    if not amount.is_finite() or amount <= 0:
        raise _Refused(RetCode.INVALID_PARAMETERS, "orderAmount must be positive")
    exponent = amount.as_tuple().exponent
    if isinstance(exponent, int) and -exponent > DECIMALS[currency_type]:
        raise _Refused(RetCode.BAD_PRECISION, "orderAmount has too many decimal places")
    return text


def _goods_name(document: dict[str, Any]) -> str:
    goods = document.get("goods")
    if not isinstance(goods, list) or not goods:
        raise _Refused(RetCode.INVALID_PARAMETERS, "goods is required")
    for item in goods:
        if not isinstance(item, dict):
            raise _Refused(RetCode.INVALID_PARAMETERS, "goods items must be objects")
        _text(item, "shoppingName")
        _text(item, "mccCode")
        _text(item, "goodsName", MAX_GOODS_NAME)
        detail = item.get("goodsDetail", "")
        if not isinstance(detail, str) or len(detail) > MAX_GOODS_DETAIL:
            raise _Refused(RetCode.INVALID_PARAMETERS, "goodsDetail exceeds 256 characters")
    return str(goods[0]["goodsName"])


def _terminal_type(document: dict[str, Any]) -> str:
    env = document.get("env")
    if not isinstance(env, dict):
        raise _Refused(RetCode.INVALID_PARAMETERS, "env is required")
    for name in ("terminalType", "device", "browserVersion", "ip"):
        _text(env, name)
    if env["terminalType"] not in TERMINAL_TYPES:
        raise _Refused(RetCode.INVALID_PARAMETERS, "env.terminalType is not supported")
    return str(env["terminalType"])


def _expire_time(document: dict[str, Any], now: int) -> int:
    value = document.get("orderExpireTime")
    if value is None:
        return now + MAX_EXPIRY_SECONDS
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Refused(RetCode.INVALID_PARAMETERS, "orderExpireTime must be epoch seconds")
    if not now < value <= now + MAX_EXPIRY_SECONDS:
        raise _Refused(RetCode.INVALID_PARAMETERS, "orderExpireTime must be within one hour")
    return value


def _new_order(document: Any, now: int) -> _Order:
    """Check a create_pay body as Bybit documents it; ``_Refused`` carries the error."""
    if not isinstance(document, dict):
        raise _Refused(RetCode.INVALID_PARAMETERS, "request body must be a JSON object")
    merchant_id = _text(document, "merchantId")
    if _text(document, "paymentType") != PAYMENT_TYPE:
        raise _Refused(RetCode.PAYMENT_TYPE_NOT_SUPPORTED, "Payment type not supported")
    currency_type = _text(document, "currencyType")
    if currency_type not in CURRENCY_TYPES:
        raise _Refused(RetCode.INVALID_PARAMETERS, "currencyType must be fiat or crypto")
    currency = _text(document, "currency")
    if currency not in CURRENCIES[currency_type]:
        raise _Refused(RetCode.CURRENCY_NOT_SUPPORTED, f"Currency {currency} not supported")
    return _Order(
        merchant_id=merchant_id,
        trade_no=_text(document, "merchantTradeNo"),
        pay_id=_pay_id(),
        amount=_amount(document, currency_type),
        currency=currency,
        currency_type=currency_type,
        goods_name=_goods_name(document),
        terminal_type=_terminal_type(document),
        success_url=_text(document, "successUrl", MAX_URL_LENGTH),
        failed_url=_text(document, "failedUrl", MAX_URL_LENGTH),
        webhook_url=_text(document, "webhookUrl", MAX_URL_LENGTH),
        create_time=now,
        expire_time=_expire_time(document, now),
    )


class _BybitPay:
    """The simulator's state and behaviour; the routes below only translate HTTP."""

    def __init__(self, config: SimulatorConfig, notifier: Notifier) -> None:
        self.config = config
        self.notifier = notifier
        self.key = signing.generate_private_key()
        self.by_pay_id: dict[str, _Order] = {}
        self.by_trade_no: dict[tuple[str, str], _Order] = {}

    def authenticate(self, request: Request, payload: str) -> None:
        headers = request.headers
        if headers.get(signing.VERSION, signing.API_VERSION) not in VERSIONS:
            raise _Refused(RetCode.VERSION_NOT_SUPPORTED, "Version not supported")
        api_key = headers.get(signing.API_KEY, "")
        timestamp = headers.get(signing.TIMESTAMP, "")
        recv_window = headers.get(signing.RECV_WINDOW, str(signing.DEFAULT_RECV_WINDOW_MS))
        signature = headers.get(signing.SIGN, "")
        if not api_key or not signature:
            raise _Refused(RetCode.SIGNATURE_FAILED, "Signature verification failed")
        if not hmac.compare_digest(api_key.encode(), self.config.api_key.encode()):
            raise _Refused(RetCode.API_KEY_INVALID, "API key is invalid.")
        server_time = time.time_ns() // 1_000_000
        numeric = all(v.isascii() and v.isdigit() for v in (timestamp, recv_window))
        if not numeric or not signing.timestamp_in_window(
            int(timestamp), int(recv_window), server_time
        ):
            raise _Refused(
                RetCode.TIMESTAMP_OUT_OF_WINDOW,
                "invalid request, please check your server timestamp or recv_window param. "
                f"req_timestamp[{timestamp}],server_timestamp[{server_time}],"
                f"recv_window[{recv_window}]",
            )
        if not signing.request_signature_matches(
            self.config.api_secret, timestamp, api_key, recv_window, payload, signature
        ):
            raise _Refused(RetCode.SIGNATURE_FAILED, "Signature verification failed")

    def create(self, document: Any, faults: Faults) -> _Order:
        order = _new_order(document, int(time.time()))
        if faults.reject_next > 0:
            faults.reject_next -= 1
            raise _Refused(RetCode.MERCHANT_NOT_AVAILABLE, "Merchant is not available via API")
        key = (order.merchant_id, order.trade_no)
        if key in self.by_trade_no:
            raise _Refused(RetCode.DUPLICATE_PAYMENT, "Duplicate payment for order")
        self.by_trade_no[key] = order
        self.by_pay_id[order.pay_id] = order
        return order

    def created(self, order: _Order) -> dict[str, Any]:
        base = self.config.public_base_url.rstrip("/")
        return {
            "payId": order.pay_id,
            "terminalType": order.terminal_type,
            "expireTime": order.expire_time,
            "checkoutLink": f"{base}/checkout/{order.pay_id}",
            "qrContent": PLACEHOLDER_QR,
            "order": order.wire(),
        }

    def find(self, merchant_id: str, pay_id: str | None, trade_no: str | None) -> _Order | None:
        if pay_id:
            order = self.by_pay_id.get(pay_id)
            return order if order is not None and order.merchant_id == merchant_id else None
        return self.by_trade_no.get((merchant_id, trade_no or ""))

    def lookup(self, order_key: str) -> _Order:
        """By ``payId`` or by ``merchantTradeNo`` (the latest, if merchants share one)."""
        if order_key in self.by_pay_id:
            return self.by_pay_id[order_key]
        matches = [o for (_, trade_no), o in self.by_trade_no.items() if trade_no == order_key]
        if not matches:
            raise KeyError(order_key)
        return matches[-1]

    async def settle(self, order: _Order, outcome: str) -> bool:
        """Play the payer (``pay``, ``decline``) or the clock (``expire``); notify as Bybit does."""
        if order.status not in _OPEN:
            return False
        now = int(time.time())
        order.status = _OUTCOMES.get(outcome, PayStatus.TIMEOUT)
        order.finish_time = now
        if order.status == PayStatus.PAY_SUCCESS:
            order.payment_time = now
            order.payer_uid = str(100_000_000 + secrets.randbelow(900_000_000))
        await self.notify(order)
        return True

    async def notify(self, order: _Order) -> None:
        document = {**order.wire(), **({"customer": order.customer()} if order.payer_uid else {})}
        body = json.dumps(document, separators=(",", ":")).encode()
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            signing.VERSION: signing.API_VERSION,
            signing.NOTIFY_TIMESTAMP: timestamp,
            signing.NOTIFY_SIGNATURE: signing.sign_notification(self.key, timestamp, body),
        }
        await self.notifier.deliver(order.webhook_url, headers, body)


def create_simulator(
    config: SimulatorConfig, *, notify_client: httpx.AsyncClient | None = None
) -> Simulator:
    faults = Faults()
    client = notify_client if notify_client is not None else httpx.AsyncClient()
    notifier = Notifier(faults, client)
    bybit = _BybitPay(config, notifier)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        if notify_client is None:
            await client.aclose()

    app = FastAPI(
        title="Bybit Pay simulator",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @app.post(CREATE_PAY_PATH)
    async def create_pay(request: Request) -> Response:
        if (fault := await api_fault(faults, _internal_error, request.url.path)) is not None:
            return fault
        raw = await request.body()
        try:
            payload = raw.decode()
            bybit.authenticate(request, payload)
            order = bybit.create(json.loads(payload), faults)
        except _Refused as exc:
            return _envelope(exc.code, exc.message)
        except ValueError:  # not UTF-8, or not JSON
            return _envelope(RetCode.INVALID_PARAMETERS, "request body is not valid JSON")
        return _envelope(RetCode.SUCCESS, "success", bybit.created(order))

    @app.get(PAY_RESULT_PATH)
    async def pay_result(request: Request) -> Response:
        if (fault := await api_fault(faults, _internal_error, request.url.path)) is not None:
            return fault
        params = request.query_params
        try:
            bybit.authenticate(request, unquote(request.url.query))
            merchant_id = params.get("merchantId")
            pay_id, trade_no = params.get("payId"), params.get("merchantTradeNo")
            if not merchant_id or not (pay_id or trade_no):
                raise _Refused(
                    RetCode.INVALID_PARAMETERS,
                    "merchantId and one of payId or merchantTradeNo are required",
                )
            payment_type = params.get("paymentType")
            if payment_type not in (PAYMENT_TYPE, REFUND_PAYMENT_TYPE):
                raise _Refused(RetCode.PAYMENT_TYPE_NOT_SUPPORTED, "Payment type not supported")
            order = bybit.find(merchant_id, pay_id, trade_no)
            if order is None or payment_type == REFUND_PAYMENT_TYPE:
                raise _Refused(RetCode.NOT_FOUND, "Order does not exist")
        except _Refused as exc:
            return _envelope(exc.code, exc.message)
        return _envelope(
            RetCode.SUCCESS, "success", {"order": order.wire(), "customer": order.customer()}
        )

    @app.get("/checkout/{pay_id}")
    async def checkout(pay_id: str) -> Response:
        order = bybit.by_pay_id.get(pay_id)
        if order is None:
            return HTMLResponse("<!doctype html><p>No such order.</p>", status_code=404)
        return payer_page(
            issuer="Bybit Pay",
            title=f"Bybit Pay merchant {order.merchant_id}",
            amount=order.amount,
            currency=order.currency,
            description=order.goods_name,
            pay_action=f"{pay_id}/pay",
            decline_action=f"{pay_id}/decline",
            status=None if order.status in _OPEN else str(order.status),
        )

    @app.post("/checkout/{pay_id}/{action}")
    async def checkout_action(pay_id: str, action: str) -> Response:
        order = bybit.by_pay_id.get(pay_id)
        if order is None or action not in _OUTCOMES:
            return HTMLResponse("<!doctype html><p>No such order.</p>", status_code=404)
        await bybit.settle(order, action)
        paid = order.status == PayStatus.PAY_SUCCESS
        return RedirectResponse(order.success_url if paid else order.failed_url, status_code=303)

    async def settle(order_key: str, outcome: str) -> dict[str, Any]:
        order = bybit.lookup(order_key)
        changed = await bybit.settle(order, outcome)
        return {
            "payId": order.pay_id,
            "merchantTradeNo": order.trade_no,
            "status": str(order.status),
            "changed": changed,
        }

    app.include_router(control_router(faults, notifier, settle))
    return Simulator(
        app=app,
        faults=faults,
        notifier=notifier,
        public_key_pem=signing.public_key_pem(bybit.key.public_key()),
    )
