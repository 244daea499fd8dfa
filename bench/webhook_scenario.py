"""The harness's side of the end-to-end webhook scenario: run the load process on the load core,
then judge what it measured (problems for bench/run.py, the issue's target met or missed)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.processes import REPO_DIR, BenchError, Pinning, python_module
from bench.webhook_latency import Plan

TARGET_RATE = 200.0  # events/s the target is stated at
P50_LIMIT_MS = 20.0
P99_LIMIT_MS = 100.0
HANGING_P99_FACTOR = 2.0
TARGET_TEXT = {
    "p50": "webhook end to end p50 <= 20 ms at 200 events/s (all receivers healthy)",
    "p99": "webhook end to end p99 <= 100 ms at 200 events/s (all receivers healthy)",
    "hanging": "webhook p99 of the healthy receivers <= 2 x the all-healthy p99 while 20% of "
    "the receivers hang",
}
DEFINITION = (
    "receiver has read the whole signed webhook request minus the issuer's notification "
    "accepted (the simulator's pay call answered after payrelay answered its signed "
    "notification); open loop at a fixed arrival rate; hanging run: over healthy receivers only"
)


def run_process(plan: Plan, pinning: Pinning, work_dir: Path) -> dict[str, Any]:
    """``python -m bench.webhook_latency`` on the load core; bounded in time."""
    plan_path = work_dir / f"webhook-{plan.run}-plan.json"
    out_path = work_dir / f"webhook-{plan.run}-result.json"
    plan_path.write_text(json.dumps(asdict(plan)))
    out_path.unlink(missing_ok=True)
    transfers = plan.rate * (plan.warmup + plan.seconds)
    budget = 120 + transfers / 10 + 2 * (plan.warmup + plan.seconds) + 3 * plan.grace
    command = [
        *pinning.prefix(pinning.load),
        *python_module("bench.webhook_latency", str(plan_path), str(out_path)),
    ]
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=budget, cwd=REPO_DIR, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"the webhook load process ran over {budget:.0f} s") from exc
    if completed.returncode != 0 or not out_path.exists():
        raise BenchError(
            f"the webhook load process failed (exit {completed.returncode}):\n"
            f"{completed.stdout[-2000:]}\n{completed.stderr[-4000:]}"
        )
    result: dict[str, Any] = json.loads(out_path.read_text())
    return result


def problems(store: str, run: dict[str, Any]) -> list[str]:
    """What fails the bench: transfers not created, notifications refused, webhooks lost or not
    verifying, or webhooks not delivered in time although payrelay kept up with the
    notifications. An overloaded server misses the target; that is reported, not a failure."""
    found: list[str] = []
    where = f"{store} webhook {run['run']}"
    created = run["create"]
    if created["failed"] or created["without_pay_id"]:
        found.append(
            f"{where}: {created['failed']} of {created['transfers']} transfers were not created, "
            f"{created['without_pay_id']} have no Bybit payId {created['failures']}"
        )
    if run["events_refused"] or run["notifications"]["not_2xx"]:
        found.append(
            f"{where}: {run['events_refused']} payer moves failed and payrelay refused "
            f"{run['notifications']['not_2xx']} signed notifications {run['errors']}"
        )
    if run["events_lost"]:
        found.append(
            f"{where}: {run['events_lost']} of {run['events_measured']} webhooks to healthy "
            "receivers were lost (not delivered and not pending in the outbox)"
        )
    if run["events_undelivered"] and not run["overloaded"]:
        found.append(
            f"{where}: {run['events_undelivered']} of {run['events_measured']} webhooks to "
            f"healthy receivers did not arrive within {run['plan']['grace']:g} s although "
            "payrelay kept up with the notifications"
        )
    if run["unverified"]:
        found.append(f"{where}: {run['unverified']} webhooks did not verify")
    return found


def targets(store: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's webhook target as three rows shaped like bench/run.py's other targets."""
    healthy, hanging = result["healthy"], result["hanging"]
    ratio = None
    if hanging["p99_ms"] is not None and healthy["p99_ms"]:
        ratio = round(hanging["p99_ms"] / healthy["p99_ms"], 2)
    context = (
        f"p99 {latency_text(hanging, 'p99_ms')} with {hanging['hanging_receivers']} of "
        f"{hanging['receivers']} receivers hanging, {latency_text(healthy, 'p99_ms')} with none"
    )
    return [
        _row("p50", store, healthy["p50_ms"], P50_LIMIT_MS, healthy),
        _row("p99", store, healthy["p99_ms"], P99_LIMIT_MS, healthy),
        _row("hanging", store, ratio, HANGING_P99_FACTOR, hanging, context),
    ]


def latency_text(run: dict[str, Any], key: str) -> str:
    """A percentile for people: one among the undelivered webhooks is "> grace"."""
    value = run[key]
    return f"> {run['plan']['grace']:g} s" if value is None else f"{value:g} ms"


def _overruled(run: dict[str, Any]) -> tuple[bool | None, str] | None:
    """A verdict that stands whatever the latency: not asked at the target's rate, not able to
    accept notifications at it, or webhooks that never arrived."""
    if run["rate_asked"] != TARGET_RATE:
        return None, f"asked {run['rate_asked']:g} events/s; the target is at {TARGET_RATE:g}"
    if run["overloaded"]:
        return False, (
            f"overloaded: notifications accepted at {run['rate_achieved']:g} events/s, "
            f"{run['events_unanswered']} unanswered"
        )
    if run["events_undelivered"]:
        return False, f"{run['events_undelivered']} webhooks not delivered in time"
    return None


def _row(
    key: str,
    store: str,
    measured: float | None,
    limit: float,
    run: dict[str, Any],
    context: str = "",
) -> dict[str, Any]:
    met: bool | None = None if measured is None else measured <= limit
    notes = [context] if context else []
    overruled = _overruled(run)
    if overruled is not None:
        met, reason = overruled
        notes.append(reason)
    return {
        "target": TARGET_TEXT[key],
        "store": store,
        "measured": measured,
        "limit": limit,
        "met": met,
        **({"note": "; ".join(notes)} if notes else {}),
    }
