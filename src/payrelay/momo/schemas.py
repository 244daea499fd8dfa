"""Wire schemas of mobile money status."""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, Field

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
    transactionId: str | None = Field(
        default=None, description="5 to 15 ASCII letters and digits; generated when omitted."
    )


class SandboxMomoCreated(BaseModel):
    transactionId: str


def is_valid_transaction_id(value: str) -> bool:
    return TRANSACTION_ID.fullmatch(value) is not None
