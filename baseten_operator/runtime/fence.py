"""The write fence: one guard that every mutating call of a replica passes through.

A replica may write (to Kubernetes, to an external API, by launching a child process)
only while it can prove that it leads. The proof comes from the leader elector: a
renewal of the Lease that succeeded less than the renew deadline ago, and no other
holder seen since. A replica that cannot prove it does not write: the call raises
`NotLeader` before anything is sent, the pass ends, and the key is not requeued on
this replica (the new leader owns it now).

The fence also owns every wait that a write path makes (a backoff, a server's
Retry-After): `sleep` returns early, raising `NotLeader`, the moment the fence closes
or waits are interrupted, so losing the Lease or shutting down never waits out a sleep
inside a worker. A clean shutdown interrupts waits at once but refuses writes only
after the drain, just before the Lease is released: passes finishing meanwhile still
hold the Lease and may record what they did.

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
        self._interrupted = threading.Event()
        self._interrupted_reason = ""
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
        """Wait `seconds` on the clock; raise NotLeader at once if waits are interrupted."""
        sleep_unless(self._clock, self._wake, self._interrupted, seconds)
        if self._interrupted.is_set():
            raise NotLeader(action, self._interrupted_reason)

    def interrupt_waits(self, reason: str) -> None:
        """Wake every sleeper and refuse later waits; writes still pass (a shutdown's drain)."""
        if self._interrupted.is_set():
            return
        self._interrupted_reason = reason
        self._interrupted.set()
        with self._wake:
            self._wake.notify_all()

    def close(self, reason: str) -> None:
        """Refuse every later write and interrupt every wait (leadership lost or given up)."""
        if not self._closed.is_set():
            self._closed_reason = reason
            self._closed.set()
        self.interrupt_waits(reason)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()
