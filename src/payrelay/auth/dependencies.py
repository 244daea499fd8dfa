"""Resolve the calling merchant from the Bearer key. Every lookup downstream is scoped to it.

A key is checked against the store on every request, so revocation and expiry take effect at
once. The hot paths fold that check into the statement that reads their row (``keyed``): one
round trip answers both "is this key good?" and "what is this merchant's row?".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import ColumnElement, and_, bindparam, select

from payrelay.auth.keys import Mode, hash_key, hashes_match, mode_of
from payrelay.context import AppContext, get_context
from payrelay.db.models import ApiKey, MomoTransaction, Transfer
from payrelay.db.pointread import AnySelect
from payrelay.db.types import utcnow
from payrelay.errors import RateLimited, Unauthorized

KEY_COLUMNS = (
    ApiKey.id,
    ApiKey.merchant_id,
    ApiKey.mode,
    ApiKey.key_hash,
    ApiKey.expires_at,
    ApiKey.revoked_at,
)
KEY_WIDTH = len(KEY_COLUMNS)
INVALID_KEY = "The API key is invalid."
KEY_BY_HASH = select(*KEY_COLUMNS).where(ApiKey.key_hash == bindparam("key_hash"))


@dataclass(frozen=True)
class Caller:
    """The merchant and mode a request acts for."""

    merchant_id: str
    mode: Mode
    key_id: str


@dataclass(frozen=True)
class Credentials:
    """A well-formed Bearer key, already hashed, not yet checked against the store."""

    mode: Mode
    digest: str


@dataclass(frozen=True)
class StoredKey:
    id: str
    merchant_id: str
    mode: str
    key_hash: str
    expires_at: datetime | None
    revoked_at: datetime | None


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


async def credentials(
    request: Request, context: Annotated[AppContext, Depends(get_context)]
) -> Credentials:
    token = bearer_token(request)
    if token is None:
        raise Unauthorized()
    claimed_mode = mode_of(token)
    if claimed_mode is None:
        raise Unauthorized(INVALID_KEY)
    return Credentials(claimed_mode, hash_key(context.key_secret, token))


Credentialed = Annotated[Credentials, Depends(credentials)]


def admit(context: AppContext, presented: Credentials, key: StoredKey | None) -> Caller:
    """The caller, or the reason the key is refused; then one token from the key's bucket."""
    if key is None:
        raise Unauthorized(INVALID_KEY)
    if not hashes_match(key.key_hash, presented.digest) or key.mode != presented.mode.value:
        raise Unauthorized(INVALID_KEY)
    if key.revoked_at is not None:
        raise Unauthorized("The API key has been revoked.")
    if key.expires_at is not None and key.expires_at <= utcnow():
        raise Unauthorized("The API key has expired.")
    wait = context.rate_limiter.acquire(key.id)
    if wait > 0:
        raise RateLimited(context.rate_limiter.retry_after(wait))
    return Caller(key.merchant_id, Mode(key.mode), key.id)


def keyed(
    model: type[Transfer] | type[MomoTransaction], lookup: ColumnElement[bool], *columns: Any
) -> AnySelect:
    """The key by its hash, plus at most one row of ``model`` that belongs to the key's merchant
    and mode and matches ``lookup``. The first of ``columns`` must be NOT NULL: a NULL there
    tells that no row matched."""
    scoped = and_(model.merchant_id == ApiKey.merchant_id, model.mode == ApiKey.mode, lookup)
    return (
        select(*KEY_COLUMNS, *columns)
        .select_from(ApiKey)
        .outerjoin(model, scoped)
        .where(ApiKey.key_hash == bindparam("key_hash"))
    )


async def admit_with_row(
    context: AppContext,
    presented: Credentials,
    statement: AnySelect,
    values: Mapping[str, Any],
) -> tuple[Caller, tuple[Any, ...] | None]:
    """Run a ``keyed`` statement: the caller (or 401/429) and the joined row, if there is one."""
    row = await context.database.points.fetch_one(
        statement, {"key_hash": presented.digest, **values}
    )
    if row is None:
        raise Unauthorized(INVALID_KEY)
    caller = admit(context, presented, StoredKey(*row[:KEY_WIDTH]))
    joined = row[KEY_WIDTH:]
    return caller, None if joined[0] is None else joined


async def authenticate(
    presented: Credentialed, context: Annotated[AppContext, Depends(get_context)]
) -> Caller:
    row = await context.database.points.fetch_one(KEY_BY_HASH, {"key_hash": presented.digest})
    return admit(context, presented, None if row is None else StoredKey(*row))


Authenticated = Annotated[Caller, Depends(authenticate)]
