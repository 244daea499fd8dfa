"""The benchmark harness works: its smoke run measures every scenario and writes results.json.

No threshold is checked here; the figures of a few seconds on a shared machine mean nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = {"status", "momo", "create", "status_size_small", "status_size_large"}
REQUIRED = ("rps", "p50_ms", "p99_ms", "ratio_l1", "ratio_l0", "store")
WEBHOOK_FIGURES = (
    "rate_asked",
    "rate_achieved",
    "events_sent",
    "events_accepted",
    "events_delivered",
    "events_undelivered",
    "events_lost",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "max_ms",
)


@pytest.mark.timeout(300)
def test_bench_smoke_writes_every_scenario(tmp_path: Path) -> None:
    if shutil.which("wrk") is None:
        pytest.skip("wrk is not installed (apt-get install -y wrk); the bench smoke needs it")
    out = tmp_path / "results.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.run", "--smoke", "--store", "sqlite", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr

    results = json.loads(out.read_text())
    assert results["mode"] == "smoke"
    scenarios = {entry["name"]: entry for entry in results["scenarios"]}
    assert set(scenarios) == SCENARIOS
    for name, entry in scenarios.items():
        for key in REQUIRED:
            assert entry.get(key) is not None, f"{name} has no {key}"
        assert entry["store"] == "sqlite"
        assert entry["rps"] > 0, name
        assert 0 < entry["p50_ms"] <= entry["p99_ms"], name
        assert sum(entry["errors"].values()) == 0, (name, entry["errors"])
    assert scenarios["create"]["rows_stored"] >= scenarios["create"]["requests"]
    for level in ("l0", "l1"):
        assert results["baselines"]["sqlite"][level]["rps"] > 0
    size = results["size"]["sqlite"]
    assert size["transfers_large"] > size["transfers_small"]
    assert size["rss_mib_large"] > 0

    webhook = results["webhook"]["stores"]["sqlite"]
    for name, hanging in (("healthy", 0), ("hanging", 2)):
        run = webhook[name]
        for key in WEBHOOK_FIGURES:
            assert key in run, f"webhook {name} has no {key}"
        assert run["hanging_receivers"] == hanging
        assert run["events_sent"] > 0
        assert run["events_lost"] == 0
        assert run["events_delivered"] + run["events_undelivered"] == run["events_measured"]
        if not run["events_undelivered"]:  # else the percentiles may fall among the missing
            assert 0 < run["p50_ms"] <= run["p90_ms"] <= run["p99_ms"] <= run["max_ms"]
    assert len(webhook["targets"]) == 3
    assert all(target["store"] == "sqlite" for target in webhook["targets"])
