"""A fake clock for code that sleeps on its own thread."""

from __future__ import annotations

from baseten_operator.runtime.clock import FakeClock


class SleepRecordingClock(FakeClock):
    """A FakeClock whose `sleep` moves time itself, recording each request.

    The code under test sleeps on its own thread (backoff, Retry-After, token buckets,
    connection retries); with this clock those waits complete at once and the test can
    assert their lengths.
    """

    def __init__(self) -> None:
        super().__init__()
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(seconds)
