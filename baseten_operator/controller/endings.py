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

`ModelGone` is not an ending a step chooses: it is how a 404 on a call made with the cached
model ID reaches the reconciler, which then invalidates the ID (section 3.15).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.runtime.controller import ReportedError, Result


class PassEnded(Exception, ABC):
    """The pass is done (not an error); `result` says when the object is looked at again."""

    @abstractmethod
    def result(self) -> Result: ...


class RequeueAfter(PassEnded):
    """Done for now: look at the object again after `seconds` (> 0)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds

    def result(self) -> Result:
        return Result(requeue_after=self.seconds)


class AwaitChange(PassEnded):
    """Done: the object is not requeued; a change to it, or to what is watched for it,
    brings it back."""

    def result(self) -> Result:
        return Result()


class ReconcileError(ReportedError):
    """Ends the pass with an error its status already says: requeued rate-limited."""


class ModelGone(Exception):
    """A call on the cached model ID answered 404: the model must be resolved again."""


def raise_if_model_gone(error: BasetenAPIError) -> None:
    """Section 3.15: a 404 on a call that used the model ID means the model is gone."""
    if error.is_not_found:
        raise ModelGone() from error
