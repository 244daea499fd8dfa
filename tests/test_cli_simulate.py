"""`payrelay simulate ISSUER --port P` runs a standalone simulator that checks signatures."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest

from tests.harness import free_port


@pytest.mark.parametrize(
    ("issuer", "path"),
    [
        ("binance", "/binancepay/openapi/v3/order"),
        ("bybit", "/v5/bybitpay/create_pay"),
        ("valr", "/v1/pay/history"),
    ],
)
def test_simulator_runs_and_refuses_an_unsigned_call(issuer: str, path: str) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "payrelay", "simulate", issuer, "--port", str(port), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        printed = json.loads(process.stdout.readline())
        assert printed["base_url"] == f"http://127.0.0.1:{port}"
        assert printed["api_key"]
        assert printed["api_secret"]
        deadline = time.monotonic() + 20
        while True:
            try:
                method = "GET" if issuer == "valr" else "POST"
                response = httpx.request(
                    method,
                    f"{printed['base_url']}{path}",
                    content=b"{}",
                    headers={"Content-Type": "application/json"},
                    timeout=2,
                )
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the simulator did not start"
                time.sleep(0.1)
        body = response.json()
        # Each answers in its issuer's own error envelope.
        if issuer == "binance":
            assert body["status"] in ("FAIL", "ERROR")
        elif issuer == "bybit":
            assert body["retCode"] != 100000
        else:
            assert response.status_code == 401
            assert body["code"] < 0
    finally:
        process.terminate()
        process.wait(timeout=10)
