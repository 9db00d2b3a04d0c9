"""One pass of Reconcile(key) (docs/contract.md section 3) and the dispatch to each mode.

Every step either ends the pass or falls through. Steps end a pass by raising one of
endings.py's: `RequeueAfter` (done, look again after a delay), `AwaitChange` (done, until
something changes), `ReconcileError` (rate-limited retry) or `TerminalError` (failed until
the spec changes). Whatever the ending, the status the pass built is written once, at the
end, and only if it changed.
"""

from __future__ import annotations

from typing import Any, NoReturn

from baseten_operator.api.constants import FAILED, PAUSED, EventReason, Mode
from baseten_operator.api.types import BasetenModelSpec
from baseten_operator.baseten.errors import RateLimited
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.admission import admit, admit_deletion
from baseten_operator.controller.basetenmodel.cancellation import (
    cancel_before_the_source,
    cancel_unwanted_promotion,
)
from baseten_operator.controller.basetenmodel.context import Dependencies, Pass
from baseten_operator.controller.basetenmodel.deletion import finalize, retains_model, set_finalizer
from baseten_operator.controller.basetenmodel.environment import (
    correct_drift,
    ensure_environment,
    steady_message,
)
from baseten_operator.controller.basetenmodel.model_id import (
    ModelGone,
    invalidate_model_id,
    resolve_model_id,
)
from baseten_operator.controller.basetenmodel.observe import observe
from baseten_operator.controller.basetenmodel.promotion import promote_source
from baseten_operator.controller.basetenmodel.status import StatusWriter
from baseten_operator.controller.basetenmodel.telemetry import forget_model, record_model
from baseten_operator.controller.basetenmodel.truss_source import resolve_truss_source
from baseten_operator.controller.shared.endings import (
    AwaitChange,
    PassEnded,
    ReconcileError,
    RequeueAfter,
    interrupted_result,
)
from baseten_operator.controller.shared.finalizers import has_finalizer
from baseten_operator.controller.shared.messages import invalid_spec
from baseten_operator.controller.shared.specs import parse_spec
from baseten_operator.controller.shared.status import StaleRead
from baseten_operator.runtime.controller import Request, Result, TerminalError


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
        spec, problems = parse_spec(BasetenModelSpec, obj)
        if obj["metadata"].get("deletionTimestamp"):  # step 2
            return self._delete(obj, spec, writer)
        if spec is None:
            # The API server's schema should have refused it; never act on what it means.
            message = invalid_spec(problems)
            writer.report(FAILED, message)
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


def _pause(p: Pass) -> NoReturn:
    entering = p.status.deployment_status != PAUSED
    p.report(PAUSED, messages.paused(p.status.message))
    if entering:
        p.event(EventReason.RECONCILIATION_PAUSED, messages.paused_event(p.spec.model_name))
    raise AwaitChange()  # no Baseten call: the next spec change wakes it


def _reconcile(p: Pass) -> NoReturn:
    resolve_model_id(p)  # step 6: into status.modelID, which every later step reads
    # Before anything else: a rollout the spec no longer wants is stopped before it can
    # reach full traffic, even while the new source waits to be pushed (step 8's last part).
    environment = cancel_before_the_source(p)
    if p.spec.truss_config is not None:  # step 7
        source = resolve_truss_source(p)
    else:
        assert p.spec.source_deployment_name is not None
        source = p.spec.source_deployment_name
        p.track_source(source)
    model_id = p.status.model_id
    if not model_id:
        raise RequeueAfter(p.deps.timing.push_poll)  # the push in flight creates the model
    if environment is None:
        environment = ensure_environment(p, model_id)  # step 8
        p.record_environment(environment)
    # A settings PATCH would end this pass first: the cancel comes before it.
    environment = cancel_unwanted_promotion(p, model_id, source, environment)
    correct_drift(p, model_id, environment, steady_message(p, environment))
    promote_source(p, model_id, source, environment)  # steps 9 to 14
