"""Injectable time.

Every component that waits or timestamps takes a `Clock`, so unit tests can drive
time with `FakeClock.advance` and never sleep for real.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Wall-clock time, seconds since the epoch (for timestamps written to objects)."""

    def monotonic(self) -> float:
        """A clock that never goes back (for intervals and deadlines)."""

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for `seconds`."""

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        """`condition.wait(timeout)` in this clock's time; the caller holds the condition.

        Returns early when the condition is notified; callers re-check their predicate.
        """


def rfc3339(clock: Clock) -> str:
    """Kubernetes' timestamp form: second precision, `Z` suffix."""
    return format_rfc3339(clock.now())


def format_rfc3339(epoch: float) -> str:
    """`rfc3339` of a given moment (seconds since the epoch)."""
    global _last_formatted
    second = math.floor(epoch)
    cached_second, text = _last_formatted
    if second != cached_second:  # every status render asks, mostly within one second
        text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
        _last_formatted = (second, text)
    return text


# The last second `format_rfc3339` formatted; one tuple, so readers never see half of it.
_last_formatted: tuple[int, str] = (-1, "")


def parse_rfc3339(value: str | None) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp; None when absent or unreadable."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def sleep_unless(
    clock: Clock, wake: threading.Condition, stopped: threading.Event, seconds: float
) -> None:
    """Sleep `seconds` in `clock`'s time, returning early once `stopped` is set.

    Whoever sets `stopped` notifies `wake`, so a stopping component never waits out
    a backoff.
    """
    deadline = clock.monotonic() + seconds
    with wake:
        while not stopped.is_set():
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                return
            clock.wait(wake, remaining)


class RealClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        condition.wait(timeout)


class FakeClock:
    """Time that moves only when a test calls `advance`.

    Threads blocked in `sleep` or `wait` are woken by every `advance`, so code under
    test that waits for a deadline observes it without real sleeping.
    """

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = start
        self._mono = 0.0
        self._lock = threading.Lock()
        self._tick = threading.Condition(self._lock)
        self._waiters: weakref.WeakSet[threading.Condition] = weakref.WeakSet()

    def now(self) -> float:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
            self._mono += seconds
            waiters = list(self._waiters)
            self._tick.notify_all()
        for condition in waiters:
            with condition:
                condition.notify_all()

    def sleep(self, seconds: float) -> None:
        with self._lock:
            deadline = self._mono + seconds
            while self._mono < deadline:
                self._tick.wait()

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        with self._lock:
            if timeout is not None and timeout <= 0:
                return
            self._waiters.add(condition)
        condition.wait()
