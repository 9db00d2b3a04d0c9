"""How a pass ends (docs/contract.md, "ends the pass"), named for what happens next, in the
spirit of kube-rs's `Action::requeue(d)` and `Action::await_change()`.

A step ends the pass by raising; the reconciler then writes the status the pass built and
hands the runtime a `Result` (or lets an error through):

- `RequeueAfter(seconds)`: done for now, look again after `seconds`.
- `AwaitChange()`: done, nothing to do until the object, or something watched on its behalf
  (its Namespace's policy, an API key Secret, another CR's claim), changes.
- `ReconcileError(message)`: failed, the status says why; requeued with the rate limiter's
  per-object backoff.
- `runtime.controller.TerminalError(message)`: failed until the spec changes; not requeued.

An ending that is `stalled` says the object cannot go on without a change (kstatus's
`Stalled` condition, docs/contract.md section 2): an AwaitChange and a TerminalError always
are.

`interrupted_result` ends a pass cut short (throttled by Baseten, or acting on a stale
read) without writing more of it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import structlog

from baseten_operator.baseten.errors import RateLimited
from baseten_operator.controller.shared.status import StaleRead
from baseten_operator.runtime.controller import ReportedError, Result

log = structlog.get_logger(__name__)


class PassEnded(Exception, ABC):
    """The pass is done (not an error); `result` says when the object is looked at again."""

    # Nothing will move on without a change (a person's, or to what is watched): Stalled.
    stalled: bool = False

    @abstractmethod
    def result(self) -> Result: ...


class RequeueAfter(PassEnded):
    """Done for now: look at the object again after `seconds` (> 0)."""

    def __init__(self, seconds: float, *, stalled: bool = False) -> None:
        super().__init__(seconds)
        self.seconds = seconds
        # Stalled yet looked at again: a change made outside Kubernetes (a build restarted
        # in the Baseten UI, a duplicate model deleted) is only seen by looking.
        self.stalled = stalled

    def result(self) -> Result:
        return Result(requeue_after=self.seconds)


class AwaitChange(PassEnded):
    """Done: the object is not requeued; a change to it, or to what is watched for it,
    brings it back. Stalled, a pause included: kstatus could only call a paused object
    (Ready False) InProgress, which Flux would wait on until its timeout."""

    stalled = True

    def result(self) -> Result:
        return Result()


class ReconcileError(ReportedError):
    """Ends the pass with an error its status already says: requeued rate-limited.
    `stalled` when only a change elsewhere (a model created in Baseten) can end it."""

    def __init__(self, message: str, *, stalled: bool = False) -> None:
        super().__init__(message)
        self.stalled = stalled


# The shortest wait after a rate limit: a retry-after of 0 must still come back.
_MIN_RATE_LIMIT_WAIT = 0.05


def interrupted_result(interruption: RateLimited | StaleRead) -> Result:
    """End a pass cut short without writing more of it.

    Throttled (RateLimited) is not failed: the pass comes back when Baseten said it
    may. A stale read (StaleRead) comes back rate-limited, once the cache has caught up.
    Intents it already wrote stay on record.
    """
    log.info("pass interrupted, coming back later", reason=str(interruption))
    if isinstance(interruption, RateLimited):
        return Result(requeue_after=max(interruption.retry_after, _MIN_RATE_LIMIT_WAIT))
    return Result(requeue=True)
