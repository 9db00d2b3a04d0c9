"""What one pass works with: its dependencies, the object, and how a pass ends."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from baseten_operator.api.constants import EventReason, event_type
from baseten_operator.api.types import BasetenModelSpec, BasetenModelStatus
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.controller.ports import ObjectCache, Recorder, SiblingLookup
from baseten_operator.controller.status import StatusWriter
from baseten_operator.controller.timing import Timing
from baseten_operator.runtime.clock import Clock
from baseten_operator.runtime.controller import ReportedError

if TYPE_CHECKING:
    from baseten_operator.controller.tenancy import Tenancy


class Requeue(Exception):
    """Ends the pass normally; the object comes back after `after` seconds (None: on change)."""

    def __init__(self, after: float | None = None) -> None:
        super().__init__(after)
        self.after = after


class ReconcileError(ReportedError):
    """Ends the pass with an error its status already says: requeued rate-limited."""


class ModelGone(Exception):
    """A call on the cached model ID answered 404: the model must be resolved again."""


def raise_if_model_gone(error: BasetenAPIError) -> None:
    """Section 3.15: a 404 on a call that used the model ID means the model is gone."""
    if error.is_not_found:
        raise ModelGone() from error


@dataclass
class Dependencies:
    """Everything a pass talks to, injected (tests pass fakes)."""

    kube: Any  # KubeClient: status and finalizer writes
    baseten: Any  # BasetenClient
    recorder: Recorder
    clock: Clock
    timing: Timing
    models: ObjectCache  # the BasetenModel informer
    configmaps: ObjectCache  # the ConfigMap informer (setup scripts)
    siblings: SiblingLookup
    pusher: Any = None  # TrussPusher; None when pushes are not possible
    # U[0, 1) for retry jitter; injectable so tests pin the backoff.
    random: Callable[[], float] = field(default=random.random)
    # Namespace policy, ownership and per-namespace keys; None: one tenant (no rules).
    tenancy: Tenancy | None = None


@dataclass
class Pass:
    """One object during one pass."""

    deps: Dependencies
    obj: dict[str, Any]
    spec: BasetenModelSpec
    writer: StatusWriter

    @property
    def status(self) -> BasetenModelStatus:
        return self.writer.status

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def env(self) -> str:
        return self.spec.environment.name

    def event(self, reason: EventReason, message: str) -> None:
        self.deps.recorder.event(self.writer.obj, event_type(reason), str(reason), message)

    def set(self, deployment_status: str, message: str) -> None:
        self.writer.set(deployment_status, message)

    def enter(self, deployment_status: str, message: str, reason: EventReason) -> None:
        """Set a state that holds the CR up, with its Event (the same text) when entering the
        state or when the reason it holds (the message) changes: never again on every pass."""
        changed = (
            self.status.deployment_status != deployment_status or self.status.message != message
        )
        self.set(deployment_status, message)
        if changed:
            self.event(reason, message)
