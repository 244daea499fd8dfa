"""Which connector serves an issuer in a mode. Built once per process from configuration.

Live mode uses the real issuer with the configured credentials; an issuer without credentials
has no live connector, and live creates for it answer 503. Test mode always uses the simulators.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from payrelay.auth.keys import Mode
from payrelay.issuers.base import Issuer, IssuerConnector
from payrelay.issuers.pricing import RateSource


@dataclass
class ConnectorRegistry:
    connectors: dict[tuple[Issuer, Mode], IssuerConnector] = field(default_factory=dict)
    rates: dict[Mode, RateSource] = field(default_factory=dict)

    def get(self, issuer: Issuer, mode: Mode) -> IssuerConnector | None:
        return self.connectors.get((issuer, mode))

    def rate_source(self, mode: Mode) -> RateSource | None:
        return self.rates.get(mode)

    def pushing(self, issuer: Issuer) -> Iterator[tuple[Mode, IssuerConnector]]:
        """Connectors that may have sent a notification for ``issuer``, live first."""
        for mode in (Mode.LIVE, Mode.TEST):
            connector = self.connectors.get((issuer, mode))
            if connector is not None and connector.pushes_notifications:
                yield mode, connector
