"""The payrelay benchmark harness (issue 5). One command:

    .venv/bin/python -m bench.run [--smoke] [--store sqlite|postgres|both] [--seconds N]

It needs Debian's ``wrk`` (``apt-get install -y wrk``) and, for PostgreSQL, a server reachable at
``PAYRELAY_BENCH_POSTGRES_URL`` (default ``postgresql+asyncpg://postgres@127.0.0.1:5432/postgres``),
where it creates fresh databases and drops them afterwards. All traffic stays on loopback, and
every wrk run is bounded in time.

Every server is started as in production: ``python -m payrelay serve`` (uvicorn, uvloop, httptools,
one process) with ``PAYRELAY_*`` variables, except that ``PAYRELAY_RATE_LIMIT_PER_SECOND=0`` turns
the per-key limiter off (100 requests/s per key would otherwise cap every figure) and
``PAYRELAY_LOG_LEVEL=warning``. The baselines are served by the same uvicorn settings: L0 is a raw
ASGI app (bench/baseline_l0.py), L1 a trivial FastAPI route (bench/baseline_l1.py). They are
measured before the first store and after each store; a store's ratios use the mean of the two
baseline measurements around it, so drift on a shared machine is averaged out.

The end-to-end webhook scenario (bench/webhook_latency.py) runs twice per store, all receivers
healthy then 20% hanging, each time on a fresh store with a fresh server: issuer notifications at a
fixed arrival rate, signed webhooks timed at loopback receivers.

Writes ``bench/results.json`` (or ``--out``) and prints a table. Exits 1 if any request failed,
the create scenario stored fewer rows than it was answered 2xx for, or a webhook to a healthy
receiver was lost; thresholds are reported, never enforced.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import string
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from importlib import metadata
from pathlib import Path
from statistics import fmean
from tempfile import TemporaryDirectory
from typing import Any

from bench import prefill, webhook_scenario
from bench.processes import (
    BENCH_DIR,
    BenchError,
    Load,
    Pinning,
    Server,
    choose_pinning,
    find_wrk,
    free_port,
    python_module,
    run_wrk,
    running,
    wrk_version,
)
from bench.report import render_table
from bench.stores import (
    HANGING_SHARE,
    RUNS,
    StoreUrls,
    bench_merchant,
    postgres_base_url,
    postgres_settings,
    provisioned,
    webhook_merchant,
)
from bench.webhook_latency import Plan
from payrelay.db import migrate

STATUS_PATH = "/tx/payment-status/"
MOMO_PATH = "/momo/"
BASELINE_PATH = "/bench/"


@dataclass(frozen=True)
class WebhookProfile:
    rate: float  # issuer notifications per second, open loop
    seconds: float  # measured seconds per run (all healthy; some hanging)
    warmup: float  # unmeasured seconds of events first
    receivers: int  # merchant endpoints, each on its own port
    grace: float  # seconds after a run's last event for its webhooks to arrive


@dataclass(frozen=True)
class Profile:
    name: str
    seconds: float  # measured seconds per wrk run
    warmup: float  # unmeasured seconds before each measured run
    small: int  # transfers in the small store of the size comparison
    main: int  # transfers behind the status, momo and create scenarios
    large: int  # transfers in the large store of the size comparison
    momo: int  # momo transactions
    size_rounds: int  # small/large runs, interleaved, averaged
    webhook: WebhookProfile


FULL = Profile(
    "full", 10, 3, 10_000, 100_000, 1_000_000, 100_000, 2, WebhookProfile(200, 5, 1, 50, 10)
)
SMOKE = Profile("smoke", 2, 1, 2_000, 5_000, 20_000, 2_000, 1, WebhookProfile(25, 2, 0.5, 10, 5))

TARGETS_TEXT = {
    "status": "status lookup >= 0.8 x L1",
    "momo": "momo status >= 0.8 x L1",
    "create": "create >= 0.4 x L1, durable commit",
    "tail": "p99 <= 5 x p50",
    "size_p50": "status p50 at large store <= 1.2 x at small store",
    "size_p99": "status p99 at large store <= 1.2 x at small store",
}


def log(message: str, started: list[float] = [time.monotonic()]) -> None:  # noqa: B006
    print(f"[{time.monotonic() - started[0]:6.1f}s] {message}", file=sys.stderr, flush=True)


def _nonce() -> str:
    return "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(6))


@dataclass
class Bench:
    profile: Profile
    seconds: float
    warmup: float
    connections: int
    create_issuer: str
    create_currency: str
    wrk: str
    pinning: Pinning
    work_dir: Path
    only_webhook: bool = False
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(48))
    scenarios: list[dict[str, Any]] = field(default_factory=list)
    baseline_samples: list[dict[str, Load]] = field(default_factory=list)
    size: dict[str, dict[str, Any]] = field(default_factory=dict)
    stores: dict[str, dict[str, Any]] = field(default_factory=dict)
    webhook: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    # --- servers ----------------------------------------------------------------------------

    def _payrelay_env(self, database_url: str, port: int) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAYRELAY_")}
        env.update(
            PAYRELAY_DATABASE_URL=database_url,
            PAYRELAY_KEY_HASH_SECRET=self.secret,
            PAYRELAY_HOST="127.0.0.1",
            PAYRELAY_PORT=str(port),
            PAYRELAY_LOG_LEVEL="warning",
            PAYRELAY_RATE_LIMIT_PER_SECOND="0",  # the limiter would cap every figure at 100/s
        )
        return env

    @contextmanager
    def payrelay(self, database_url: str) -> Iterator[Server]:
        port = free_port()
        with running(
            "payrelay",
            python_module("payrelay", "serve", "--json"),
            env=self._payrelay_env(database_url, port),
            ready_path="/readyz",
            port=port,
            core=self.pinning.server,
            pinning=self.pinning,
            log_dir=self.work_dir,
        ) as server:
            yield server

    @contextmanager
    def baseline(self, module: str) -> Iterator[Server]:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAYRELAY_")}
        with running(
            module.rsplit(".", 1)[-1],
            python_module(module, "--port", str(port)),
            env=env,
            ready_path=f"{BASELINE_PATH}ready",
            port=port,
            core=self.pinning.server,
            pinning=self.pinning,
            log_dir=self.work_dir,
        ) as server:
            yield server

    # --- load ---------------------------------------------------------------------------------

    def load(self, server: Server, script: str, script_args: Callable[[], Sequence[str]]) -> Load:
        """A warm-up run (discarded), then the measured run, with the same connections."""
        if self.warmup > 0:
            run_wrk(
                self.wrk,
                url=server.base_url,
                script=script,
                script_args=script_args(),
                seconds=self.warmup,
                connections=self.connections,
                pinning=self.pinning,
            )
        return run_wrk(
            self.wrk,
            url=server.base_url,
            script=script,
            script_args=script_args(),
            seconds=self.seconds,
            connections=self.connections,
            pinning=self.pinning,
        )

    def measure_baselines(self) -> None:
        sample: dict[str, Load] = {}
        args = [
            BASELINE_PATH,
            prefill.REFERENCE_PREFIX,
            str(self.profile.main),
            "pr_test_" + "x" * 40,
        ]
        for level, module in (("l0", "bench.baseline_l0"), ("l1", "bench.baseline_l1")):
            with self.baseline(module) as server:
                sample[level] = self.load(server, "lookup.lua", lambda: args)
            log(f"baseline {level.upper()}: {sample[level].rps:,.0f} rps")
        self.baseline_samples.append(sample)

    def record(
        self,
        name: str,
        store: str,
        endpoint: str,
        transfers: int,
        loads: Sequence[Load],
        **extra: Any,
    ) -> dict[str, Any]:
        summaries = [load.summary() for load in loads]
        errors: dict[str, int] = {}
        for load in loads:
            for kind, count in load.errors.items():
                errors[kind] = errors.get(kind, 0) + count
        entry: dict[str, Any] = {
            "name": name,
            "store": store,
            "endpoint": endpoint,
            "transfers": transfers,
            "rps": round(fmean(s["rps"] for s in summaries), 1),
            "p50_ms": round(fmean(s["p50_ms"] for s in summaries), 3),
            "p90_ms": round(fmean(s["p90_ms"] for s in summaries), 3),
            "p99_ms": round(fmean(s["p99_ms"] for s in summaries), 3),
            "max_ms": max(s["max_ms"] for s in summaries),
            "requests": sum(load.requests for load in loads),
            "errors": errors,
            "ratio_l1": None,  # filled in once the baselines after this store are measured
            "ratio_l0": None,
            **extra,
        }
        if len(loads) > 1:
            entry["runs"] = summaries
        if sum(errors.values()):
            self.problems.append(f"{store} {name}: {sum(errors.values())} failed requests {errors}")
        self.scenarios.append(entry)
        log(
            f"{store} {name} ({transfers:,} transfers): {entry['rps']:,.0f} rps, "
            f"p50 {entry['p50_ms']:.2f} ms, p99 {entry['p99_ms']:.2f} ms"
            + (f", FAILED {errors}" if sum(errors.values()) else "")
        )
        return entry

    # --- one store ------------------------------------------------------------------------------

    def run_store(self, kind: str) -> None:
        with provisioned(kind, self.work_dir) as urls:
            self.stores[kind] = urls.settings
            if not self.only_webhook:
                self.run_api_scenarios(kind, urls)
            self.run_webhook(kind, urls.webhook)

    def run_api_scenarios(self, kind: str, urls: StoreUrls) -> None:
        p = self.profile
        secret = self.secret.encode()
        ids: dict[str, tuple[str, str]] = {}
        for role, url in (("main", urls.main), ("small", urls.small)):
            migrate.upgrade(url)  # the real migrations, as `payrelay serve` applies them
            ids[role] = asyncio.run(bench_merchant(url, secret))
        merchant, key = ids["main"]
        small_merchant, small_key = ids["small"]

        started = time.monotonic()
        asyncio.run(prefill.fill(urls.small, small_merchant, transfers=(0, p.small)))
        asyncio.run(prefill.fill(urls.main, merchant, transfers=(0, p.main), momo=(0, p.momo)))
        log(
            f"{kind}: pre-filled {p.main:,} + {p.small:,} transfers, {p.momo:,} momo rows "
            f"in {time.monotonic() - started:.1f} s"
        )

        with self.payrelay(urls.main) as server:
            self.record(
                "status",
                kind,
                "GET /tx/payment-status/{reference}",
                p.main,
                [
                    self.load(
                        server,
                        "lookup.lua",
                        lambda: [STATUS_PATH, prefill.REFERENCE_PREFIX, str(p.main), key],
                    )
                ],
            )
            self.record(
                "momo",
                kind,
                "GET /momo/{transactionId}",
                p.main,
                [
                    self.load(
                        server,
                        "lookup.lua",
                        lambda: [MOMO_PATH, prefill.MOMO_PREFIX, str(p.momo), key],
                    )
                ],
                momo_rows=p.momo,
            )
            self.run_create(server, kind, urls.main, key)
        removed = asyncio.run(prefill.delete_created(urls.main))

        started = time.monotonic()
        asyncio.run(prefill.fill(urls.main, merchant, transfers=(p.main, p.large)))
        stored = asyncio.run(prefill.row_count(urls.main))
        log(
            f"{kind}: grew the store to {stored:,} transfers in "
            f"{time.monotonic() - started:.1f} s (removed {removed:,} created ones first)"
        )
        self.run_size(kind, urls, key, small_key)

    def run_create(self, server: Server, kind: str, url: str, key: str) -> None:
        nonces: list[str] = []

        def args() -> list[str]:
            nonces.append(_nonce())
            return [key, nonces[-1], self.create_issuer, self.create_currency]

        load = self.load(server, "create.lua", args)
        time.sleep(0.5)  # let requests wrk abandoned at its deadline finish
        stored = asyncio.run(prefill.count_created(url, nonces[-1]))
        entry = self.record(
            "create",
            kind,
            "POST /tx/createTransferRequest",
            self.profile.main,
            [load],
            issuer=self.create_issuer,
            currency=self.create_currency,
            rows_stored=stored,
        )
        answered = load.requests - load.errors["status"]
        if stored < answered:
            self.problems.append(
                f"{kind} create: {answered} requests were answered but only {stored} rows stored"
            )
        entry["rows_check"] = "ok" if stored >= answered else "MISSING ROWS"

    def run_size(self, kind: str, urls: StoreUrls, key: str, small_key: str) -> None:
        p = self.profile
        small_loads: list[Load] = []
        large_loads: list[Load] = []
        memory: dict[str, dict[str, int]] = {}
        for _ in range(p.size_rounds):  # interleaved, so drift hits both sides alike
            for side, url, count, api_key, loads in (
                ("small", urls.small, p.small, small_key, small_loads),
                ("large", urls.main, p.large, key, large_loads),
            ):
                script_args = [STATUS_PATH, prefill.REFERENCE_PREFIX, str(count), api_key]
                with self.payrelay(url) as server:
                    idle = server.memory_kib()
                    loads.append(self.load(server, "lookup.lua", partial(list, script_args)))
                    memory[side] = {**server.memory_kib(), "idle_VmRSS": idle["VmRSS"]}
        small = self.record(
            "status_size_small", kind, "GET /tx/payment-status/{reference}", p.small, small_loads
        )
        large = self.record(
            "status_size_large", kind, "GET /tx/payment-status/{reference}", p.large, large_loads
        )
        self.size[kind] = {
            "transfers_small": p.small,
            "transfers_large": p.large,
            "rss_mib_large": round(memory["large"]["VmRSS"] / 1024, 1),
            "rss_mib_large_idle": round(memory["large"]["idle_VmRSS"] / 1024, 1),
            "peak_rss_mib_large": round(memory["large"]["VmHWM"] / 1024, 1),
            "rss_mib_small": round(memory["small"]["VmRSS"] / 1024, 1),
            "p50_ratio_large_to_small": round(large["p50_ms"] / small["p50_ms"], 3),
            "p99_ratio_large_to_small": round(large["p99_ms"] / small["p99_ms"], 3),
            "rps_ratio_large_to_small": round(large["rps"] / small["rps"], 3),
        }

    def run_webhook(self, kind: str, urls: dict[str, str]) -> None:
        """End to end, notification accepted to webhook received. Each run gets a fresh store
        and server, so the healthy run's backlog cannot leak into the hanging one; the load
        process (receivers and notifications) runs on the load core."""
        results: dict[str, Any] = {}
        for run, share in RUNS.items():
            results[run] = self.webhook_run(run, share, urls[run])
            self.problems.extend(webhook_scenario.problems(kind, results[run]))
            r = results[run]
            log(
                f"{kind} webhook {run}: {r['rate_achieved']:g}/s of {r['rate_asked']:g}/s "
                f"accepted, p50 {webhook_scenario.latency_text(r, 'p50_ms')}, "
                f"p99 {webhook_scenario.latency_text(r, 'p99_ms')}, "
                f"{r['events_delivered']:,} of {r['events_measured']:,} delivered, "
                f"server CPU {r['server_cpu_share']}"
            )
        results["targets"] = webhook_scenario.targets(kind, results)
        self.webhook[kind] = results

    def webhook_run(self, run: str, hanging_share: float, url: str) -> dict[str, Any]:
        w = self.profile.webhook
        migrate.upgrade(url)
        key, webhook_secret = asyncio.run(webhook_merchant(url, self.secret.encode()))
        with self.payrelay(url) as server:
            plan = Plan(
                run=run,
                base_url=server.base_url,
                api_key=key,
                webhook_secret=webhook_secret,
                database_url=url,
                rate=w.rate,
                seconds=w.seconds,
                warmup=w.warmup,
                receivers=w.receivers,
                hanging_share=hanging_share,
                grace=w.grace,
                server_pid=server.process.pid,
            )
            return webhook_scenario.run_process(plan, self.pinning, self.work_dir)

    # --- results --------------------------------------------------------------------------------

    def baselines_for(self, index: int) -> dict[str, dict[str, Any]]:
        around = self.baseline_samples[index : index + 2]
        result: dict[str, dict[str, Any]] = {}
        for level in ("l0", "l1"):
            summaries = [sample[level].summary() for sample in around]
            result[level] = {
                "rps": round(fmean(s["rps"] for s in summaries), 1),
                "p50_ms": round(fmean(s["p50_ms"] for s in summaries), 3),
                "p99_ms": round(fmean(s["p99_ms"] for s in summaries), 3),
                "samples_rps": [s["rps"] for s in summaries],
            }
            for sample in around:
                if sample[level].failed:
                    self.problems.append(
                        f"baseline {level}: failed requests {sample[level].errors}"
                    )
        return result


def evaluate_targets(
    scenarios: list[dict[str, Any]],
    size: dict[str, dict[str, Any]],
    webhook: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    targets: list[dict[str, Any]] = []

    def add(
        key: str, store: str, measured: float | None, limit: float, met: bool | None, note: str = ""
    ) -> None:
        targets.append(
            {
                "target": TARGETS_TEXT[key],
                "store": store,
                "measured": measured,
                "limit": limit,
                "met": met,
                **({"note": note} if note else {}),
            }
        )

    by_name = {(s["store"], s["name"]): s for s in scenarios}
    stores = sorted({s["store"] for s in scenarios})
    for store in stores:
        for name, limit in (("status", 0.8), ("momo", 0.8), ("create", 0.4)):
            entry = by_name[(store, name)]
            add(name, store, entry["ratio_l1"], limit, entry["ratio_l1"] >= limit)
        for name in ("status", "momo", "create"):
            entry = by_name[(store, name)]
            ratio = round(entry["p99_ms"] / entry["p50_ms"], 2)
            add("tail", store, ratio, 5.0, ratio <= 5.0, note=name)
        for key, field_name in (
            ("size_p50", "p50_ratio_large_to_small"),
            ("size_p99", "p99_ratio_large_to_small"),
        ):
            measured = size[store][field_name]
            add(key, store, measured, 1.2, measured <= 1.2)
    for store in sorted(webhook):
        targets.extend(webhook[store]["targets"])
    return targets


def _versions() -> dict[str, str]:
    names = (
        "fastapi",
        "starlette",
        "uvicorn",
        "uvloop",
        "httptools",
        "sqlalchemy",
        "aiosqlite",
        "asyncpg",
        "pydantic",
    )
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a few seconds per scenario on small stores; proves the harness works",
    )
    parser.add_argument("--store", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument(
        "--seconds",
        type=float,
        help="measured seconds per wrk run "
        f"(default {FULL.seconds:g}; {SMOKE.seconds:g} with --smoke)",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        help="unmeasured seconds before each run "
        f"(default {FULL.warmup:g}; {SMOKE.warmup:g} with --smoke)",
    )
    parser.add_argument(
        "--connections",
        type=int,
        default=16,
        help="concurrent keep-alive connections wrk holds (default 16)",
    )
    parser.add_argument(
        "--create-issuer",
        choices=("Bybit", "Valr"),
        default="Bybit",
        help="issuer of the create scenario; Bybit goes through its simulator "
        "over in-process HTTP, Valr builds its link without a call",
    )
    parser.add_argument(
        "--webhook-rate",
        type=float,
        help="issuer notifications per second in the webhook scenario "
        f"(default {FULL.webhook.rate:g}; {SMOKE.webhook.rate:g} with --smoke)",
    )
    parser.add_argument(
        "--webhook-seconds",
        type=float,
        help="measured seconds per webhook run "
        f"(default {FULL.webhook.seconds:g}; {SMOKE.webhook.seconds:g} with --smoke)",
    )
    parser.add_argument(
        "--webhook-receivers",
        type=int,
        help="merchant endpoints the webhooks go to, 20%% of them hanging in the second run "
        f"(default {FULL.webhook.receivers}; {SMOKE.webhook.receivers} with --smoke)",
    )
    parser.add_argument(
        "--only",
        choices=("webhook",),
        help="run only the end-to-end webhook scenario (no baselines, no other scenario)",
    )
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "results.json")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    profile = SMOKE if args.smoke else FULL
    webhook = replace(
        profile.webhook,
        rate=args.webhook_rate or profile.webhook.rate,
        seconds=args.webhook_seconds or profile.webhook.seconds,
        receivers=args.webhook_receivers or profile.webhook.receivers,
    )
    profile = replace(profile, webhook=webhook)
    stores = ["sqlite", "postgres"] if args.store == "both" else [args.store]
    started_at = datetime.now(UTC)
    load_before = os.getloadavg()
    try:
        wrk = find_wrk()
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    pinning = choose_pinning()
    if "postgres" in stores:
        try:
            postgres_settings(postgres_base_url())  # fail before minutes of other work
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    log(f"{profile.name} run on {', '.join(stores)}; {pinning.reason}; {wrk_version(wrk)}")
    with TemporaryDirectory(prefix="payrelay-bench-") as work:
        bench = Bench(
            profile=profile,
            seconds=args.seconds or profile.seconds,
            warmup=profile.warmup if args.warmup is None else args.warmup,
            connections=args.connections,
            create_issuer=args.create_issuer,
            create_currency="ZAR",
            wrk=wrk,
            pinning=pinning,
            work_dir=Path(work),
            only_webhook=args.only == "webhook",
        )
        try:
            if not bench.only_webhook:
                bench.measure_baselines()
            for store in stores:
                bench.run_store(store)
                if not bench.only_webhook:
                    bench.measure_baselines()
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2

    baselines: dict[str, Any] = {}
    for index, store in enumerate(stores if bench.baseline_samples else []):
        baselines[store] = bench.baselines_for(index)
        for entry in bench.scenarios:
            if entry["store"] == store:
                entry["ratio_l1"] = round(entry["rps"] / baselines[store]["l1"]["rps"], 3)
                entry["ratio_l0"] = round(entry["rps"] / baselines[store]["l0"]["rps"], 3)
                entry["p99_over_p50"] = round(entry["p99_ms"] / entry["p50_ms"], 2)
    finished_at = datetime.now(UTC)
    results: dict[str, Any] = {
        "schema": 1,
        "mode": profile.name,
        "command": " ".join(["python -m bench.run", *(sys.argv[1:] if argv is None else argv)]),
        "started_at": started_at.isoformat(timespec="seconds"),
        "finished_at": finished_at.isoformat(timespec="seconds"),
        "duration_s": round((finished_at - started_at).total_seconds(), 1),
        "machine": {
            "cpus": os.cpu_count(),
            "cpu": platform.processor() or platform.machine(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "wrk": wrk_version(wrk),
            "packages": _versions(),
            "pinning": pinning.describe(),
        },
        "settings": {
            "seconds_per_run": bench.seconds,
            "warmup_seconds": bench.warmup,
            "connections": bench.connections,
            "wrk_threads": 1,
            "server_workers": 1,
            "server": "python -m payrelay serve (uvicorn, uvloop, httptools)",
            "server_env": {
                "PAYRELAY_RATE_LIMIT_PER_SECOND": "0 (limiter off, so it does not cap the "
                "benchmark)",
                "PAYRELAY_LOG_LEVEL": "warning",
            },
            "sizes": {
                "status_momo_create_transfers": profile.main,
                "momo_rows": profile.momo,
                "size_small": profile.small,
                "size_large": profile.large,
                "size_rounds": profile.size_rounds,
            },
            "webhook": {**asdict(profile.webhook), "hanging_share": HANGING_SHARE},
        },
        "stores": bench.stores,
        "baselines": baselines,
        "scenarios": bench.scenarios,
        "size": bench.size,
        "webhook": {
            "status": "measured",
            "latency": webhook_scenario.DEFINITION,
            "stores": bench.webhook,
        },
        "targets": (
            evaluate_targets(bench.scenarios, bench.size, bench.webhook)
            if profile.name == FULL.name
            else "not evaluated in smoke mode"
        ),
        "problems": bench.problems,
    }
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(out.name + ".tmp")
    temporary.write_text(json.dumps(results, indent=2) + "\n")
    temporary.replace(out)
    print(render_table(results))
    print(f"\nwrote {out} in {results['duration_s']:.0f} s")
    for problem in bench.problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if bench.problems else 0


if __name__ == "__main__":
    sys.exit(main())
