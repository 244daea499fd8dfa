"""API key format and keyed hashing.

A key is ``pr_test_`` or ``pr_live_`` followed by 40 base62 characters (~238 bits). The server
keeps only HMAC-SHA256(server secret, key), so a stolen database does not yield usable keys.
"""

from __future__ import annotations

import hashlib
import hmac
from enum import StrEnum

from payrelay.kit.ids import random_base62

KEY_BODY_LENGTH = 40
DISPLAY_PREFIX_LENGTH = 12


class Mode(StrEnum):
    TEST = "test"
    LIVE = "live"


def key_prefix(mode: Mode) -> str:
    return f"pr_{mode.value}_"


def generate_key(mode: Mode) -> str:
    return key_prefix(mode) + random_base62(KEY_BODY_LENGTH)


def hash_key(secret: bytes, key: str) -> str:
    return hmac.new(secret, key.encode(), hashlib.sha256).hexdigest()


def mode_of(key: str) -> Mode | None:
    """The mode a key claims by its prefix, or None if it is not shaped like one of ours."""
    for mode in Mode:
        prefix = key_prefix(mode)
        if key.startswith(prefix) and len(key) == len(prefix) + KEY_BODY_LENGTH:
            return mode
    return None


def hashes_match(expected: str, actual: str) -> bool:
    return hmac.compare_digest(expected.encode(), actual.encode())
