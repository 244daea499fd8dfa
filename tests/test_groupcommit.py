"""Group commit: concurrent inserts share one transaction, and one bad row spoils no other."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from payrelay.db.engine import Database
from payrelay.db.groupcommit import GroupInserter
from payrelay.db.models import Transfer, TransferTransition
from payrelay.db.types import utcnow
from payrelay.merchants import service as merchants


def transfer_rows(merchant_id: str, reference: str) -> tuple[Any, Any]:
    now = utcnow()
    transfer_id = f"tr_{secrets.token_hex(8)}"
    transfer = {
        "id": transfer_id,
        "merchant_id": merchant_id,
        "mode": "test",
        "reference": reference,
        "request_fingerprint": "f" * 64,
        "recipient": "0xabc",
        "amount_cents": 1050,
        "issuer": "Bybit",
        "acquirer": "Paystack",
        "issuer_merchant_id": "m-1",
        "description": "Coffee",
        "terminal_type": "WEB",
        "success_url": "https://example.com/ok",
        "failed_url": "https://example.com/no",
        "webhook_url": "http://127.0.0.1:9/hook",
        "currency": "ZAR",
        "link": f"https://example.com/pay/{transfer_id}",
        "status": "pending",
        "status_changed_at": now,
        "expires_at": now + timedelta(minutes=15),
        "created_at": now,
        "paid_late": False,
        "payment_count": 0,
    }
    transition = {
        "transfer_id": transfer_id,
        "from_status": None,
        "to_status": "pending",
        "cause": "create",
        "at": now,
    }
    return (Transfer, transfer), (TransferTransition, transition)


async def stored(database: Database, merchant_id: str) -> tuple[int, int]:
    async with database.read() as session:
        transfers = await session.scalar(
            select(func.count()).select_from(Transfer).where(Transfer.merchant_id == merchant_id)
        )
        transitions = await session.scalar(
            select(func.count())
            .select_from(TransferTransition)
            .join(Transfer, Transfer.id == TransferTransition.transfer_id)
            .where(Transfer.merchant_id == merchant_id)
        )
    return int(transfers or 0), int(transitions or 0)


@asynccontextmanager
async def counting_transactions(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[list[int]]:
    opened: list[int] = []
    real_write = Database.write

    @asynccontextmanager
    async def write(self: Database) -> AsyncIterator[AsyncSession]:
        opened.append(1)
        async with real_write(self) as session:
            yield session

    monkeypatch.setattr(Database, "write", write)
    try:
        yield opened
    finally:
        monkeypatch.undo()


async def test_concurrent_inserts_commit_in_fewer_transactions(
    store: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    merchant = await merchants.create_merchant(store, "Group commit")
    async with counting_transactions(store, monkeypatch) as opened:
        await asyncio.gather(
            *(
                store.inserts.insert(*transfer_rows(merchant.id, f"ref-{index:08d}"))
                for index in range(50)
            )
        )
    assert await stored(store, merchant.id) == (50, 50)
    assert 1 <= len(opened) < 50


async def test_a_conflicting_row_fails_alone_and_the_rest_of_its_batch_lands(
    store: Database,
) -> None:
    merchant = await merchants.create_merchant(store, "Group commit conflict")
    await store.inserts.insert(*transfer_rows(merchant.id, "taken-reference"))

    outcomes = await asyncio.gather(
        *(
            store.inserts.insert(*transfer_rows(merchant.id, f"fresh-{index:08d}"))
            for index in range(10)
        ),
        store.inserts.insert(*transfer_rows(merchant.id, "taken-reference")),
        *(
            store.inserts.insert(*transfer_rows(merchant.id, f"later-{index:08d}"))
            for index in range(10)
        ),
        return_exceptions=True,
    )

    failures = [outcome for outcome in outcomes if outcome is not None]
    assert len(failures) == 1
    assert isinstance(failures[0], IntegrityError)
    assert outcomes[10] is failures[0]
    assert await stored(store, merchant.id) == (21, 21)


async def test_a_caller_that_goes_away_does_not_take_its_rows_out(store: Database) -> None:
    merchant = await merchants.create_merchant(store, "Group commit cancel")
    first = asyncio.ensure_future(store.inserts.insert(*transfer_rows(merchant.id, "kept-1")))
    second = asyncio.ensure_future(store.inserts.insert(*transfer_rows(merchant.id, "kept-2")))
    await asyncio.sleep(0)
    second.cancel()
    await first
    await store.inserts.close()
    assert await stored(store, merchant.id) == (2, 2)


async def test_a_batch_that_fails_for_another_reason_fails_at_once_without_retries(
    store: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    merchant = await merchants.create_merchant(store, "Group commit outage")
    async with counting_transactions(store, monkeypatch) as opened:
        real_commit = GroupInserter._commit

        async def store_down(self: GroupInserter, batch: list[Any]) -> None:
            await real_commit(self, [])  # counts as a transaction opened
            raise OperationalError("INSERT", {}, ConnectionResetError("store down"))

        monkeypatch.setattr(GroupInserter, "_commit", store_down)
        outcomes = await asyncio.gather(
            *(
                store.inserts.insert(*transfer_rows(merchant.id, f"down-{index:08d}"))
                for index in range(10)
            ),
            return_exceptions=True,
        )
    assert all(isinstance(outcome, OperationalError) for outcome in outcomes)
    assert len(opened) < 10  # no one-by-one retry of an outage
    assert await stored(store, merchant.id) == (0, 0)


async def test_a_cancelled_committer_fails_every_waiter_instead_of_stranding_it(
    store: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    merchant = await merchants.create_merchant(store, "Group commit cancelled")
    started = asyncio.Event()

    async def conflict_then_hang(self: GroupInserter, batch: list[Any]) -> None:
        if len(batch) > 1:
            raise IntegrityError("INSERT", {}, ValueError("conflict"))
        started.set()
        await asyncio.sleep(3600)  # the one-by-one retry hangs until it is cancelled

    monkeypatch.setattr(GroupInserter, "_commit", conflict_then_hang)
    inserter = GroupInserter(store)
    waiters = [
        asyncio.ensure_future(inserter.insert(*transfer_rows(merchant.id, f"c-{index:08d}")))
        for index in range(3)
    ]
    await asyncio.wait_for(started.wait(), timeout=5)
    assert inserter._committer is not None
    inserter._committer.cancel()
    outcomes = await asyncio.wait_for(asyncio.gather(*waiters, return_exceptions=True), 5)
    assert all(isinstance(outcome, asyncio.CancelledError) for outcome in outcomes)
