"""Endpoints that stop answering are paused, so a few dead receivers cannot hold the pool.

A receiver that hangs keeps a delivery slot for the whole timeout. With only per-endpoint
limits, enough hanging endpoints (16 at the defaults: 64 slots, 4 each) would hold every slot
and stall every healthy merchant. So after a delivery gets no answer at all (timeout or
connection failure), its endpoint (``scheme://host:port``, the unit the concurrency limit uses
too) is paused: its events stay pending and are not claimed until the pause ends. A silence
after a pause has ended doubles the pause (5 s, 10 s, ... 5 min); the other deliveries that were
already in flight when the first one fell silent do not. After a pause, one probe at a time
goes out until the endpoint answers. Any HTTP answer, even an error status, ends it all: a
quick 500 holds no slot.
"""

from __future__ import annotations

from datetime import datetime, timedelta

MAX_PAUSE = timedelta(minutes=5)
# At most this many endpoints are left out of one claim, to keep the statement small; an
# endpoint past the cap is simply probed again sooner.
MAX_EXCLUDED = 500


class EndpointPauses:
    def __init__(self, first_pause: timedelta, per_endpoint: int) -> None:
        self.first_pause = first_pause
        self.per_endpoint = per_endpoint
        self._silent: dict[str, tuple[int, datetime]] = {}  # silences in a row, paused until

    def limit(self, endpoint: str) -> int:
        """Concurrent deliveries allowed: one probe at a time once an endpoint went silent."""
        return 1 if endpoint in self._silent else self.per_endpoint

    def paused(self, now: datetime) -> list[str]:
        """Endpoints paused now; entries long past their pause are forgotten, so the table
        cannot grow with every dead endpoint ever seen."""
        stale = [ep for ep, (_, until) in self._silent.items() if until + MAX_PAUSE < now]
        for endpoint in stale:
            del self._silent[endpoint]
        paused = [ep for ep, (_, until) in self._silent.items() if until > now]
        return paused[-MAX_EXCLUDED:]

    def record(self, endpoint: str, answered: bool, now: datetime) -> None:
        if answered:
            self._silent.pop(endpoint, None)
            return
        silences, until = self._silent.get(endpoint, (0, now))
        if until > now:
            return  # already paused: a delivery that was in flight says nothing new
        pause = min(self.first_pause * 2**silences, MAX_PAUSE)
        self._silent[endpoint] = (silences + 1, now + pause)
