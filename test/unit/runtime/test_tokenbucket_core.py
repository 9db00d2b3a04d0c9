"""The token bucket: reservations queue in order, refill is capped, `take` never borrows."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.tokenbucket import TokenBucket


def test_invalid_buckets_are_rejected() -> None:
    with pytest.raises(ValueError):
        TokenBucket(rate=0, burst=1, clock=FakeClock())
    with pytest.raises(ValueError):
        TokenBucket(rate=1, burst=0, clock=FakeClock())


def test_burst_is_free_then_callers_queue_in_order() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=0.25, burst=5, clock=clock)
    assert [bucket.reserve() for _ in range(5)] == [0.0] * 5
    assert bucket.reserve() == pytest.approx(4.0)
    assert bucket.reserve() == pytest.approx(8.0)
    clock.advance(4)
    # One token came back but two callers are already queued ahead.
    assert bucket.reserve() == pytest.approx(8.0)


def test_refill_never_exceeds_the_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=1.0, burst=3, clock=clock)
    clock.advance(1000)
    assert [bucket.reserve() for _ in range(4)] == [0.0, 0.0, 0.0, pytest.approx(1.0)]


def test_threads_share_one_bucket() -> None:
    bucket = TokenBucket(rate=0.25, burst=5, clock=FakeClock())
    with ThreadPoolExecutor(max_workers=10) as pool:
        delays = sorted(pool.map(lambda _: bucket.reserve(), range(10)))
    assert delays == [0.0] * 5 + [pytest.approx(4.0 * n) for n in range(1, 6)]


def test_take_refuses_an_empty_bucket_without_borrowing() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=0.5, burst=2, clock=clock)
    assert [bucket.take() for _ in range(3)] == [True, True, False]
    clock.advance(1.9)  # 0.95 of a token: still not a whole one
    assert not bucket.take()
    clock.advance(0.1)
    assert bucket.take()
    # Refusals cost nothing: the next whole token arrives exactly 2 s later.
    clock.advance(1.99)
    assert not bucket.take()
    clock.advance(0.01)
    assert bucket.take()
