"""Runtime configuration, read once from ``PAYRELAY_*`` environment variables."""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///payrelay.db"


# Every duration must be positive: a zero interval would spin a loop, a zero timeout fail all.
PositiveDuration = Annotated[timedelta, Field(gt=timedelta(0))]


class Settings(BaseSettings):
    """Every knob of the service; each is documented in the README's configuration table."""

    model_config = SettingsConfigDict(env_prefix="PAYRELAY_", extra="ignore")

    database_url: str = DEFAULT_DATABASE_URL
    public_base_url: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    key_hash_secret: SecretStr | None = None
    default_expiry: PositiveDuration = timedelta(minutes=15)
    max_amount: Decimal = Decimal("1000000.00")
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    rate_limit_per_second: float = Field(default=100.0, ge=0)
    rate_limit_burst: int = Field(default=200, ge=1)
    expiry_sweep_interval: PositiveDuration = timedelta(seconds=5)

    # Issuers. Live credentials; an issuer without them answers live creates with 503.
    issuer_timeout: PositiveDuration = timedelta(seconds=10)
    binance_base_url: str = "https://bpay.binanceapi.com"
    binance_api_key: SecretStr | None = None
    binance_api_secret: SecretStr | None = None
    bybit_base_url: str = "https://api.bybit.com"
    bybit_api_key: SecretStr | None = None
    bybit_api_secret: SecretStr | None = None
    bybit_platform_public_key: SecretStr | None = None
    valr_base_url: str = "https://api.valr.com"
    valr_api_key: SecretStr | None = None
    valr_api_secret: SecretStr | None = None
    valr_pay_url: str = "https://www.valr.com/payments/send"
    rate_provider_url: str = "https://api.valr.com"
    rate_cache_ttl: PositiveDuration = timedelta(seconds=30)
    reconcile_interval: PositiveDuration = timedelta(seconds=10)
    # How long after expiry a VALR transfer is still polled for late or duplicate credits.
    late_payment_window: PositiveDuration = timedelta(hours=1)

    # Merchant webhooks. The schedule is the delay before each attempt, in seconds.
    webhook_dispatch: bool = True  # run the dispatcher in this process
    webhook_schedule: str = "0,5,300,1800,7200,18000,36000,36000"
    webhook_timeout: PositiveDuration = timedelta(seconds=10)
    webhook_concurrency: int = Field(default=64, ge=1)
    webhook_endpoint_concurrency: int = Field(default=4, ge=1)
    webhook_lease: PositiveDuration = timedelta(seconds=60)
    webhook_poll_interval: PositiveDuration = timedelta(milliseconds=500)
    # How long an endpoint that answered nothing is left alone first (doubling, up to 5 min).
    webhook_silent_pause: PositiveDuration = timedelta(seconds=5)
    # CIDRs that live-mode webhook URLs may reach although private (e.g. "10.1.0.0/16").
    webhook_allowlist: str = ""

    @model_validator(mode="after")
    def _lease_outlives_a_delivery(self) -> Settings:
        # A lease shorter than a delivery lets another worker send the same event meanwhile.
        if self.webhook_lease <= self.webhook_timeout:
            raise ValueError("webhook_lease must be longer than webhook_timeout")
        return self

    @property
    def webhook_delays(self) -> list[float]:
        return [float(part) for part in self.webhook_schedule.split(",") if part.strip()]

    @property
    def webhook_allowed_networks(self) -> list[str]:
        return [part.strip() for part in self.webhook_allowlist.split(",") if part.strip()]

    @property
    def base_url(self) -> str:
        """The address merchants and payers reach us at, without a trailing slash."""
        if self.public_base_url:
            return self.public_base_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}"

    @property
    def is_sqlite(self) -> bool:
        return make_url(self.database_url).get_backend_name() == "sqlite"

    def resolved_key_hash_secret(self) -> bytes:
        """The HMAC key for API keys.

        On the embedded SQLite default a secret is generated once and kept beside the database,
        so a restart does not invalidate issued keys. Any other store must be given one.
        """
        if self.key_hash_secret is not None:
            value = self.key_hash_secret.get_secret_value()
            if len(value) < 32:
                raise ValueError("PAYRELAY_KEY_HASH_SECRET must be at least 32 characters")
            return value.encode()
        if not self.is_sqlite:
            raise ValueError("PAYRELAY_KEY_HASH_SECRET is required when the store is not SQLite")
        database = make_url(self.database_url).database
        if not database or database == ":memory:":
            raise ValueError("PAYRELAY_KEY_HASH_SECRET is required for an in-memory database")
        secret_path = Path(f"{database}.secret")
        if not secret_path.exists():
            secret_path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass  # another process won the race; read its secret below
            else:
                with os.fdopen(fd, "w") as handle:
                    handle.write(secrets.token_urlsafe(48))
        return secret_path.read_text().strip().encode()
