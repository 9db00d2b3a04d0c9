"""Baseten's per-key, per-endpoint rate limits, in simulated time."""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass

from baseten_operator.runtime.clock import Clock


@dataclass(frozen=True)
class Limit:
    requests: int
    per_seconds: float


# Documented limits (docs/baseten-api.md); every other /v1 endpoint gets DEFAULT_LIMIT.
ENDPOINT_LIMITS: dict[str, Limit] = {
    "activate": Limit(20, 60.0),
    "deactivate": Limit(20, 60.0),
    "retry": Limit(10, 60.0),
}
DEFAULT_LIMIT = Limit(100, 1.0)


class RateLimiter:
    """Sliding-window counters; windows last `per_seconds * time_scale` of clock time.

    `retry_after` is reported in simulated seconds, like every other duration the
    simulator speaks of, so a client running at the same time scale waits the right time.
    """

    def __init__(self, clock: Clock, time_scale: float = 1.0) -> None:
        self._clock = clock
        self._time_scale = time_scale
        self._lock = threading.Lock()
        self._hits: dict[tuple[str, str], deque[float]] = {}
        self.enabled = True
        self.overrides: dict[str, Limit] = {}

    def configure(
        self, *, enabled: bool | None = None, overrides: dict[str, Limit] | None = None
    ) -> None:
        with self._lock:
            if enabled is not None:
                self.enabled = enabled
            if overrides is not None:
                self.overrides = dict(overrides)
            self._hits.clear()

    def limit_for(self, endpoint: str) -> Limit:
        return self.overrides.get(endpoint) or ENDPOINT_LIMITS.get(endpoint) or DEFAULT_LIMIT

    def check(self, api_key: str, endpoint: str) -> int | None:
        """Count one request; None when allowed, else the retry_after (sim seconds, >= 1)."""
        if not self.enabled:
            return None
        limit = self.limit_for(endpoint)
        window = limit.per_seconds * self._time_scale
        now = self._clock.monotonic()
        with self._lock:
            hits = self._hits.setdefault((api_key, endpoint), deque())
            while hits and hits[0] <= now - window:
                hits.popleft()
            if len(hits) < limit.requests:
                hits.append(now)
                return None
            wait = hits[0] + window - now
            return max(1, math.ceil(wait / self._time_scale))

    def reset(self) -> None:
        with self._lock:
            self._hits.clear()
