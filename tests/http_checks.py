"""Shared helpers for the auth, isolation, status, expiry and API-surface tests: exact error
shapes, transfers created over HTTP, and direct store access for set-up and assertions."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update

from payrelay.auth.keys import Mode
from payrelay.db.models import MomoTransaction, Transfer, TransferTransition
from payrelay.kit.ids import new_id
from payrelay.merchants import service as merchants
from payrelay.merchants.service import IssuedKey
from tests.factories import new_reference, transfer_body
from tests.harness import Harness, MerchantKeys
from tests.shapes import assert_shape_b as assert_shape_b  # re-exported
from tests.shapes import assert_shape_c as assert_shape_c
from tests.shapes import assert_shape_d as assert_shape_d

ISO_UTC_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def parse_iso_z(value: str) -> datetime:
    assert ISO_UTC_Z.fullmatch(value), value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def to_millis(value: datetime) -> datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


async def create_transfer(api: Harness, keys: MerchantKeys, **overrides: Any) -> dict[str, Any]:
    """Create a test-mode transfer over HTTP; answers the body that was sent."""
    body = transfer_body(**overrides)
    response = await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
    assert response.status_code == 200, response.text
    return body


async def issue_key(
    api: Harness, merchant_id: str, mode: Mode = Mode.TEST, expires_in: timedelta | None = None
) -> IssuedKey:
    """A key with its id, so that tests can revoke it."""
    return await merchants.create_key(api.database, api.secret, merchant_id, mode, expires_in)


async def stored_transfer(api: Harness, merchant_id: str, reference: str) -> Transfer | None:
    async with api.database.read() as session:
        found = await session.scalars(
            select(Transfer).where(
                Transfer.merchant_id == merchant_id, Transfer.reference == reference
            )
        )
        return found.first()


async def update_transfer(api: Harness, merchant_id: str, reference: str, **values: Any) -> None:
    async with api.database.write() as session:
        result = await session.execute(
            update(Transfer)
            .where(Transfer.merchant_id == merchant_id, Transfer.reference == reference)
            .values(**values)
        )
        assert result.rowcount == 1  # type: ignore[attr-defined]


async def transitions(api: Harness, transfer_id: str) -> list[tuple[str | None, str, str]]:
    """``(from, to, cause)`` of every recorded status change, oldest first."""
    async with api.database.read() as session:
        rows = await session.scalars(
            select(TransferTransition)
            .where(TransferTransition.transfer_id == transfer_id)
            .order_by(TransferTransition.id)
        )
        return [(row.from_status, row.to_status, row.cause) for row in rows]


async def count_rows(api: Harness, model: Any, merchant_id: str) -> int:
    async with api.database.read() as session:
        total = await session.scalar(
            select(func.count()).select_from(model).where(model.merchant_id == merchant_id)
        )
    return int(total or 0)


async def insert_transfer(
    api: Harness,
    merchant_id: str,
    *,
    mode: Mode,
    reference: str | None = None,
    amount_cents: int = 10_000,
    status: str = "pending",
) -> Transfer:
    """Store a transfer directly, e.g. a live one while live creates have no issuer connector."""
    now = datetime.now(UTC)
    transfer_id = new_id("tr")
    row = Transfer(
        id=transfer_id,
        merchant_id=merchant_id,
        mode=mode.value,
        reference=reference or new_reference(),
        request_fingerprint="0" * 64,
        recipient="0xabc",
        amount_cents=amount_cents,
        issuer="Binance",
        acquirer="Paystack",
        issuer_merchant_id="sub-merchant-1",
        description="Stored directly",
        terminal_type="WEB",
        success_url="https://shop.example/ok",
        failed_url="https://shop.example/failed",
        webhook_url="https://shop.example/hooks",
        currency="USDC",
        link=f"https://issuer.example/pay/{transfer_id}",
        status=status,
        status_changed_at=now,
        expires_at=now + timedelta(minutes=15),
        created_at=now,
        paid_late=False,
        payment_count=0,
    )
    async with api.database.write() as session:
        session.add(row)
    return row


async def insert_momo(
    api: Harness,
    merchant_id: str,
    transaction_id: str,
    *,
    mode: Mode,
    status: str = "Pending",
    confirmation_id: str = "",
) -> None:
    now = datetime.now(UTC)
    async with api.database.write() as session:
        session.add(
            MomoTransaction(
                id=new_id("momo"),
                merchant_id=merchant_id,
                mode=mode.value,
                transaction_id=transaction_id,
                status=status,
                confirmation_id=confirmation_id,
                created_at=now,
                status_changed_at=now,
            )
        )
