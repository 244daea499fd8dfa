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

from payrelay.auth.keys import Mode
from payrelay.merchants import service as merchants
from payrelay.webhooks.verify import verify_webhook
from tests.factories import transfer_body
from tests.harness import Harness, MerchantKeys, free_port, server_env
from tests.webhooks.support import Receiver, eventually_async

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

    # Round 1: create a merchant; refusals need no set-up, so they run alongside.
    created, unknown_event, unknown_merchant, bad_overlap = await asyncio.gather(
        payrelay(url, "merchant", "create", "CLI Shop", "--json"),
        payrelay(url, "webhook", "show", "evt_nosuchevent", "--json"),
        payrelay(url, "merchant", "rotate-secret", "mer_nosuchmerchant", "--json"),
        payrelay(url, "merchant", "rotate-secret", "mer_x", "--overlap", "soon", "--json"),
    )
    merchant = created.ok()
    assert set(merchant) == {"id", "name", "webhook_secret"}
    assert merchant["name"] == "CLI Shop"
    secret = merchant["webhook_secret"]
    assert secret.startswith("whsec_")
    assert unknown_event.returncode == 1
    assert "error" in unknown_event.json()
    assert unknown_merchant.returncode == 1
    assert "mer_nosuchmerchant" in unknown_merchant.json()["error"]
    assert bad_overlap.returncode == 2, bad_overlap

    # The secret the command printed is the one that signs this merchant's deliveries.
    test_key = await merchants.create_key(hooks.database, hooks.secret, merchant["id"], Mode.TEST)
    keys = MerchantKeys(merchant["id"], test_key.key, "", secret)
    other = await hooks.merchant("CLI Other")
    gone = receiver.program("/hooks/cli", then=410)
    other_gone = receiver.program("/hooks/cli-other", then=410)
    reference = await pay(hooks, keys, gone)
    other_reference = await pay(hooks, other, other_gone)
    [delivery] = await receiver.wait_for("/hooks/cli", 1)
    assert verify_webhook(secret, delivery.headers, delivery.body)["data"]["reference"] == reference
    event_id = await event_for(hooks, keys, reference, "failed")
    other_event = await event_for(hooks, other, other_reference, "failed")

    # Round 2: rotate the secret, and read the events.
    rotated, listed, by_reference, shown, none = await asyncio.gather(
        payrelay(url, "merchant", "rotate-secret", merchant["id"], "--overlap", "1h", "--json"),
        payrelay(url, "webhook", "list", merchant["id"], "--json"),
        payrelay(url, "webhook", "list", merchant["id"], "--reference", reference, "--json"),
        payrelay(url, "webhook", "show", event_id, "--json"),
        payrelay(url, "webhook", "list", merchant["id"], "--mode", "live", "--json"),
    )
    rotation = rotated.ok()
    assert rotation["merchant_id"] == merchant["id"]
    new_secret = rotation["webhook_secret"]
    assert new_secret.startswith("whsec_")
    assert new_secret != secret
    old_until = datetime.fromisoformat(rotation["old_expires_at"].replace("Z", "+00:00"))
    assert timedelta(minutes=58) < old_until - datetime.now(UTC) <= timedelta(hours=1)

    assert [e["id"] for e in listed.ok()["events"]] == [event_id]
    assert listed.ok()["merchant_id"] == merchant["id"]
    assert [e["id"] for e in by_reference.ok()["events"]] == [event_id]
    assert none.ok()["events"] == []
    detail = shown.ok()
    assert detail["id"] == event_id
    assert detail["state"] == "failed"
    assert detail["type"] == "payment.processed"
    assert detail["payload"]["id"] == event_id
    assert [a["status"] for a in detail["attemptLog"]] == [410]

    # Round 3: the receivers are healthy again; replay one event by id, and every failed
    # event of the other merchant since a time.
    receiver.program("/hooks/cli", then=200)
    receiver.program("/hooks/cli-other", then=200)
    replayed, replayed_since, missing = await asyncio.gather(
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
        payrelay(url, "webhook", "replay", "--json"),
    )
    assert missing.returncode == 2
    assert "error" in missing.json()
    assert replayed.ok()["id"] == event_id
    assert replayed.ok()["state"] in ("pending", "succeeded")
    assert replayed_since.ok() == {"replayed": [other_event]}

    [_, again] = await receiver.wait_for("/hooks/cli", 2)
    assert again.webhook_id == event_id
    # Both the old and the new secret verify during the overlap.
    assert len(again.headers["webhook-signature"].split(" ")) == 2
    for each in (secret, new_secret):
        verify_webhook(each, again.headers, again.body)
    [_, other_again] = await receiver.wait_for("/hooks/cli-other", 2)
    assert other_again.webhook_id == other_event
    await event_for(hooks, keys, reference, "succeeded")
