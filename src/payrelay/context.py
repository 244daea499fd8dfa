"""What a running service shares between requests: settings, the store and the key secret."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from payrelay.config import Settings
from payrelay.db.engine import Database
from payrelay.issuers.registry import ConnectorRegistry
from payrelay.kit.ratelimit import RateLimiter


@dataclass
class AppContext:
    settings: Settings
    database: Database
    key_secret: bytes
    connectors: ConnectorRegistry = field(default_factory=ConnectorRegistry)
    # Test mode's simulators, by issuer (typed loosely to keep this module import-light).
    simulators: dict[Any, Any] = field(default_factory=dict)
    rate_limiter: RateLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.rate_limiter = RateLimiter(
            self.settings.rate_limit_per_second, self.settings.rate_limit_burst
        )


async def get_context(request: Request) -> AppContext:
    """``async`` so FastAPI calls it inline instead of through its thread pool."""
    context: AppContext = request.app.state.context
    return context
