"""Endpoint pauses: silence pauses an endpoint for longer each time; any answer ends it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from payrelay.webhooks.pause import MAX_PAUSE, EndpointPauses

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
FIRST = timedelta(seconds=5)


def test_a_silent_endpoint_is_paused_for_the_first_pause_then_probed_one_at_a_time() -> None:
    pauses = EndpointPauses(FIRST, per_endpoint=4)
    assert pauses.limit("a") == 4
    pauses.record("a", answered=False, now=NOW)
    assert pauses.paused(NOW + timedelta(seconds=4.9)) == ["a"]
    assert pauses.paused(NOW + FIRST) == []
    assert pauses.limit("a") == 1
    assert pauses.limit("b") == 4


def test_silences_of_deliveries_already_in_flight_do_not_lengthen_the_pause() -> None:
    pauses = EndpointPauses(FIRST, per_endpoint=4)
    for seconds in (0, 0.1, 0.2, 0.3):  # the four in-flight deliveries time out together
        pauses.record("a", answered=False, now=NOW + timedelta(seconds=seconds))
    assert pauses.paused(NOW + FIRST) == []


def test_each_silence_after_a_pause_doubles_it_up_to_the_cap() -> None:
    pauses = EndpointPauses(FIRST, per_endpoint=4)
    at = NOW
    for seconds in [5, 10, 20, 40, 80, 160, 300, 300]:
        pauses.record("a", answered=False, now=at)
        pause = timedelta(seconds=seconds)
        assert pauses.paused(at + pause - timedelta(microseconds=1)) == ["a"]
        assert pauses.paused(at + pause) == []
        at += pause  # the probe after the pause falls silent too
    assert timedelta(seconds=300) == MAX_PAUSE


def test_any_answer_ends_the_pause_and_restores_the_limit() -> None:
    pauses = EndpointPauses(FIRST, per_endpoint=4)
    pauses.record("a", answered=False, now=NOW)
    pauses.record("a", answered=True, now=NOW)
    assert pauses.paused(NOW) == []
    assert pauses.limit("a") == 4
    pauses.record("a", answered=False, now=NOW)  # counting starts again from the first pause
    assert not pauses.paused(NOW + FIRST)


def test_endpoints_long_past_their_pause_are_forgotten() -> None:
    pauses = EndpointPauses(FIRST, per_endpoint=4)
    pauses.record("a", answered=False, now=NOW)
    assert pauses.limit("a") == 1
    pauses.paused(NOW + FIRST + MAX_PAUSE + timedelta(seconds=1))
    assert pauses.limit("a") == 4
