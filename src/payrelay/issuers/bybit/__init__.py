"""Bybit Pay (QR payment, ``E_COMMERCE``): connector, wire formats and simulator."""

from payrelay.issuers.bybit.connector import BybitConnector, BybitCredentials
from payrelay.issuers.bybit.simulator import create_simulator

__all__ = ["BybitConnector", "BybitCredentials", "create_simulator"]
