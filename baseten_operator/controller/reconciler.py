"""One pass of Reconcile(key) (docs/contract.md section 3) and the dispatch to each mode.

Every step either ends the pass or falls through. Steps end a pass by raising one of
endings.py's: `RequeueAfter` (done, look again after a delay), `AwaitChange` (done, until
something changes), `ReconcileError` (rate-limited retry) or `TerminalError` (failed until
the spec changes). Whatever the ending, the status the pass built is written once, at the
end, and only if it changed.
"""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

import structlog
from pydantic import BaseModel, ValidationError

from baseten_operator.api.constants import FAILED, PAUSED, EventReason, Mode
from baseten_operator.api.types import BasetenModelSpec
from baseten_operator.baseten.errors import RateLimited
from baseten_operator.controller import messages
from baseten_operator.controller.admission import admit, admit_deletion
from baseten_operator.controller.cancellation import cancel_unwanted_promotion
from baseten_operator.controller.context import Dependencies, Pass
from baseten_operator.controller.deletion import (
    finalize,
    has_finalizer,
    retains_model,
    set_finalizer,
)
from baseten_operator.controller.endings import (
    AwaitChange,
    ModelGone,
    PassEnded,
    ReconcileError,
    RequeueAfter,
)
from baseten_operator.controller.environment import (
    correct_drift,
    ensure_environment,
    steady_message,
)
from baseten_operator.controller.model_id import invalidate_model_id, resolve_model_id
from baseten_operator.controller.observe import observe
from baseten_operator.controller.promotion import promote_source
from baseten_operator.controller.status import StaleRead, StatusWriter, report
from baseten_operator.controller.telemetry import forget_model, record_model
from baseten_operator.controller.truss_source import resolve_truss_source
from baseten_operator.runtime.controller import Request, Result, TerminalError

log = structlog.get_logger(__name__)

SpecT = TypeVar("SpecT", bound=BaseModel)


def parse_spec(obj: dict[str, Any]) -> tuple[BasetenModelSpec | None, list[str]]:
    """The spec, or the problems that make it invalid, each naming its field."""
    return parse_spec_as(BasetenModelSpec, obj)


def parse_spec_as(kind: type[SpecT], obj: dict[str, Any]) -> tuple[SpecT | None, list[str]]:
    """A kind's spec, or the problems that make it invalid, each naming its field."""
    try:
        return kind.model_validate(obj.get("spec") or {}), []
    except ValidationError as error:
        problems = []
        for detail in error.errors():
            field = ".".join(["spec", *(str(part) for part in detail["loc"])])
            problems.append(f"{field}: {detail['msg'].removeprefix('Value error, ')}")
        return None, problems


class BasetenModelReconciler:
    def __init__(self, deps: Dependencies) -> None:
        self._deps = deps

    def reconcile(self, request: Request) -> Result:
        cached = self._deps.models.get(request.namespace, request.name)
        if cached is None:  # step 1
            forget_model(request.namespace, request.name)
            return Result()
        # The cache's dict is shared with every reader: a pass only reads it (StatusWriter
        # copies it before putting a new status in), so there is no per-pass deep copy.
        obj = cached
        writer = StatusWriter(self._deps.kube, obj, self._deps.clock)
        spec, problems = parse_spec(obj)
        if obj["metadata"].get("deletionTimestamp"):  # step 2
            return self._delete(obj, spec, writer)
        if spec is None:
            # The API server's schema should have refused it; never act on what it means.
            message = messages.invalid_spec(problems)
            report(writer.status, FAILED, message)
            writer.write_outcome(stalled=True)
            raise TerminalError(message)

        if spec.effective_mode != Mode.PAUSE and not has_finalizer(obj):
            # Step 4 (after step 3's pause): the update brings the object back; nothing else.
            set_finalizer(self._deps.kube, obj, present=True)
            return Result()

        p = Pass(self._deps, obj, spec, writer)
        try:
            self._run(p)
        except PassEnded as ending:
            writer.write_outcome(stalled=ending.stalled)
            result = ending.result()
        except ReconcileError as error:
            writer.write_outcome(stalled=error.stalled)
            raise
        except TerminalError:
            writer.write_outcome(stalled=True)
            raise
        except (RateLimited, StaleRead) as interrupted:
            result = interrupted_result(interrupted)
        finally:
            record_model(request.namespace, request.name, spec.model_name, p.env, writer.status)
        return result

    def _run(self, p: Pass) -> NoReturn:
        p = admit(p)  # namespace policy and ownership, before any Baseten call
        if p.spec.effective_mode == Mode.PAUSE:  # step 3
            _pause(p)
        if p.spec.effective_mode == Mode.OBSERVE:  # step 5
            observe(p)
        try:
            _reconcile(p)
        except ModelGone:  # step 15
            invalidate_model_id(p)

    def _delete(
        self, obj: dict[str, Any], spec: BasetenModelSpec | None, writer: StatusWriter
    ) -> Result:
        if not has_finalizer(obj):
            return Result()
        meta = obj["metadata"]
        if spec is None or retains_model(spec, writer.status.model_id):
            set_finalizer(self._deps.kube, obj, present=False)
        else:
            try:
                p = admit_deletion(Pass(self._deps, obj, spec, writer))
                if p is None:  # refused by its namespace's policy: never touch Baseten
                    set_finalizer(self._deps.kube, obj, present=False)
                else:
                    finalize(p)
            except PassEnded as blocked:
                writer.write_outcome(stalled=blocked.stalled)
                return blocked.result()
            except (RateLimited, StaleRead) as interrupted:
                return interrupted_result(interrupted)
        forget_model(meta.get("namespace") or "", meta["name"])
        return Result()


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


def _pause(p: Pass) -> NoReturn:
    entering = p.status.deployment_status != PAUSED
    p.report(PAUSED, messages.paused(p.status.message))
    if entering:
        p.event(EventReason.RECONCILIATION_PAUSED, messages.paused_event(p.spec.model_name))
    raise AwaitChange()  # no Baseten call: the next spec change wakes it


def _reconcile(p: Pass) -> NoReturn:
    resolve_model_id(p)  # step 6: into status.modelID, which every later step reads
    if p.spec.truss_config is not None:  # step 7
        source = resolve_truss_source(p)
    else:
        assert p.spec.source_deployment_name is not None
        source = p.spec.source_deployment_name
        p.track_source(source)
    model_id = p.status.model_id
    if not model_id:
        raise RequeueAfter(p.deps.timing.push_poll)  # the push in flight creates the model
    environment = ensure_environment(p, model_id)  # step 8
    p.record_environment(environment)
    # Before anything else: a rollout the spec no longer wants is stopped before it can
    # reach full traffic (a settings PATCH would end this pass first).
    environment = cancel_unwanted_promotion(p, model_id, source, environment)
    correct_drift(p, model_id, environment, steady_message(p, environment))
    promote_source(p, model_id, source, environment)  # steps 9 to 14
