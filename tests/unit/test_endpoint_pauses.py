"""Endpoint pauses: silence pauses an endpoint for longer each time; any answer ends it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from payrelay.webhooks.pause import MAX_PAUSE, EndpointPauses

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_a_silent_endpoint_is_paused_for_the_first_pause_then_probed_one_at_a_time() -> None:
    pauses = EndpointPauses(timedelta(seconds=5), per_endpoint=4)
    assert pauses.limit("a") == 4
    pauses.record("a", answered=False, now=NOW)
    assert pauses.paused(NOW + timedelta(seconds=4.9)) == ["a"]
    assert pauses.paused(NOW + timedelta(seconds=5)) == []
    assert pauses.limit("a") == 1
    assert pauses.limit("b") == 4


def test_each_further_silence_doubles_the_pause_up_to_the_cap() -> None:
    pauses = EndpointPauses(timedelta(seconds=5), per_endpoint=4)
    expected = [5, 10, 20, 40, 80, 160, 300, 300]
    for seconds in expected:
        pauses.record("a", answered=False, now=NOW)
        assert pauses.paused(NOW + timedelta(seconds=seconds) - timedelta(microseconds=1))
        assert not pauses.paused(NOW + timedelta(seconds=seconds))
    assert timedelta(seconds=expected[-1]) == MAX_PAUSE


def test_any_answer_ends_the_pause_and_restores_the_limit() -> None:
    pauses = EndpointPauses(timedelta(seconds=5), per_endpoint=4)
    pauses.record("a", answered=False, now=NOW)
    pauses.record("a", answered=True, now=NOW)
    assert pauses.paused(NOW) == []
    assert pauses.limit("a") == 4
    pauses.record("a", answered=False, now=NOW)  # counting starts again from the first pause
    assert not pauses.paused(NOW + timedelta(seconds=5))
