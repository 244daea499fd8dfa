"""Opaque identifiers: a type prefix and enough randomness that they cannot be guessed."""

from __future__ import annotations

import secrets
import string

BASE62 = string.ascii_letters + string.digits


def random_base62(length: int) -> str:
    """``length`` uniformly random base62 characters from one call to the OS's generator.

    8 random bits per character against log2(62) ~ 5.95 needed, so the bias of reducing the
    number digit by digit is below 2**-(2 * length): nil for the lengths used here."""
    value = int.from_bytes(secrets.token_bytes(length))
    characters = []
    for _ in range(length):
        value, digit = divmod(value, 62)
        characters.append(BASE62[digit])
    return "".join(characters)


def new_id(prefix: str, length: int = 24) -> str:
    """``prefix_`` plus ``length`` base62 characters (24 gives ~143 bits)."""
    return f"{prefix}_{random_base62(length)}"
