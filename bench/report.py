"""Tables from a results.json: the console table bench/run.py prints, and the README's tables.

.venv/bin/python -m bench.report [bench/results.json] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.processes import BENCH_DIR

COLUMNS = ("scenario", "store", "transfers", "rps", "p50 ms", "p99 ms", "p99/p50", "x L1", "x L0")
WEBHOOK_COLUMNS = (
    "webhook run",
    "store",
    "events/s asked",
    "accepted/s",
    "sent",
    "accepted",
    "delivered",
    "undelivered",
    "lost",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "max ms",
    "server CPU",
)


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def rows(results: dict[str, Any]) -> list[list[str]]:
    table: list[list[str]] = []
    for store, levels in results.get("baselines", {}).items():
        for level in ("l0", "l1"):
            b = levels[level]
            ratio_l1 = b["rps"] / levels["l1"]["rps"]
            ratio_l0 = b["rps"] / levels["l0"]["rps"]
            table.append(
                [
                    f"baseline {level.upper()}",
                    f"({store} run)",
                    "-",
                    _fmt(b["rps"], 0),
                    _fmt(b["p50_ms"]),
                    _fmt(b["p99_ms"]),
                    _fmt(b["p99_ms"] / b["p50_ms"], 1),
                    _fmt(ratio_l1),
                    _fmt(ratio_l0),
                ]
            )
    for s in results.get("scenarios", []):
        table.append(
            [
                s["name"],
                s["store"],
                _fmt(s["transfers"]),
                _fmt(s["rps"], 0),
                _fmt(s["p50_ms"]),
                _fmt(s["p99_ms"]),
                _fmt(s.get("p99_over_p50"), 1),
                _fmt(s["ratio_l1"]),
                _fmt(s["ratio_l0"]),
            ]
        )
    return table


def _latency(run: dict[str, Any], key: str) -> str:
    """A percentile that fell among undelivered webhooks is longer than the run allowed."""
    if run[key] is None and run["events_undelivered"]:
        return f"> {run['plan']['grace']:g} s"
    return _fmt(run[key])


def webhook_rows(results: dict[str, Any]) -> list[list[str]]:
    table: list[list[str]] = []
    for store, runs in results.get("webhook", {}).get("stores", {}).items():
        for name in ("healthy", "hanging"):
            run = runs[name]
            if run["hanging_receivers"]:
                label = f"{run['hanging_receivers']} of {run['receivers']} receivers hang"
            else:
                label = f"{run['receivers']} receivers healthy"
            table.append(
                [
                    label,
                    store,
                    _fmt(float(run["rate_asked"]), 0),
                    _fmt(float(run["rate_achieved"]), 1),
                    _fmt(run["events_sent"]),
                    _fmt(run["events_accepted"]),
                    _fmt(run["events_delivered"]),
                    _fmt(run["events_undelivered"]),
                    _fmt(run["events_lost"]),
                    _latency(run, "p50_ms"),
                    _latency(run, "p90_ms"),
                    _latency(run, "p99_ms"),
                    _latency(run, "max_ms"),
                    _fmt(run["server_cpu_share"]),
                ]
            )
    return table


def _aligned(columns: Sequence[str], body: list[list[str]]) -> list[str]:
    table = [list(columns), *body]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    lines = []
    for number, row in enumerate(table):
        lines.append(
            "  ".join(
                cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i])
                for i, cell in enumerate(row)
            )
        )
        if number == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def render_table(results: dict[str, Any]) -> str:
    lines = _aligned(COLUMNS, rows(results))
    for store, size in results.get("size", {}).items():
        lines.append(
            f"size ({store}): RSS {size['rss_mib_large']} MiB after serving "
            f"{size['transfers_large']:,} transfers ({size['rss_mib_small']} MiB at "
            f"{size['transfers_small']:,}); status p50 x{size['p50_ratio_large_to_small']}, "
            f"p99 x{size['p99_ratio_large_to_small']} large vs small"
        )
    webhook = results.get("webhook", {})
    if webhook.get("stores"):
        lines += ["", f"webhook end to end: {webhook['latency']}", ""]
        lines += _aligned(WEBHOOK_COLUMNS, webhook_rows(results))
    elif "status" in webhook:
        lines.append(f"webhook: {webhook['status']}")
    return "\n".join(lines)


def markdown(results: dict[str, Any]) -> str:
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(row) + " |" for row in rows(results)]
    webhook = webhook_rows(results)
    if webhook:
        out += ["", "| " + " | ".join(WEBHOOK_COLUMNS) + " |", "|" + "---|" * len(WEBHOOK_COLUMNS)]
        out += ["| " + " | ".join(row) + " |" for row in webhook]
    targets = results.get("targets")
    if isinstance(targets, list):
        out += ["", "| target | store | measured | met |", "|---|---|---|---|"]
        for t in targets:
            met = {True: "met", False: "**missed**", None: "not measured"}[t["met"]]
            measured = _fmt(t["measured"]) if t["measured"] is not None else t.get("note", "-")
            note = f" ({t['note']})" if t.get("note") and t["measured"] is not None else ""
            out.append(f"| {t['target']}{note} | {t['store']} | {measured} | {met} |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report")
    parser.add_argument("results", nargs="?", type=Path, default=BENCH_DIR / "results.json")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    print(markdown(results) if args.markdown else render_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
