"""``payrelay simulate ISSUER --port P``: run one issuer's simulator on its own."""

from __future__ import annotations

import secrets
from enum import StrEnum
from typing import Annotated

import typer

from payrelay.cli.output import emit


class SimulatedIssuer(StrEnum):
    BINANCE = "binance"
    BYBIT = "bybit"
    VALR = "valr"


def simulate(
    issuer: SimulatedIssuer,
    port: Annotated[int, typer.Option(help="Port to listen on (loopback).")] = 9100,
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    api_key: Annotated[
        str | None, typer.Option(envvar="PAYRELAY_SIMULATOR_API_KEY", help="Expected API key.")
    ] = None,
    api_secret: Annotated[
        str | None,
        typer.Option(envvar="PAYRELAY_SIMULATOR_API_SECRET", help="Expected API secret."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Run a simulator of ISSUER's API: signed requests, payer page, signed notifications,
    and ``/_control`` for induced faults."""
    import uvicorn

    from payrelay.issuers import binance, bybit
    from payrelay.issuers.simkit import SimulatorConfig
    from payrelay.issuers.valr.simulator import create_simulator as create_valr_simulator

    factories = {
        SimulatedIssuer.BINANCE: binance.create_simulator,
        SimulatedIssuer.BYBIT: bybit.create_simulator,
        SimulatedIssuer.VALR: create_valr_simulator,
    }
    base_url = f"http://{host}:{port}"
    config = SimulatorConfig(
        api_key=api_key or f"sim{issuer.value}{secrets.token_hex(8)}",
        api_secret=api_secret or secrets.token_hex(32),
        public_base_url=base_url,
    )
    simulator = factories[issuer](config)
    emit(
        {
            "issuer": issuer.value,
            "base_url": base_url,
            "api_key": config.api_key,
            "api_secret": config.api_secret,
            "public_key_pem": simulator.public_key_pem,
        },
        as_json,
    )
    uvicorn.run(simulator.app, host=host, port=port, log_level="warning")
