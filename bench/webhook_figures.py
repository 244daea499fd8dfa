"""Figures of one webhook latency run: percentiles that count undelivered webhooks, and the CPU
the server and the load process used, so an overloaded server is told from a slow one."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean


def distribution(values: Sequence[float], undelivered: int = 0) -> dict[str, float | None]:
    """Nearest-rank percentiles in ms of latencies in seconds.

    ``undelivered`` more webhooks never arrived: they rank above every delivered one, so a
    percentile that falls among them is None ("longer than the run allowed"), never a figure
    computed as if they had not existed. ``min_ms`` and ``mean_ms`` are over delivered ones.
    """
    ordered = sorted(values)
    count = len(ordered) + undelivered

    def rank(q: float) -> float | None:
        index = max(0, math.ceil(q * count) - 1)
        return round(ordered[index] * 1000, 3) if index < len(ordered) else None

    return {
        "p50_ms": rank(0.50),
        "p90_ms": rank(0.90),
        "p99_ms": rank(0.99),
        "max_ms": rank(1.0),
        "min_ms": round(ordered[0] * 1000, 3) if ordered else None,
        "mean_ms": round(fmean(ordered) * 1000, 3) if ordered else None,
    }


Reading = tuple[float, float, float]  # wall, server CPU, this process's CPU (seconds)


class CpuClock:
    """CPU seconds of the server process (all its threads) and of this process."""

    def __init__(self, server_pid: int | None) -> None:
        self.stat = Path(f"/proc/{server_pid}/stat") if server_pid else None
        self.tick = os.sysconf("SC_CLK_TCK")

    def read(self) -> Reading:
        server = 0.0
        if self.stat is not None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = self.stat.read_text().rsplit(")", 1)[1].split()
                server = (int(fields[11]) + int(fields[12])) / self.tick  # utime + stime
        return time.perf_counter(), server, time.process_time()

    def shares(self, start: Reading, end: Reading) -> dict[str, float | None]:
        """Busy share of one core: near 1.0 for the server means it is saturated."""
        wall = max(end[0] - start[0], 1e-9)
        return {
            "server_cpu_share": round((end[1] - start[1]) / wall, 2) if self.stat else None,
            "load_cpu_share": round((end[2] - start[2]) / wall, 2),
        }
