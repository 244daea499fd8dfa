"""Opaque identifiers: a type prefix and enough randomness that they cannot be guessed."""

from __future__ import annotations

import secrets
import string

BASE62 = string.ascii_letters + string.digits


def random_base62(length: int) -> str:
    return "".join(secrets.choice(BASE62) for _ in range(length))


def new_id(prefix: str, length: int = 24) -> str:
    """``prefix_`` plus ``length`` base62 characters (24 gives ~143 bits)."""
    return f"{prefix}_{random_base62(length)}"
