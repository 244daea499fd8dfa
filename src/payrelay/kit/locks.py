"""Per-key asyncio locks that disappear when nobody holds or waits on them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from weakref import WeakValueDictionary


class KeyedLocks:
    """Serialise work on one key within this process (the database guards across processes)."""

    def __init__(self) -> None:
        self._locks: WeakValueDictionary[Hashable, asyncio.Lock] = WeakValueDictionary()

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        async with lock:
            yield
