"""Clocks for tests: a fake one for code that sleeps on its own thread, and a real one whose
wall clock reads a moment the test chooses."""

from __future__ import annotations

import threading
import time

from baseten_operator.runtime.clock import FakeClock, RealClock


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


class PinnedClock(RealClock):
    """Real time (sleeps, waits and the monotonic clock are the machine's), but `now` starts
    from the instant last pinned: what depends on the hour, the weekday or a time zone
    (autoscaling schedules' windows) reads the test's instant, whatever the machine's date.

    Handed to the Baseten simulator and the operator alike, so both sides see one clock.
    """

    def __init__(self, instant: float | None = None) -> None:
        self._lock = threading.Lock()
        self._base = (time.time(), time.monotonic())
        if instant is not None:
            self.pin(instant)

    def pin(self, instant: float) -> None:
        """From now on `now()` reads `instant`, then moves on in real time."""
        with self._lock:
            self._base = (instant, time.monotonic())

    def now(self) -> float:
        with self._lock:
            instant, since = self._base
        return instant + (time.monotonic() - since)
