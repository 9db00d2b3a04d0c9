"""Run the next Reconcile pass of each BasetenModel in the recording world; collect its plan.

The pass is the operator's own (`BasetenModelReconciler`): every decision a plan shows
is the one the pass makes, from the same code. Only its writes are intercepted.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from baseten_operator.api.base import to_wire
from baseten_operator.api.constants import (
    BUILD_STOPPED,
    CONFLICT,
    DELETE_BLOCKED,
    DELETE_FAILED,
    FAILED,
    FINALIZER,
    TRUSS_PUSHING,
    DeletionPolicy,
    EventReason,
    Mode,
)
from baseten_operator.api.types import BasetenModelSpec
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.pool import BasetenClientPool, MakeClient
from baseten_operator.baseten.settings import detect_drift
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.admission import with_namespace_client
from baseten_operator.controller.basetenmodel.context import Dependencies, Pass
from baseten_operator.controller.basetenmodel.model_id import resolve_model_id
from baseten_operator.controller.basetenmodel.orphans import OrphanVerdict, review_model_orphans
from baseten_operator.controller.basetenmodel.ownership import claim_index
from baseten_operator.controller.basetenmodel.reconciler import BasetenModelReconciler
from baseten_operator.controller.basetenmodel.setup import model_name_index
from baseten_operator.controller.basetenmodel.status import StatusWriter, parse_status
from baseten_operator.controller.shared.endings import PassEnded, ReconcileError
from baseten_operator.controller.shared.finalizers import has_finalizer
from baseten_operator.controller.shared.ports import PrometheusAPI, SecretSource
from baseten_operator.controller.shared.specs import parse_spec
from baseten_operator.controller.shared.tenancy import Tenancy
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.plan.actions import Action, DeleteModel, UpdateEnvironment
from baseten_operator.plan.inputs import ConfigMaps
from baseten_operator.plan.tenancy import TenancyView
from baseten_operator.plan.world import (
    MemoryKube,
    RecordedEvent,
    RecordedEvents,
    RecordingBaseten,
    RecordingPusher,
    WriteRefused,
    changes_of,
    unplanned,
)
from baseten_operator.runtime.clock import Clock, parse_rfc3339, rfc3339
from baseten_operator.runtime.controller import Request, TerminalError

log = structlog.get_logger(__name__)

# Final statuses that say the operator cannot go on until something changes (a stopped
# build: until someone restarts it; a namespace policy violation and a missing API key
# Secret are FAILED; an environment another CR owns is CONFLICT).
_BLOCKED_STATUSES = frozenset({FAILED, DELETE_BLOCKED, DELETE_FAILED, BUILD_STOPPED, CONFLICT})
_BLOCKING_EVENTS = frozenset({str(EventReason.PROMOTION_BLOCKED)})
_NO_WRITES = {
    Mode.OBSERVE: "Observe mode: the operator reads Baseten and reports, it never writes",
    Mode.PAUSE: "Pause mode: reconciliation is paused, the operator calls nothing",
}


@dataclass
class ModelPlan:
    """What the next pass of one BasetenModel would do."""

    namespace: str
    name: str
    model: str
    environment: str
    mode: str
    actions: list[Action] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    orphans: list[OrphanVerdict] = field(default_factory=list)
    events: list[RecordedEvent] = field(default_factory=list)
    # What the pass would leave in the CR's status.
    status: dict[str, Any] = field(
        default_factory=lambda: {"deploymentStatus": None, "message": None}
    )
    source: dict[str, Any] | None = None
    # Section 14: the analysis of the CR's candidate as the pass leaves it.
    analysis: dict[str, Any] | None = None
    error: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


class _World:
    """The BasetenModel informer a plan's passes read: the planned CRs laid over every
    live one (what the operator's cache would hold once the input is applied)."""

    def __init__(self, planned: list[dict[str, Any]], live: list[dict[str, Any]]) -> None:
        self._objects = {_key(o): o for o in live}
        self._objects.update({_key(o): o for o in planned})

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self._objects.get((namespace or "", name))

    # The operator's two indexes (controller/basetenmodel/setup.py), over every object.

    def siblings(self, model_name: str) -> list[dict[str, Any]]:
        return [o for o in self._objects.values() if model_name in model_name_index(o)]

    def claimants(self, claim: str) -> list[dict[str, Any]]:
        return [o for o in self._objects.values() if claim in claim_index(o)]


@dataclass
class Planner:
    """`baseten` is the operator key's recording client; `namespace_client` builds the
    (read-only) client of a namespace's own key, which the planner records the same way."""

    baseten: RecordingBaseten
    configmaps: ConfigMaps
    clock: Clock
    timing: Timing = field(default_factory=Timing)
    rng: Callable[[], float] = random.random
    tenancy: TenancyView = field(default_factory=TenancyView.unknown)
    namespace_client: MakeClient | None = None
    # Section 14's Prometheus checks, read-only: the Secrets of their tokens (with the
    # cluster) and Prometheus itself.
    secrets: SecretSource | None = None
    prometheus: PrometheusAPI | None = None
    _rules: Tenancy | None = field(default=None, init=False, repr=False)

    def plan(self, objects: list[dict[str, Any]], *, destroy: bool = False) -> list[ModelPlan]:
        """One plan per object, in order. `destroy`: plan their deletion instead."""
        prepared = [self._prepare(copy.deepcopy(obj), destroy) for obj in objects]
        world = _World(prepared, self.tenancy.live_models)
        running = {
            str(status.get("sourceDeploymentName"))
            for obj in prepared
            for status in [obj.get("status") or {}]
            if status.get("trussPushStatus") == TRUSS_PUSHING
        }
        return [self._plan_one(obj, world, running) for obj in prepared]

    def rules(self) -> Tenancy:
        """The run's tenancy rules over what the plan knows, for both kinds' passes; every
        client they hand a pass (a namespace's key, a team's view of it) records into the
        plan's one ledger."""
        if self._rules is None:
            view = self.tenancy
            self._rules = Tenancy(
                namespaces=view.namespaces,
                secrets=view.secrets,
                pool=BasetenClientPool(self.baseten, self._recording_client),
                operator_namespace=view.operator_namespace,
                require_policy=view.require_policy,
            )
        return self._rules

    def _recording_client(self, api_key: str) -> RecordingBaseten:
        if self.namespace_client is None:
            raise AssertionError("a namespace names an API key Secret the plan cannot read")
        return RecordingBaseten(self.namespace_client(api_key), self.baseten.ledger)

    def _prepare(self, obj: dict[str, Any], destroy: bool) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        meta.setdefault("resourceVersion", "0")
        # A CR not created yet will be the youngest claimant of its environment.
        meta.setdefault("creationTimestamp", rfc3339(self.clock))
        spec, _ = parse_spec(BasetenModelSpec, obj)
        if destroy:
            meta["deletionTimestamp"] = rfc3339(self.clock)
        deleting = bool(meta.get("deletionTimestamp"))
        if (
            spec is not None
            and not has_finalizer(obj)
            and (destroy or (not deleting and spec.effective_mode != Mode.PAUSE))
        ):
            # The next real pass only adds the finalizer; the plan shows the pass after it.
            meta["finalizers"] = [*(meta.get("finalizers") or []), FINALIZER]
        return obj

    def _deps(
        self,
        kube: MemoryKube,
        events: RecordedEvents,
        world: _World,
        running: set[str],
    ) -> Dependencies:
        return Dependencies(
            kube=kube,
            baseten=self.baseten,
            recorder=events,
            clock=self.clock,
            timing=self.timing,
            models=world,
            configmaps=self.configmaps,
            siblings=world.siblings,
            claimants=world.claimants,
            pusher=RecordingPusher(self.baseten.ledger, running),
            random=self.rng,
            tenancy=self.rules(),
            secrets=self.secrets,
            prometheus=self.prometheus,
        )

    def _plan_one(self, obj: dict[str, Any], world: _World, running: set[str]) -> ModelPlan:
        meta = obj["metadata"]
        raw_spec = obj.get("spec") or {}
        spec, _ = parse_spec(BasetenModelSpec, obj)
        result = ModelPlan(
            namespace=meta["namespace"],
            name=meta["name"],
            model=str(raw_spec.get("modelName") or ""),
            environment=str((raw_spec.get("environment") or {}).get("name") or ""),
            mode=str(spec.effective_mode) if spec else str(raw_spec.get("mode") or ""),
        )
        kube = MemoryKube()
        events = RecordedEvents()
        deps = self._deps(kube, events, world, running)
        recording = self.baseten.ledger.start_pass()
        if spec is not None and meta.get("deletionTimestamp"):
            self._resolve_for_deletion(obj, spec, deps)
        kube.put(obj)
        try:
            BasetenModelReconciler(deps).reconcile(Request(result.namespace, result.name))
        except (ReconcileError, TerminalError) as ended:
            result.blockers.append(str(ended))
        except WriteRefused as refused:
            result.error = unplanned(recording, refused)
        except BasetenAPIError as error:
            result.error = f"Baseten: {error}"
        result.error = result.error or unplanned(recording)
        stored = kube.stored(result.namespace, result.name) or obj
        status = parse_status(stored.get("status"))
        result.actions = [self._complete(a, spec, status.model_id) for a in recording.actions]
        result.events = events.events
        result.status = {
            "deploymentStatus": status.deployment_status,
            "message": status.message,
        }
        analysis = status.promotion.analysis if status.promotion is not None else None
        if analysis is not None:
            result.analysis = {
                "phase": analysis.phase,
                "checks": analysis.checks,
                "consecutiveFailures": analysis.consecutive_failures,
                "nextCheckTime": analysis.next_check_time,
                "results": [
                    {"name": r.name, "verdict": r.verdict, "message": r.message}
                    for r in analysis.results or []
                ],
            }
        self._explain(result, obj, stored, spec, deps)
        return result

    def _resolve_for_deletion(
        self, obj: dict[str, Any], spec: BasetenModelSpec, deps: Dependencies
    ) -> None:
        """A manifest planned for deletion may never have been reconciled: its model ID is
        what the pass before would have resolved (the real lookup, with its namespace's
        client, into a throwaway status)."""
        if parse_status(obj.get("status")).model_id:
            return
        namespace = obj["metadata"]["namespace"]
        if deps.tenancy is not None and not deps.tenancy.knows_namespace(namespace):
            return  # the pass waits for the Namespace, which the plan shows
        writer = StatusWriter(MemoryKube(), obj, self.clock)
        try:
            model_id = resolve_model_id(with_namespace_client(Pass(deps, obj, spec, writer)))
        except (ReconcileError, PassEnded):
            return  # not found: the deletion pass retains nothing, which the plan shows
        if model_id:
            obj["status"] = to_wire(writer.status)

    def _complete(
        self, action: Action, spec: BasetenModelSpec | None, model_id: str | None
    ) -> Action:
        """Fill in what only the pass's context knows: a diff's old side, a deletion's policy."""
        if isinstance(action, UpdateEnvironment) and spec is not None and model_id:
            environment = self.baseten.ledger.environment_seen(model_id, action.environment)
            if environment is not None:
                drift = detect_drift(to_wire(spec.environment), environment, self.clock.now())
                changes, schedules = changes_of(drift)
                return dataclasses.replace(action, changes=changes, schedules=schedules)
        if isinstance(action, DeleteModel) and spec is not None:
            guarded = spec.deletion_policy == DeletionPolicy.DELETE_WITH_GUARDRAILS
            return dataclasses.replace(
                action,
                model=spec.model_name,
                deletion_policy=str(spec.deletion_policy),
                guardrails="clear" if guarded else "not checked",
            )
        return action

    def _explain(
        self,
        result: ModelPlan,
        before: dict[str, Any],
        after: dict[str, Any],
        spec: BasetenModelSpec | None,
        deps: Dependencies,
    ) -> None:
        status = parse_status(after.get("status"))
        if deps.tenancy is not None and not deps.tenancy.knows_namespace(result.namespace):
            result.notes.append(namespace_unknown(result.namespace))
            return  # the pass did nothing else: it waits
        if spec is not None and spec.effective_mode in _NO_WRITES:
            result.notes.append(_NO_WRITES[spec.effective_mode])
        # A failed deployment's retry (section 4) or a failed push's (section 5) not due yet.
        now = self.clock.now()
        pending = [
            at
            for at in (status.next_retry_time, status.truss_push_next_retry_time)
            if (parsed := parse_rfc3339(at)) is not None and parsed > now
        ]
        message = status.message or ""
        if pending and not result.actions:
            result.notes.append(f"waiting: next retry at {pending[0]}")
        elif messages.WAITING_FOR_SECRETS in message and not result.actions:
            # The push waits for secrets Baseten does not have (section 5).
            result.notes.append(message[message.index(messages.WAITING_FOR_SECRETS) :])
        elif (
            status.deployment_status in _BLOCKED_STATUSES
            and not result.actions
            and status.message
            and status.message not in result.blockers
        ):
            result.blockers.append(status.message)
        for event in result.events:
            if event.reason in _BLOCKING_EVENTS and event.message not in result.blockers:
                result.blockers.append(event.message)
        deleting = spec is not None and before.get("metadata", {}).get("deletionTimestamp")
        deletes = any(isinstance(a, DeleteModel) for a in result.actions)
        if deleting and not deletes and not result.blockers:
            result.notes.append(
                "deletion retains the Baseten model (deletionPolicy, mode, namespace policy, "
                "or never resolved)"
            )
        if spec is not None and status.truss_push_status == TRUSS_PUSHING and not result.actions:
            result.notes.append(f"a push of {status.source_deployment_name} is in progress")
        if status.source_deployment_name:
            found = self.baseten.ledger.recording.found.get(status.source_deployment_name)
            result.source = {"deployment": status.source_deployment_name, "exists": found}
        self._orphans(result, before, after, spec, deps)

    def _orphans(
        self,
        result: ModelPlan,
        before: dict[str, Any],
        after: dict[str, Any],
        spec: BasetenModelSpec | None,
        deps: Dependencies,
    ) -> None:
        """The cleanup's verdicts on every orphan, when the pass ran the cleanup."""
        status = parse_status(after.get("status"))
        ran = status.last_cleanup_time != parse_status(before.get("status")).last_cleanup_time
        if spec is None or not ran or not status.model_id or not status.source_deployment_name:
            return
        p = Pass(deps, after, spec, StatusWriter(MemoryKube(), after, self.clock))
        try:
            p = with_namespace_client(p)  # the namespace's client, as the pass that ran the cleanup
        except PassEnded:
            return
        review = review_model_orphans(p, status.model_id, status.source_deployment_name)
        if review is not None:
            result.orphans = review.verdicts


def namespace_unknown(namespace: str, kind: str = "BasetenModels") -> str:
    return (
        f"waiting: namespace {namespace} not found, so its policy is unknown: the operator "
        f"makes no Baseten call for its {kind} until it exists"
    )
