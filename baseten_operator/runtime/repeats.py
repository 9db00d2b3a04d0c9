"""Rate limiting of repeated log lines: one object failing the same way every few
milliseconds (rate-limited retries start at 5 ms) must not write megabytes of log."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from dataclasses import dataclass

from cachetools import LRUCache

from baseten_operator.runtime.clock import Clock

_CAPACITY = 4096


@dataclass
class _Window:
    opened: float
    suppressed: int = 0


class RepeatLimiter:
    """Lets one line per key through per `interval` seconds and counts the rest.

    `admit(key)` answers None for a line to drop, else how many lines of that key were
    dropped since the last one let through (for the line to report, e.g. `repeats=12`).
    Thread-safe; remembers the most recent `capacity` keys.
    """

    def __init__(self, clock: Clock, interval: float = 60.0, capacity: int = _CAPACITY) -> None:
        self._clock = clock
        self._interval = interval
        self._lock = threading.Lock()
        self._windows: LRUCache[Hashable, _Window] = LRUCache(capacity)

    def admit(self, key: Hashable) -> int | None:
        now = self._clock.monotonic()
        with self._lock:
            window = self._windows.get(key)
            if window is not None and now - window.opened < self._interval:
                window.suppressed += 1
                return None
            self._windows[key] = _Window(opened=now)
            return window.suppressed if window is not None else 0
