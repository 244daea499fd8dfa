"""API key format, keyed hashing and the rate limiter."""

from __future__ import annotations

import re

import pytest

from payrelay.auth.keys import Mode, generate_key, hash_key, hashes_match, mode_of
from payrelay.kit.ratelimit import RateLimiter


class TestKeys:
    @pytest.mark.parametrize("mode", list(Mode))
    def test_format(self, mode: Mode) -> None:
        key = generate_key(mode)
        assert re.fullmatch(rf"pr_{mode.value}_[A-Za-z0-9]{{40}}", key)
        assert mode_of(key) is mode

    def test_keys_are_unique(self) -> None:
        assert len({generate_key(Mode.TEST) for _ in range(1000)}) == 1000

    @pytest.mark.parametrize(
        "text", ["", "pr_test_", "pr_test_short", "sk_test_" + "a" * 40, "pr_test_" + "a" * 41]
    )
    def test_malformed_keys_claim_no_mode(self, text: str) -> None:
        assert mode_of(text) is None

    def test_hash_depends_on_the_server_secret(self) -> None:
        key = generate_key(Mode.LIVE)
        assert hash_key(b"a" * 32, key) != hash_key(b"b" * 32, key)
        assert key not in hash_key(b"a" * 32, key)
        assert hashes_match(hash_key(b"s" * 32, key), hash_key(b"s" * 32, key))


class TestRateLimiter:
    def test_burst_then_refusal_with_a_wait(self) -> None:
        limiter = RateLimiter(rate_per_second=1, burst=3)
        assert [limiter.acquire("k") for _ in range(3)] == [0.0, 0.0, 0.0]
        wait = limiter.acquire("k")
        assert 0 < wait <= 1
        assert RateLimiter.retry_after(wait) == 1

    def test_keys_have_separate_buckets(self) -> None:
        limiter = RateLimiter(rate_per_second=1, burst=1)
        assert limiter.acquire("a") == 0.0
        assert limiter.acquire("b") == 0.0
        assert limiter.acquire("a") > 0

    def test_zero_rate_disables_limiting(self) -> None:
        limiter = RateLimiter(rate_per_second=0, burst=1)
        assert all(limiter.acquire("k") == 0.0 for _ in range(100))
