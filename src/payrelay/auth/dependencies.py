"""Resolve the calling merchant from the Bearer key. Every lookup downstream is scoped to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from payrelay.auth.keys import Mode, hash_key, hashes_match, mode_of
from payrelay.context import AppContext, get_context
from payrelay.db.types import utcnow
from payrelay.errors import RateLimited, Unauthorized
from payrelay.merchants.repository import MerchantRepository


@dataclass(frozen=True)
class Caller:
    """The merchant and mode a request acts for."""

    merchant_id: str
    merchant_name: str
    mode: Mode
    key_id: str


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


async def authenticate(
    request: Request, context: Annotated[AppContext, Depends(get_context)]
) -> Caller:
    token = bearer_token(request)
    if token is None:
        raise Unauthorized()
    claimed_mode = mode_of(token)
    if claimed_mode is None:
        raise Unauthorized("The API key is invalid.")
    digest = hash_key(context.key_secret, token)
    async with context.database.read() as session:
        found = await MerchantRepository(session).key_with_merchant(digest)
    if found is None:
        raise Unauthorized("The API key is invalid.")
    key, merchant = found
    now = utcnow()
    if not hashes_match(key.key_hash, digest) or key.mode != claimed_mode.value:
        raise Unauthorized("The API key is invalid.")
    if key.revoked_at is not None:
        raise Unauthorized("The API key has been revoked.")
    if key.expires_at is not None and key.expires_at <= now:
        raise Unauthorized("The API key has expired.")
    wait = context.rate_limiter.acquire(key.id)
    if wait > 0:
        raise RateLimited(context.rate_limiter.retry_after(wait))
    caller = Caller(merchant.id, merchant.name, Mode(key.mode), key.id)
    request.state.caller = caller
    return caller


Authenticated = Annotated[Caller, Depends(authenticate)]
