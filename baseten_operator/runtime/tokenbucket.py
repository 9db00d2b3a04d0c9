"""The one token bucket: `rate` tokens a second, at most `burst` saved up, thread-safe.

Two ways to use it: `reserve` serves everyone, late callers waiting their turn (the work
queue's overall limit, an API client's per-endpoint limits); `take` refuses when the
bucket is empty (the Event recorder's per-object spam filter).
"""

from __future__ import annotations

import threading

from baseten_operator.runtime.clock import Clock


class TokenBucket:
    def __init__(self, rate: float, burst: int, clock: Clock) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"invalid token bucket rate={rate} burst={burst}")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock.monotonic()

    def reserve(self) -> float:
        """Take one token; return how long the caller must wait before using it.

        An empty bucket goes into debt rather than refusing, so callers are served in
        arrival order at `rate` and nobody spins.
        """
        with self._lock:
            self._refill()
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    def take(self) -> bool:
        """Take one token if there is a whole one; never go into debt."""
        with self._lock:
            self._refill()
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True

    def _refill(self) -> None:
        now = self._clock.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
        self._last = now
