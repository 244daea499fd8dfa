"""Endpoints that stop answering are paused, so a few dead receivers cannot hold the pool.

A receiver that hangs keeps a delivery slot for the whole timeout. With only per-endpoint
limits, enough hanging endpoints (16 at the defaults: 64 slots, 4 each) would hold every slot
and stall every healthy merchant. So after a delivery gets no answer at all (timeout or
connection failure), its endpoint is paused: its events stay pending and are not claimed
until the pause ends, the pause doubles with each further silence (5 s, 10 s, ... 5 min), and
after a pause one probe at a time goes out until the endpoint answers again. Any HTTP answer,
even an error status, ends the pause: a quick 500 holds no slot.
"""

from __future__ import annotations

from datetime import datetime, timedelta

MAX_PAUSE = timedelta(minutes=5)


class EndpointPauses:
    def __init__(self, first_pause: timedelta, per_endpoint: int) -> None:
        self.first_pause = first_pause
        self.per_endpoint = per_endpoint
        self._silent: dict[str, tuple[int, datetime]] = {}  # silences in a row, paused until

    def limit(self, endpoint: str) -> int:
        """Concurrent deliveries allowed: one probe at a time once an endpoint went silent."""
        return 1 if endpoint in self._silent else self.per_endpoint

    def paused(self, now: datetime) -> list[str]:
        return [endpoint for endpoint, (_, until) in self._silent.items() if until > now]

    def record(self, endpoint: str, answered: bool, now: datetime) -> None:
        if answered:
            self._silent.pop(endpoint, None)
            return
        silences = self._silent.get(endpoint, (0, now))[0] + 1
        pause = min(self.first_pause * 2 ** (silences - 1), MAX_PAUSE)
        self._silent[endpoint] = (silences, now + pause)
