"""Servers under test and the load generator, each pinned to its own core where possible."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
WRK_MISSING = (
    "wrk is not installed. The benchmark uses Debian's wrk as its load generator; install it "
    "with: apt-get install -y wrk"
)


class BenchError(RuntimeError):
    """A failure of the harness itself (not a slow figure)."""


@dataclass(frozen=True)
class Pinning:
    """Which core the server gets and which the load generator gets (None: not pinned)."""

    server: int | None
    load: int | None
    reason: str

    def prefix(self, core: int | None) -> list[str]:
        return ["taskset", "-c", str(core)] if core is not None else []

    def describe(self) -> dict[str, Any]:
        return {"server_core": self.server, "load_core": self.load, "how": self.reason}


def choose_pinning() -> Pinning:
    cores = sorted(os.sched_getaffinity(0))
    if shutil.which("taskset") is None:
        return Pinning(None, None, "not pinned: taskset is not installed")
    if len(cores) < 2:
        return Pinning(None, None, f"not pinned: only {len(cores)} core available")
    return Pinning(cores[0], cores[1], f"taskset: server on core {cores[0]}, wrk on {cores[1]}")


def find_wrk() -> str:
    path = shutil.which("wrk")
    if path is None:
        raise BenchError(WRK_MISSING)
    return path


def wrk_version(wrk: str) -> str:
    completed = subprocess.run([wrk, "--version"], capture_output=True, text=True, check=False)
    return (completed.stdout or completed.stderr).splitlines()[0].strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path

    def memory_kib(self) -> dict[str, int]:
        """VmRSS (resident now) and VmHWM (peak resident) of the server process."""
        values: dict[str, int] = {}
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                name, _, rest = line.partition(":")
                if name in ("VmRSS", "VmHWM"):
                    values[name] = int(rest.split()[0])
        return values

    def cores(self) -> list[int]:
        return sorted(os.sched_getaffinity(self.process.pid))

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # loopback only
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def running(
    name: str,
    command: Sequence[str],
    *,
    env: dict[str, str],
    ready_path: str,
    port: int,
    core: int | None,
    pinning: Pinning,
    log_dir: Path,
    start_timeout: float = 90.0,
) -> Iterator[Server]:
    """Start ``command`` (pinned to ``core``), wait until ``ready_path`` answers 200, yield the
    server, and stop it (SIGTERM, then SIGKILL after 15 s) however the block ends."""
    log_path = log_dir / f"{name}-{port}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [*pinning.prefix(core), *command],
            env=env,
            cwd=REPO_DIR,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = Server(name, process, f"http://127.0.0.1:{port}", log_path)
    try:
        deadline = time.monotonic() + start_timeout
        while not _answers(server.base_url + ready_path):
            if process.poll() is not None:
                raise BenchError(f"{name} exited with {process.returncode}:\n{server.log_tail()}")
            if time.monotonic() > deadline:
                raise BenchError(f"{name} did not answer in {start_timeout:.0f} s")
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


@dataclass(frozen=True)
class Load:
    """What one wrk run measured."""

    requests: int
    seconds: float
    errors: dict[str, int]
    latency_us: dict[str, float]

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def failed(self) -> int:
        """Requests that did not get a 2xx/3xx answer, plus socket errors and timeouts."""
        return sum(self.errors.values())

    def summary(self) -> dict[str, Any]:
        latency = self.latency_us
        return {
            "rps": round(self.rps, 1),
            "p50_ms": round(latency["p50"] / 1000, 3),
            "p90_ms": round(latency["p90"] / 1000, 3),
            "p99_ms": round(latency["p99"] / 1000, 3),
            "max_ms": round(latency["max"] / 1000, 3),
            "requests": self.requests,
            "errors": self.errors,
        }


def run_wrk(
    wrk: str,
    *,
    url: str,
    script: str,
    script_args: Sequence[str],
    seconds: float,
    connections: int,
    pinning: Pinning,
    threads: int = 1,
) -> Load:
    """One bounded wrk run against a loopback URL; parses the line bench/report.lua prints."""
    if not url.startswith("http://127.0.0.1:"):
        raise BenchError(f"refusing to send load anywhere but loopback: {url}")
    command = [
        *pinning.prefix(pinning.load),
        wrk,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "10s",
        "-s",
        str(BENCH_DIR / script),
        url,
        "--",
        *script_args,
    ]
    completed = subprocess.run(
        command, capture_output=True, text=True, timeout=seconds + 60, check=False, cwd=REPO_DIR
    )
    for line in completed.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            data = json.loads(line.removeprefix("BENCH_JSON "))
            return Load(
                requests=int(data["requests"]),
                seconds=data["duration_us"] / 1e6,
                errors={name: int(count) for name, count in data["errors"].items()},
                latency_us={name: float(value) for name, value in data["latency_us"].items()},
            )
    raise BenchError(
        f"wrk gave no result (exit {completed.returncode}):\n{completed.stdout}\n{completed.stderr}"
    )
