"""Binance Pay: the merchant order API (v3 create, v2 query, close) and its simulator."""

from payrelay.issuers.binance.connector import BinanceConnector, BinanceCredentials
from payrelay.issuers.binance.simulator import create_simulator

__all__ = ["BinanceConnector", "BinanceCredentials", "create_simulator"]
