"""Bybit Pay's wire formats (QR payment, ``paymentType`` ``E_COMMERCE``) and its own codes.

Sources: https://bybit-exchange.github.io/pay-docs/ (create-payment, payment-result,
payment-notify, data-model/pay-order, error). Field names are Bybit's own camelCase.
"""

from __future__ import annotations

from decimal import Decimal
from enum import IntEnum, StrEnum
from typing import Any, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field

CREATE_PAY_PATH = "/v5/bybitpay/create_pay"
PAY_RESULT_PATH = "/v5/bybitpay/pay_result"
PAYMENT_TYPE = "E_COMMERCE"
REFUND_PAYMENT_TYPE = "E_COMMERCE_REFUND"
MAX_EXPIRY_SECONDS = 3600  # orderExpireTime: default and maximum one hour after creation
MAX_URL_LENGTH = 256
MAX_GOODS_NAME = 160
MAX_GOODS_DETAIL = 256
TERMINAL_TYPES = frozenset({"APP", "WEB", "WAP", "MINIAPP", "OTHERS"})
CURRENCY_TYPES = frozenset({"fiat", "crypto"})
# The real checkoutLink, as documented: a Bybit app deeplink carrying the payId.
DEEPLINK_TEMPLATE = (
    "bybitapp://open/route?targetUrl=by-mini%3A%2F%2Fpay%2FscanResult%3ForderNo%3D{pay_id}"
)


class RetCode(IntEnum):
    """``retCode`` values of the QR payment API (pay-docs, scan-payment/error)."""

    SUCCESS = 100000
    INVALID_PARAMETERS = 400000
    SIGNATURE_FAILED = 400002
    TIMESTAMP_OUT_OF_WINDOW = 400003
    NOT_FOUND = 400004
    PAYMENT_TYPE_NOT_SUPPORTED = 400007
    BAD_PRECISION = 400008
    CURRENCY_NOT_SUPPORTED = 400009
    QUOTATION_FAILED = 400010
    ORDER_TIMED_OUT = 400603
    DUPLICATE_PAYMENT = 400620
    WRONG_PAYMENT_AMOUNT = 400621
    INTERNAL_ERROR = 500000
    MERCHANT_NOT_FOUND = 500008
    QR_EXPIRED = 500100
    QR_ALREADY_PAID = 500101
    MERCHANT_NOT_AVAILABLE = 500102
    ORDER_ALREADY_REFUNDED = 500103
    REFUND_BALANCE_INSUFFICIENT = 500104
    ORDER_NOT_PAID = 500105
    VERSION_NOT_SUPPORTED = 500106
    # Not in the Pay table: the general V5 code for an unknown API key.
    API_KEY_INVALID = 10003


class PayStatus(StrEnum):
    """Every PayOrder ``status`` the documentation names (introduction, flow, older docs)."""

    INIT = "INIT"
    INITIAL = "INITIAL"  # legacy spelling of INIT in older examples
    PAY_PROCESS = "PAY_PROCESS"
    PAY_SUCCESS = "PAY_SUCCESS"
    PAY_FAILED = "PAY_FAILED"
    CANCEL = "CANCEL"
    TIMEOUT = "TIMEOUT"
    PARTIAL_REFUND = "PARTIAL_REFUND"
    REFUND = "REFUND"
    REFUND_PROCESS = "REFUND_PROCESS"
    REFUND_SUCCESS = "REFUND_SUCCESS"
    REFUND_FAILED = "REFUND_FAILED"
    REFUND_CANCEL = "REFUND_CANCEL"


# What we send.


class Goods(TypedDict):
    shoppingName: str
    mccCode: str
    goodsName: str
    goodsDetail: str


class Env(TypedDict):
    terminalType: str
    device: str
    browserVersion: str
    ip: str


class RiskInfo(TypedDict):
    terminalType: str


class CreatePayRequest(TypedDict):
    merchantId: str
    paymentType: str
    merchantTradeNo: str
    goods: list[Goods]
    orderAmount: str
    currency: str
    currencyType: str
    successUrl: str
    failedUrl: str
    webhookUrl: str
    orderExpireTime: NotRequired[int]
    env: Env
    riskInfo: NotRequired[RiskInfo]


# What Bybit sends back.


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)


class Envelope(_Wire):
    retCode: int
    retMsg: str = ""
    result: Any = None
    retExtInfo: Any = None
    time: int | None = None


class PayOrder(_Wire):
    merchantId: str = ""
    clientId: str = ""
    paymentType: str = PAYMENT_TYPE
    merchantTradeNo: str
    payId: str
    status: str
    amount: Decimal = Field(ge=0)
    currency: str
    currencyType: str = ""
    createTime: int = 0
    paymentTime: int = 0  # epoch seconds; 0 while unset
    finishTime: int = 0


class CreatePayResult(_Wire):
    payId: str = Field(min_length=1)
    terminalType: str = ""
    expireTime: int
    checkoutLink: str = Field(min_length=1)
    qrContent: str = ""
    order: PayOrder | None = None


class PayResult(_Wire):
    order: PayOrder


class NotificationKind(_Wire):
    paymentType: str
