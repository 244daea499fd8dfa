"""Per-key token buckets, in process memory.

Each process keeps its own buckets, so N server processes allow up to N times the rate; that is
documented. A rate of 0 turns limiting off.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict

MAX_TRACKED_KEYS = 100_000


class RateLimiter:
    def __init__(self, rate_per_second: float, burst: int) -> None:
        self.rate = rate_per_second
        self.burst = float(burst)
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def acquire(self, key: str) -> float:
        """Take one token; returns 0 on success, else the seconds until a token is available."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        tokens, last = self._buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        self._buckets[key] = (tokens, now)
        if len(self._buckets) > MAX_TRACKED_KEYS:
            self._buckets.popitem(last=False)
        return wait

    @staticmethod
    def retry_after(wait: float) -> int:
        return max(1, math.ceil(wait))
