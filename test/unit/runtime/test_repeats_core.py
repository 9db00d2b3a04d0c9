from __future__ import annotations

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.repeats import RepeatLimiter


def test_one_line_per_key_per_interval_and_the_next_counts_the_dropped() -> None:
    clock = FakeClock()
    limiter = RepeatLimiter(clock, interval=60)
    assert limiter.admit("a") == 0
    assert [limiter.admit("a") for _ in range(500)] == [None] * 500
    assert limiter.admit("b") == 0  # keys are independent
    clock.advance(59.9)
    assert limiter.admit("a") is None
    clock.advance(0.1)
    assert limiter.admit("a") == 501
    assert limiter.admit("a") is None
    clock.advance(60)
    assert limiter.admit("a") == 1


def test_only_the_most_recent_keys_are_remembered() -> None:
    limiter = RepeatLimiter(FakeClock(), interval=60, capacity=2)
    for key in ("a", "b", "c"):
        assert limiter.admit(key) == 0
    assert limiter.admit("a") == 0  # forgotten: admitted afresh
    assert limiter.admit("c") is None
