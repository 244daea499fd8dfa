"""Binance Pay wire formats and error codes.

Requests are TypedDicts serialised with ``dumps_exact`` (amounts stay exact JSON numbers);
replies are parsed with ``loads_exact`` first, so every decimal arrives here as a ``Decimal`` and
never passes through a binary float.

Sources: developers.binance.com/docs/binance-pay (api-common, api-order-create-v3,
api-order-query-v2, api-order-close, order-notification, webhook-common,
webhook-query-certificate); codes from the "Common Business Errors" table.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Any, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict

CREATE_ORDER_PATH = "/binancepay/openapi/v3/order"
QUERY_ORDER_PATH = "/binancepay/openapi/v2/order/query"
CLOSE_ORDER_PATH = "/binancepay/openapi/order/close"
CERTIFICATES_PATH = "/binancepay/openapi/certificates"

SUCCESS_STATUS = "SUCCESS"
SUCCESS_CODE = "000000"
TERMINAL_TYPES = ("APP", "WEB", "WAP", "MINI_PROGRAM", "OTHERS")
DEFAULT_GOODS_TYPE = "02"  # virtual goods
GOODS_CATEGORY_OTHERS = "Z000"


class ErrorCode(StrEnum):
    UNKNOWN_ERROR = "400000"
    INVALID_REQUEST = "400001"
    INVALID_SIGNATURE = "400002"
    INVALID_TIMESTAMP = "400003"
    INVALID_API_KEY_OR_IP = "400004"
    BAD_API_KEY_FMT = "400005"
    MANDATORY_PARAM_EMPTY_OR_MALFORMED = "400100"
    INVALID_PARAM_WRONG_LENGTH = "400101"
    INVALID_PARAM_WRONG_VALUE = "400102"
    INVALID_PARAM_ILLEGAL_CHAR = "400103"
    INVALID_REQUEST_TOO_LARGE = "400104"
    INVALID_MERCHANT_TRADE_NO = "400201"  # invalid *or duplicate* merchantTradeNo
    ORDER_NOT_FOUND = "400202"
    INVALID_ACCOUNT_STATUS = "400203"
    INVALID_ORDER_STATUS = "400204"  # close refused: paid or payment in flight
    SUB_MERCHANT_EXISTS = "400205"
    SUB_MERCHANT_INVALID = "400206"
    INVALID_PREPAY_ID = "400301"
    TOO_MANY_REFUND_ATTEMPTS = "400302"
    INVALID_REFUND_AMOUNT = "400303"
    ACCOUNT_REMAINING_AMOUNT_NOT_ENOUGH = "400304"
    SYSTEM_ABNORMALITY = "100001001"  # wrong method, missing content-type, empty body


class OrderStatus(StrEnum):
    """``status`` of Query Order v2; every documented value."""

    INITIAL = "INITIAL"
    PENDING = "PENDING"
    PAID = "PAID"
    CANCELED = "CANCELED"
    ERROR = "ERROR"
    REFUNDING = "REFUNDING"
    REFUNDED = "REFUNDED"
    FULL_REFUNDED = "FULL_REFUNDED"
    EXPIRED = "EXPIRED"


class BizType(StrEnum):
    PAY = "PAY"
    PAY_REFUND = "PAY_REFUND"


class BizStatus(StrEnum):
    """``bizStatus`` of a ``PAY`` notification; only final states are pushed."""

    PAY_SUCCESS = "PAY_SUCCESS"
    PAY_CLOSED = "PAY_CLOSED"  # a merchant close, an expiry, or (simulator) a payer cancel


# Requests ----------------------------------------------------------------------------------


class Env(TypedDict):
    terminalType: str


class Merchant(TypedDict):
    subMerchantId: str


class GoodsDetail(TypedDict):
    goodsType: str
    goodsCategory: str
    referenceGoodsId: str
    goodsName: str


class CreateOrderBody(TypedDict):
    env: Env
    merchant: Merchant
    merchantTradeNo: str
    orderAmount: Decimal
    currency: str
    description: str
    goodsDetails: list[GoodsDetail]
    returnUrl: str
    cancelUrl: str
    webhookUrl: str
    orderExpireTime: int


class OrderLookup(TypedDict):
    """Query and close take either id; with both, ``prepayId`` wins."""

    prepayId: NotRequired[str]
    merchantTradeNo: NotRequired[str]


# Replies ------------------------------------------------------------------------------------


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Envelope(_Wire):
    """Every reply. Failures name the reason in ``errorMessage``, ``msg`` or ``errorData``."""

    status: str
    code: str
    data: Any = None
    errorMessage: str | None = None
    msg: str | None = None
    errorData: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.status == SUCCESS_STATUS and self.code == SUCCESS_CODE

    @property
    def reason(self) -> str:
        return self.errorMessage or self.msg or self.errorData or ""


class CreatedOrder(_Wire):
    prepayId: str
    terminalType: str | None = None
    expireTime: int | None = None
    qrcodeLink: str | None = None
    qrContent: str | None = None
    checkoutUrl: str | None = None
    deeplink: str | None = None
    universalUrl: str | None = None


class QueriedOrder(_Wire):
    prepayId: str
    merchantTradeNo: str
    status: str
    currency: str
    orderAmount: Decimal
    transactionId: str | None = None
    transactTime: int | None = None
    createTime: int | None = None


class Certificate(_Wire):
    certSerial: str
    certPublic: str


class Notification(_Wire):
    bizType: str
    bizIdStr: str
    bizStatus: str
    data: str  # a JSON document inside a JSON string: parse twice


class NotificationData(_Wire):
    merchantTradeNo: str
    totalFee: Decimal
    currency: str
    transactionId: str | None = None
    transactTime: int | None = None
