"""Client-side rate limiting: token buckets shared by every thread using one client.

Baseten counts requests per API key and endpoint. A plain bucket of capacity N
refilling N per window lets 2N requests through in one window (a full burst, then a
window's worth of refill), so buckets are sized with burst + refill-per-window == N:
no window of the documented length ever sees more than N requests.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from baseten_operator.runtime.clock import Clock
from baseten_operator.runtime.tokenbucket import TokenBucket

# Share of a limit that may be spent at once; the rest is spread over the window.
_BURST_SHARE = 0.25


@dataclass(frozen=True)
class Limit:
    """At most `requests` per `per_seconds`, as documented by the server."""

    requests: int
    per_seconds: float

    def __post_init__(self) -> None:
        if self.requests < 1 or self.per_seconds <= 0:
            raise ValueError(f"invalid rate limit {self.requests}/{self.per_seconds}s")


def bucket_for(limit: Limit, clock: Clock) -> TokenBucket:
    """A bucket whose burst plus one window's refill equals the documented limit."""
    burst = max(1, int(limit.requests * _BURST_SHARE))
    refill = max(limit.requests - burst, 1)
    return TokenBucket(rate=refill / limit.per_seconds, burst=burst, clock=clock)


class EndpointRateLimiter:
    """One bucket per endpoint (an operation: method and path template), created on first use.

    `time_scale` multiplies every limit's window, as `--time-scale` does every other delay
    the operator waits: against a simulator whose time runs 20 times faster (its windows
    as short), the documented 100/s is 2,000 of its seconds' worth per real second.
    """

    def __init__(self, clock: Clock, time_scale: float = 1.0) -> None:
        if time_scale <= 0:
            raise ValueError(f"time scale must be positive, got {time_scale}")
        self._clock = clock
        self._time_scale = time_scale
        self._lock = threading.Lock()
        self._buckets: dict[str, TokenBucket] = {}

    def reserve(self, endpoint: str, limit: Limit) -> float:
        """Take one token of `endpoint`'s bucket; return how long to wait before using it.

        The caller does the waiting, so that its wait can be bounded and interrupted.
        """
        with self._lock:
            bucket = self._buckets.get(endpoint)
            if bucket is None:
                scaled = Limit(limit.requests, limit.per_seconds * self._time_scale)
                bucket = self._buckets[endpoint] = bucket_for(scaled, self._clock)
        return bucket.reserve()
