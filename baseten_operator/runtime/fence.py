"""The write fence: one guard that every mutating call of a replica passes through.

A replica may write (to Kubernetes, to an external API, by launching a child process)
only while it can prove that it leads. The proof comes from the leader elector: a
renewal of the Lease that succeeded less than the renew deadline ago, and no other
holder seen since. A replica that cannot prove it does not write: the call raises
`NotLeader` before anything is sent, the pass ends, and the key is not requeued on
this replica (the new leader owns it now).

The fence also owns every wait that a write path makes (a backoff, a server's
Retry-After, waiting for push capacity): `sleep` returns early, raising `NotLeader`,
the moment the fence closes, so losing the Lease or shutting down never waits out a
sleep inside a worker.

Without leader election, the proof always holds and only `close` (shutdown) fences.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from baseten_operator.runtime.clock import Clock, RealClock, sleep_unless

# Why the replica may not write now, or None when it may.
LeadershipProof = Callable[[], str | None]


def always_leading() -> str | None:
    """The proof of a replica that runs without leader election."""
    return None


class NotLeader(Exception):
    """A mutating call was refused: this replica cannot prove it still leads."""

    def __init__(self, action: str, reason: str) -> None:
        super().__init__(f"refused {action}: {reason}")
        self.action = action
        self.reason = reason


class WriteFence:
    def __init__(self, proof: LeadershipProof = always_leading, clock: Clock | None = None):
        self._proof = proof
        self._clock: Clock = clock or RealClock()
        self._closed = threading.Event()
        self._closed_reason = ""
        self._wake = threading.Condition()

    def check(self, action: str) -> None:
        """Raise NotLeader unless this replica may perform `action` now."""
        reason = self.refusal()
        if reason is not None:
            raise NotLeader(action, reason)

    def refusal(self) -> str | None:
        """Why a write would be refused now, or None."""
        if self._closed.is_set():
            return self._closed_reason
        return self._proof()

    def sleep(self, seconds: float, action: str) -> None:
        """Wait `seconds` on the clock; raise NotLeader at once if the fence closes meanwhile."""
        sleep_unless(self._clock, self._wake, self._closed, seconds)
        if self._closed.is_set():
            raise NotLeader(action, self._closed_reason)

    def close(self, reason: str) -> None:
        """Refuse every later write and wake every sleeper (leadership lost, or shutdown)."""
        if self._closed.is_set():
            return
        self._closed_reason = reason
        self._closed.set()
        with self._wake:
            self._wake.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()
