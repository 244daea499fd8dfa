"""The operator's side, through the real `payrelay` command (subprocesses) on both stores:
`merchant create` prints the webhook secret that then signs, `merchant rotate-secret`, and
`webhook list|show|replay`. payrelay's dispatcher runs in this process on the same store, so a
replay made on the command line really reaches the receiver again.

Commands that do not depend on each other run at the same time: each one is a fresh interpreter.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from typer.testing import CliRunner

from payrelay.auth.keys import Mode
from payrelay.db.models import WebhookEvent
from payrelay.merchants import service as merchants
from payrelay.webhooks.verify import verify_webhook
from tests.factories import transfer_body
from tests.harness import Harness, MerchantKeys, free_port, server_env
from tests.webhooks.support import Receiver, eventually_async, insert_momo_events, retire

COMMAND = [sys.executable, "-m", "payrelay"]


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        lines = self.stdout.splitlines()
        assert len(lines) == 1, (self.stdout, self.stderr)
        value = json.loads(lines[0])
        assert isinstance(value, dict), value
        return value

    def ok(self) -> dict[str, Any]:
        assert self.returncode == 0, (self.stdout, self.stderr)
        return self.json()


async def payrelay(store_url: str, *args: str) -> Result:
    process = await asyncio.create_subprocess_exec(
        *COMMAND,
        *args,
        env=server_env(store_url, free_port()),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return Result(process.returncode, stdout.decode(), stderr.decode())


async def pay(api: Harness, keys: MerchantKeys, url: str) -> str:
    body = transfer_body(webhookUrl=url)
    created = await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test)
    assert created.status_code == 200, created.text
    paid = await api.client.post(f"/sandbox/transfers/{body['reference']}/pay", headers=keys.test)
    assert paid.status_code == 200, paid.text
    return str(body["reference"])


async def event_for(api: Harness, keys: MerchantKeys, reference: str, state: str) -> str:
    async def check() -> str | None:
        response = await api.client.get(
            "/webhooks/events", params={"reference": reference}, headers=keys.test
        )
        events = response.json()["data"]
        return str(events[0]["id"]) if events and events[0]["state"] == state else None

    return await eventually_async(check, 8, f"the event of {reference} to be {state}")


async def test_operator_commands(hooks: Harness, receiver: Receiver) -> None:
    url = hooks.database_url
    since = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()
    keys = await hooks.merchant("CLI Shop")
    other = await hooks.merchant("CLI Other")
    reference = await pay(hooks, keys, receiver.program("/hooks/cli", then=410))
    other_reference = await pay(hooks, other, receiver.program("/hooks/cli-other", then=410))
    event_id = await event_for(hooks, keys, reference, "failed")
    other_event = await event_for(hooks, other, other_reference, "failed")

    # Round 1: a new merchant, a rotated secret, and the failed event read back.
    created, rotated, listed, shown = await asyncio.gather(
        payrelay(url, "merchant", "create", "CLI New", "--json"),
        payrelay(url, "merchant", "rotate-secret", keys.merchant_id, "--overlap", "1h", "--json"),
        payrelay(url, "webhook", "list", keys.merchant_id, "--reference", reference, "--json"),
        payrelay(url, "webhook", "show", event_id, "--json"),
    )
    merchant = created.ok()
    assert set(merchant) == {"id", "name", "webhook_secret"}
    assert merchant["name"] == "CLI New"
    assert merchant["webhook_secret"].startswith("whsec_")

    rotation = rotated.ok()
    assert rotation["merchant_id"] == keys.merchant_id
    new_secret = rotation["webhook_secret"]
    assert new_secret.startswith("whsec_")
    assert new_secret != keys.webhook_secret
    old_until = datetime.fromisoformat(rotation["old_expires_at"].replace("Z", "+00:00"))
    assert timedelta(minutes=58) < old_until - datetime.now(UTC) <= timedelta(hours=1)

    assert listed.ok()["merchant_id"] == keys.merchant_id
    assert [e["id"] for e in listed.ok()["events"]] == [event_id]
    detail = shown.ok()
    assert '"amount":149.90' in shown.stdout  # exact, as delivered
    assert detail["id"] == event_id
    assert detail["state"] == "failed"
    assert detail["type"] == "payment.processed"
    assert detail["payload"]["id"] == event_id
    assert [a["status"] for a in detail["attemptLog"]] == [410]

    # The secret `merchant create` printed is the one that signs that merchant's deliveries.
    test_key = await merchants.create_key(hooks.database, hooks.secret, merchant["id"], Mode.TEST)
    fresh = MerchantKeys(merchant["id"], test_key.key, "", merchant["webhook_secret"])
    await pay(hooks, fresh, receiver.program("/hooks/cli-new"))
    [delivery] = await receiver.wait_for("/hooks/cli-new", 1)
    verify_webhook(fresh.webhook_secret, delivery.headers, delivery.body)

    # Round 2: the receivers are healthy again; replay one event by id, and every failed
    # event of the other merchant since a time.
    receiver.program("/hooks/cli", then=200)
    receiver.program("/hooks/cli-other", then=200)
    replayed, replayed_since = await asyncio.gather(
        payrelay(url, "webhook", "replay", event_id, "--json"),
        payrelay(
            url,
            "webhook",
            "replay",
            "--merchant-id",
            other.merchant_id,
            "--failed-since",
            since,
            "--json",
        ),
    )
    assert replayed.ok()["id"] == event_id
    assert replayed.ok()["state"] in ("pending", "succeeded")
    assert replayed_since.ok() == {"replayed": [other_event]}

    [_, again] = await receiver.wait_for("/hooks/cli", 2)
    assert again.webhook_id == event_id
    # Signed with the old and the new secret during the overlap: both verify.
    assert len(again.headers["webhook-signature"].split(" ")) == 2
    for secret in (keys.webhook_secret, new_secret):
        verify_webhook(secret, again.headers, again.body)
    [_, other_again] = await receiver.wait_for("/hooks/cli-other", 2)
    assert other_again.webhook_id == other_event
    await event_for(hooks, keys, reference, "succeeded")


def _invoke(store_url: str, *args: str) -> Result:
    """The same commands in this process (no interpreter start-up), for the refusals."""
    from payrelay.cli.main import app

    result = CliRunner().invoke(app, list(args), env=server_env(store_url, free_port()))
    return Result(result.exit_code, result.stdout, "")


async def test_operator_commands_scope_and_refusals(hooks: Harness) -> None:
    url = hooks.database_url
    keys = await hooks.merchant("CLI Scoped")
    # Parked: a pending event not yet due, so no dispatcher touches it during the test.
    nowhere = "http://127.0.0.1:9/"
    [event_id] = await insert_momo_events(hooks.database, keys.merchant_id, nowhere, 1)
    async with hooks.database.write() as session:
        row = await session.get(WebhookEvent, event_id)
        assert row is not None
        row.next_attempt_at = datetime.now(UTC) + timedelta(hours=1)
    try:
        test, live, pending, failed = [
            await asyncio.to_thread(_invoke, url, "webhook", "list", keys.merchant_id, *more)
            for more in (
                ("--json",),
                ("--mode", "live", "--json"),
                ("--state", "pending", "--json"),
                ("--state", "failed", "--json"),
            )
        ]
        assert [e["id"] for e in test.ok()["events"]] == [event_id]
        assert [e["id"] for e in pending.ok()["events"]] == [event_id]
        assert live.ok()["events"] == []
        assert failed.ok()["events"] == []
    finally:
        await retire(hooks.database, keys.merchant_id)

    unknown_event, unknown_merchant, bad_overlap, nothing = [
        await asyncio.to_thread(_invoke, url, *args)
        for args in (
            ("webhook", "show", "evt_nosuchevent", "--json"),
            ("merchant", "rotate-secret", "mer_nosuchmerchant", "--json"),
            ("merchant", "rotate-secret", "mer_x", "--overlap", "soon", "--json"),
            ("webhook", "replay", "--json"),
        )
    ]
    assert unknown_event.returncode == 1
    assert "error" in unknown_event.json()
    assert unknown_merchant.returncode == 1
    assert "mer_nosuchmerchant" in unknown_merchant.json()["error"]
    assert bad_overlap.returncode == 2
    assert nothing.returncode == 2
    assert "error" in nothing.json()
