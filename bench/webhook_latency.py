"""End-to-end webhook latency: from an issuer notification accepted to the merchant's receiver
holding the signed webhook. bench/run.py runs this module once per run, as a process of its own
on the load core (``python -m bench.webhook_latency PLAN.json OUT.json``), each time against a
fresh ``payrelay serve`` on a fresh store, so one run's backlog never leaks into the next.

1. Loopback receivers start (bench/receiver.py), one port per merchant endpoint.
2. Test-mode transfers are created through the real API (``POST /tx/createTransferRequest``,
   issuer Bybit), each ``webhookUrl`` naming the endpoints in turn; each order then exists in
   the Bybit simulator mounted in the server. Their Bybit ``payId`` is read from the store.
3. Open loop at ``rate``: event ``i`` is sent at ``t0 + i / rate`` whether or not earlier ones
   were answered (bench/openloop.py). Sending it is the sandbox's own payer move,
   ``POST /simulators/bybit/_control/orders/{payId}/pay``: the simulator marks the order paid,
   posts its RSA-signed notification to ``/issuers/bybit/notifications`` as Bybit would, and
   answers once payrelay has answered that notification. That answer (200, ``changed``) is the
   "accepted" instant: the notification was verified, recorded in the inbox, and the transfer
   and its outbox event committed.
4. Latency = the receiver having read the whole webhook request minus that instant, both on
   this process's ``perf_counter``. Arrivals are verified (Standard Webhooks signature with the
   merchant's ``whsec_`` secret) and matched by ``data.reference``.

A warm-up (every endpoint healthy, not reported) comes first. In the hanging run a share of the
endpoints then accept requests and never answer; latency is over the other endpoints' events.
``grace`` seconds after the last event, whatever has not been answered or delivered is counted
as such; an undelivered webhook still pending in the outbox is late, any other is lost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import secrets
import string
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import uvloop
from sqlalchemy import select

from bench.openloop import HttpError, OpenLoopClient
from bench.receiver import Arrival, Receivers
from bench.webhook_figures import CpuClock, distribution
from payrelay.db.engine import Database
from payrelay.db.models import Transfer, WebhookEvent
from payrelay.webhooks.outbox import EventState

ISSUER = "Bybit"
CREATE_PATH = "/tx/createTransferRequest"
PAY_PATH = "/simulators/bybit/_control/orders/{pay_id}/pay"
NOTIFICATIONS_PATH = "/simulators/bybit/_control/notifications"
REFERENCE_PREFIX = "bwh"  # + run nonce + "w" (warm-up) or "m" (measured) + 6 digits
KEPT_UP = 0.95  # accepting less than this share of the asked rate is overload
QUERY_CHUNK = 500


@dataclass(frozen=True)
class Plan:
    """What bench/run.py asks of one run; written to a JSON file for the load process."""

    run: str  # "healthy" or "hanging"
    base_url: str
    api_key: str
    webhook_secret: str  # the merchant's whsec_ secret, to verify what arrives
    database_url: str  # read for the payIds of the created orders and the outbox states
    rate: float  # events per second, asked
    seconds: float  # measured seconds
    warmup: float  # seconds of unmeasured events first
    receivers: int  # merchant endpoints (distinct ports)
    hanging_share: float  # share of the endpoints that hang during the measured events
    grace: float  # seconds after the last event for answers and webhooks
    server_pid: int | None = None  # to report the server's CPU use
    create_concurrency: int = 16

    @property
    def hanging(self) -> set[int]:
        return set(range(round(self.receivers * self.hanging_share)))


@dataclass
class Event:
    reference: str
    endpoint: int
    pay_id: str = ""
    due: float = 0.0  # when the open loop meant to send it
    sent: float | None = None
    accepted: float | None = None  # the simulator answered: its notification was accepted
    error: str | None = None


@dataclass
class Run:
    events: list[Event]
    hanging: set[int] = field(default_factory=set)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def expected(self) -> list[Event]:
        """Accepted events of healthy endpoints: their webhooks must arrive."""
        return [e for e in self.events if e.accepted and e.endpoint not in self.hanging]


def _events(nonce: str, kind: str, count: int, endpoints: int) -> list[Event]:
    return [Event(f"{REFERENCE_PREFIX}{nonce}{kind}{i:06d}", i % endpoints) for i in range(count)]


def _transfer_body(reference: str, webhook_url: str, index: int) -> dict[str, Any]:
    return {
        "recipient": "0x9f3c1a2b4d5e6f708192a3b4c5d6e7f8091a2b3c",
        "amount": 100 + index % 900,
        "issuer": ISSUER,
        "acquirerMerchantName": "Paystack",
        "reference": reference,
        "merchantID": "bench-issuer-merchant",
        "description": "Webhook latency bench",
        "terminalType": "WEB",
        "successUrl": "https://example.com/paid",
        "failedUrl": "https://example.com/failed",
        "webhookUrl": webhook_url,
        "currency": "ZAR",
    }


async def create_transfers(plan: Plan, receivers: Receivers, events: Sequence[Event]) -> list[str]:
    """Every transfer through the real API (not timed); returns what failed, none retried."""
    failures: list[str] = []
    gate = asyncio.Semaphore(plan.create_concurrency)
    headers = {"Authorization": f"Bearer {plan.api_key}"}

    async def create(client: httpx.AsyncClient, index: int, event: Event) -> None:
        url = receivers.endpoints[event.endpoint].url(f"/hooks/{event.reference}")
        body = _transfer_body(event.reference, url, index)
        async with gate:
            try:
                response = await client.post(CREATE_PATH, json=body, headers=headers)
            except httpx.HTTPError as exc:
                failures.append(f"{event.reference}: {type(exc).__name__}")
                return
        if response.status_code not in (200, 201):
            failures.append(f"{event.reference}: HTTP {response.status_code} {response.text[:200]}")

    limits = httpx.Limits(max_connections=plan.create_concurrency)
    async with httpx.AsyncClient(base_url=plan.base_url, limits=limits, timeout=30.0) as client:
        await asyncio.gather(*(create(client, i, event) for i, event in enumerate(events)))
    return failures


async def pay_ids(database_url: str, prefix: str) -> dict[str, str]:
    """reference -> Bybit payId of the orders just opened, read with payrelay's own engine."""
    database = Database(database_url, pool_size=1)
    try:
        async with database.read() as session:
            rows = await session.execute(
                select(Transfer.reference, Transfer.issuer_order_id).where(
                    Transfer.reference.like(f"{prefix}%")
                )
            )
            return {reference: pay_id for reference, pay_id in rows if pay_id}
    finally:
        await database.dispose()


async def outbox_states(database_url: str, references: Sequence[str]) -> dict[str, str]:
    """reference -> state of its webhook event in payrelay's outbox (absent: no event)."""
    database = Database(database_url, pool_size=1)
    states: dict[str, str] = {}
    try:
        async with database.read() as session:
            for start in range(0, len(references), QUERY_CHUNK):
                chunk = references[start : start + QUERY_CHUNK]
                rows = await session.execute(
                    select(WebhookEvent.reference, WebhookEvent.state).where(
                        WebhookEvent.reference.in_(chunk)
                    )
                )
                states.update({reference: state for reference, state in rows if reference})
    finally:
        await database.dispose()
    return states


async def _notify(client: OpenLoopClient, event: Event) -> None:
    event.sent = time.perf_counter()
    try:
        status, body = await client.post(PAY_PATH.format(pay_id=event.pay_id))
    except HttpError as exc:
        event.error = str(exc)
        return
    answered = time.perf_counter()
    if status == 200 and json.loads(body).get("changed") is True:
        event.accepted = answered
    else:
        event.error = f"HTTP {status} {body[:100]!r}"


async def play(client: OpenLoopClient, run: Run, rate: float) -> None:
    """Start each event at its time, open loop; the answers are awaited by ``settle``."""
    start = time.perf_counter() + 0.01
    for index, event in enumerate(run.events):
        event.due = start + index / rate
        delay = event.due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        run.tasks.append(asyncio.create_task(_notify(client, event)))


async def settle(receivers: Receivers, run: Run, grace: float) -> None:
    """Until every event is answered and every expected webhook has arrived, at most ``grace``
    seconds; what is still unanswered then is cancelled and counted."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        answered = all(task.done() for task in run.tasks)
        if answered and all(e.reference in receivers.first for e in run.expected()):
            break
        await asyncio.sleep(0.02)
    for task in run.tasks:
        task.cancel()
    await asyncio.gather(*run.tasks, return_exceptions=True)
    for event in run.events:
        if event.accepted is None and event.error is None:
            event.error = "unanswered"


def summarize(plan: Plan, run: Run, arrivals: dict[str, Arrival], late: set[str]) -> dict[str, Any]:
    """``arrivals`` as they stood at the deadline; ``late`` are the missing webhooks that were
    still on their way (pending in the outbox, or arrived after the deadline)."""
    events = run.events
    sent = [e.sent for e in events if e.sent is not None]
    accepted = [e.accepted for e in events if e.accepted is not None]
    expected = run.expected()
    arrived = [(e, arrivals[e.reference]) for e in expected if e.reference in arrivals]
    missing = [e.reference for e in expected if e.reference not in arrivals]
    queued = sum(1 for reference in missing if reference in late)
    achieved = len(accepted) / (max(accepted) - min(sent)) if len(accepted) > 1 else 0.0
    unanswered = sum(1 for e in events if e.error == "unanswered")
    return {
        "run": plan.run,
        "receivers": plan.receivers,
        "hanging_receivers": len(run.hanging),
        "rate_asked": plan.rate,
        "rate_sent": round((len(sent) - 1) / (max(sent) - min(sent)), 1) if len(sent) > 1 else 0,
        "rate_achieved": round(achieved, 1),  # notifications accepted per second
        "overloaded": unanswered > 0 or achieved < KEPT_UP * plan.rate,
        "send_lag_ms_max": round(
            max((e.sent - e.due for e in events if e.sent), default=0) * 1e3, 3
        ),
        "events_sent": len(sent),
        "events_accepted": len(accepted),
        "events_unanswered": unanswered,  # no answer within grace: the server fell behind
        "events_refused": sum(1 for e in events if e.error and e.error != "unanswered"),
        "events_to_hanging": sum(1 for e in events if e.endpoint in run.hanging),
        "events_measured": len(expected),  # accepted, for a healthy endpoint
        "events_delivered": len(arrived),
        "events_undelivered": len(missing),
        "undelivered_queued": queued,  # still on their way: late, not lost
        "events_lost": len(missing) - queued,
        **distribution([a.at - e.accepted for e, a in arrived if e.accepted], len(missing)),
        # The same webhooks timed from the payer's move: adds the notification's own trip.
        "from_sent": distribution([a.at - e.sent for e, a in arrived if e.sent], len(missing)),
        "notification_round_trip": distribution(
            [e.accepted - e.sent for e in events if e.accepted and e.sent]
        ),
        "errors": dict(Counter(e.error[:80] for e in events if e.error).most_common(5)),
    }


async def prepare(plan: Plan, receivers: Receivers, nonce: str, runs: list[Run]) -> dict[str, Any]:
    """Create the runs' transfers and give each event its payId; drop events without one."""
    started = time.monotonic()
    everything = [event for run in runs for event in run.events]
    failures = await create_transfers(plan, receivers, everything)
    found = await pay_ids(plan.database_url, REFERENCE_PREFIX + nonce)
    for event in everything:
        event.pay_id = found.get(event.reference, "")
    for run in runs:
        run.events = [e for e in run.events if e.pay_id]
    return {
        "transfers": len(everything),
        "failed": len(failures),
        "failures": failures[:5],
        "without_pay_id": sum(1 for e in everything if not e.pay_id),
        "seconds": round(time.monotonic() - started, 1),
    }


async def measure(plan: Plan) -> dict[str, Any]:
    target = urlsplit(plan.base_url)
    if target.scheme != "http" or target.hostname != "127.0.0.1" or not target.port:
        raise ValueError(f"refusing to send anywhere but loopback: {plan.base_url}")
    receivers = Receivers(plan.webhook_secret)
    await receivers.start(plan.receivers)
    nonce = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(6))
    warmup = Run(_events(nonce, "w", math.ceil(plan.rate * plan.warmup), plan.receivers))
    run = Run(_events(nonce, "m", math.ceil(plan.rate * plan.seconds), plan.receivers))
    client = OpenLoopClient(target.hostname, target.port)
    clock = CpuClock(plan.server_pid)
    try:
        created = await prepare(plan, receivers, nonce, [warmup, run])
        await play(client, warmup, plan.rate)  # every endpoint healthy; not reported
        await settle(receivers, warmup, plan.grace)
        run.hanging = plan.hanging
        receivers.hang(run.hanging)
        before = clock.read()
        await play(client, run, plan.rate)
        await settle(receivers, run, plan.grace)
        usage = clock.shares(before, clock.read())
        arrivals = dict(receivers.first)  # as they stood at the deadline
        missing = [e.reference for e in run.expected() if e.reference not in arrivals]
        states = await outbox_states(plan.database_url, missing)
        late = {r for r in missing if states.get(r) == EventState.PENDING or r in receivers.first}
        async with httpx.AsyncClient(base_url=plan.base_url, timeout=30.0) as http:
            notes = (await http.get(NOTIFICATIONS_PATH)).json().get("sent", [])
    finally:
        await client.aclose()
        await receivers.close()
    return {
        **summarize(plan, run, arrivals, late),
        **usage,
        "create": created,
        "notifications": {
            "sent": len(notes),
            "not_2xx": sum(1 for n in notes if not 200 <= n.get("status", 0) < 300),
        },
        "connections_opened": client.opened,
        "duplicates": receivers.duplicates,
        "unverified": receivers.unverified,
        "held_by_hanging": receivers.held,
        "plan": {
            k: v
            for k, v in asdict(plan).items()
            if k not in ("api_key", "webhook_secret", "database_url")
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.webhook_latency")
    parser.add_argument("plan", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    plan = Plan(**json.loads(args.plan.read_text()))
    result = uvloop.run(measure(plan))  # the loop payrelay serve runs on, for the receivers too
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
