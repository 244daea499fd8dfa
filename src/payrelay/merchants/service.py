"""Merchant and API key administration, used by the CLI (operators), never over HTTP."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from payrelay.auth.keys import DISPLAY_PREFIX_LENGTH, Mode, generate_key, hash_key
from payrelay.db.engine import Database
from payrelay.db.models import ApiKey, Merchant
from payrelay.db.types import utcnow
from payrelay.errors import BadRequest, NotFound
from payrelay.kit.ids import new_id
from payrelay.merchants.repository import MerchantRepository
from payrelay.webhooks import secrets as webhook_secrets


@dataclass(frozen=True)
class IssuedKey:
    """A freshly created key. ``key`` is the only time the plaintext exists outside the client."""

    id: str
    key: str
    mode: Mode
    merchant_id: str
    expires_at: datetime | None


async def create_merchant(database: Database, name: str) -> Merchant:
    name = name.strip()
    if not name or len(name) > 200:
        raise BadRequest("A merchant name must be 1 to 200 characters.")
    async with database.write() as session:
        merchant = Merchant(id=new_id("mer"), name=name, created_at=utcnow())
        await MerchantRepository(session).add(merchant)
    return merchant


async def onboard(database: Database, server_secret: bytes, name: str) -> tuple[Merchant, str]:
    """A new merchant with its first webhook signing secret (returned once, in plaintext)."""
    merchant = await create_merchant(database, name)
    async with database.write() as session:
        secret = await webhook_secrets.create(session, server_secret, merchant.id, utcnow())
    return merchant, secret


async def rotate_webhook_secret(
    database: Database, server_secret: bytes, merchant_id: str, overlap: timedelta
) -> tuple[str, datetime]:
    """A new webhook secret; the old ones keep signing too until ``overlap`` has passed."""
    now = utcnow()
    async with database.write() as session:
        if await MerchantRepository(session).get(merchant_id) is None:
            raise NotFound(f"No merchant with id {merchant_id!r}.")
        secret = await webhook_secrets.rotate(session, server_secret, merchant_id, now, overlap)
    return secret, now + overlap


async def create_key(
    database: Database,
    secret: bytes,
    merchant_id: str,
    mode: Mode,
    expires_in: timedelta | None = None,
) -> IssuedKey:
    plaintext = generate_key(mode)
    now = utcnow()
    async with database.write() as session:
        repository = MerchantRepository(session)
        if await repository.get(merchant_id) is None:
            raise NotFound(f"No merchant with id {merchant_id!r}.")
        row = ApiKey(
            id=new_id("key"),
            merchant_id=merchant_id,
            mode=mode.value,
            key_hash=hash_key(secret, plaintext),
            display_prefix=plaintext[:DISPLAY_PREFIX_LENGTH],
            created_at=now,
            expires_at=now + expires_in if expires_in else None,
        )
        await repository.add(row)
    return IssuedKey(row.id, plaintext, mode, merchant_id, row.expires_at)


async def list_keys(database: Database, merchant_id: str) -> list[ApiKey]:
    async with database.read() as session:
        repository = MerchantRepository(session)
        if await repository.get(merchant_id) is None:
            raise NotFound(f"No merchant with id {merchant_id!r}.")
        return await repository.keys_of(merchant_id)


async def revoke_key(database: Database, key_id: str) -> ApiKey:
    async with database.write() as session:
        row = await MerchantRepository(session).get_key(key_id)
        if row is None:
            raise NotFound(f"No key with id {key_id!r}.")
        if row.revoked_at is None:
            row.revoked_at = utcnow()
    return row
