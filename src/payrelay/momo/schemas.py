"""Wire schemas of mobile money status."""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from payrelay.kit.validation import HttpUrlText

# ASCII letters and digits only; fullmatch so a trailing newline cannot slip past ``$``.
TRANSACTION_ID = re.compile(r"[A-Za-z0-9]{5,15}")
TRANSACTION_ID_MESSAGE = "transactionId must be 5 to 15 characters, ASCII letters and digits only."


class MomoStatus(StrEnum):
    PENDING = "Pending"
    SUCCESSFUL = "Successful"
    UNSUCCESSFUL = "Unsuccessful"


class MomoStatusOut(BaseModel):
    status: MomoStatus
    confirmationID: str = Field(
        description="10 uppercase letters and digits once Successful, otherwise empty."
    )


class SandboxMomoIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    transactionId: str | None = Field(
        default=None, description="5 to 15 ASCII letters and digits; generated when omitted."
    )
    webhookUrl: HttpUrlText | None = Field(
        default=None, description="Where momo.successful / momo.unsuccessful events go."
    )


class SandboxMomoCreated(BaseModel):
    transactionId: str


def is_valid_transaction_id(value: str) -> bool:
    return TRANSACTION_ID.fullmatch(value) is not None
