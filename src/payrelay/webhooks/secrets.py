"""Webhook signing secrets: Standard Webhooks ``whsec_`` format, encrypted at rest.

A merchant's secret must be readable to sign with, so it cannot be stored as a hash like an API
key. It is sealed with AES-GCM under a key derived (HKDF) from the server secret instead.
"""

from __future__ import annotations

import base64
import os
import secrets
from datetime import datetime, timedelta

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from payrelay.db.models import WebhookSecret
from payrelay.kit.ids import new_id

PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def _key(server_secret: bytes) -> bytes:
    return HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"payrelay webhook secrets v1"
    ).derive(server_secret)


def seal(server_secret: bytes, plaintext: str) -> str:
    nonce = os.urandom(12)
    sealed = AESGCM(_key(server_secret)).encrypt(nonce, plaintext.encode(), None)
    return base64.b64encode(nonce + sealed).decode()


def unseal(server_secret: bytes, sealed: str) -> str:
    raw = base64.b64decode(sealed)
    return AESGCM(_key(server_secret)).decrypt(raw[:12], raw[12:], None).decode()


async def create(
    session: AsyncSession, server_secret: bytes, merchant_id: str, now: datetime
) -> str:
    """Add a new active secret for the merchant; returns its plaintext (shown once)."""
    plaintext = new_secret()
    session.add(
        WebhookSecret(
            id=new_id("whs"),
            merchant_id=merchant_id,
            secret_encrypted=seal(server_secret, plaintext),
            created_at=now,
            expires_at=None,
        )
    )
    await session.flush()
    return plaintext


async def rotate(
    session: AsyncSession,
    server_secret: bytes,
    merchant_id: str,
    now: datetime,
    overlap: timedelta,
) -> str:
    """A new secret; the current ones keep signing alongside it until the overlap ends."""
    current = await session.scalars(
        select(WebhookSecret).where(
            WebhookSecret.merchant_id == merchant_id,
            or_(WebhookSecret.expires_at.is_(None), WebhookSecret.expires_at > now + overlap),
        )
    )
    for row in current:
        row.expires_at = now + overlap
    return await create(session, server_secret, merchant_id, now)


async def signing_now(
    session: AsyncSession, server_secret: bytes, merchant_id: str, now: datetime
) -> list[str]:
    """Every secret that signs right now, newest first; empty if the merchant has none."""
    rows = await session.scalars(
        select(WebhookSecret)
        .where(
            WebhookSecret.merchant_id == merchant_id,
            or_(WebhookSecret.expires_at.is_(None), WebhookSecret.expires_at > now),
        )
        .order_by(WebhookSecret.created_at.desc())
    )
    return [unseal(server_secret, row.secret_encrypted) for row in rows]


async def active(
    session: AsyncSession, server_secret: bytes, merchant_id: str, now: datetime
) -> list[str]:
    """Every secret that signs right now, newest first; one is made if the merchant has none."""
    return await signing_now(session, server_secret, merchant_id, now) or [
        await create(session, server_secret, merchant_id, now)
    ]
