"""Run the next Reconcile pass of each BasetenSecret in the recording world (docs/plan.md).

The pass is the operator's own (`BasetenSecretReconciler`), as for BasetenModels: its
Baseten writes are recorded by name (plan/world.py: never a value), its status and Events
land in memory. The value is read from the Secret only to tell whether it changed (the
pass's fingerprint); it goes no further than the recording client, which drops it.

What a plan cannot read it says, rather than guessing: a Secret the plan's own user may
not read (the operator's rights are not the plan's), or, from files only, one the input
does not hold.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from baseten_operator.api.constants import FINALIZER, Mode
from baseten_operator.api.secret_types import BasetenSecretSpec
from baseten_operator.controller.basetensecret.context import OperatorIdentity, SecretDependencies
from baseten_operator.controller.basetensecret.fingerprint import fingerprint_key
from baseten_operator.controller.basetensecret.ownership import secret_claim_index
from baseten_operator.controller.basetensecret.reconciler import BasetenSecretReconciler
from baseten_operator.controller.basetensecret.setup import model_secrets_index
from baseten_operator.controller.basetensecret.status import parse_secret_status
from baseten_operator.controller.basetensecret.telemetry import LastSyncAges
from baseten_operator.controller.shared.endings import ReconcileError
from baseten_operator.controller.shared.finalizers import has_finalizer
from baseten_operator.controller.shared.specs import parse_spec
from baseten_operator.controller.shared.tenancy import Tenancy
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.plan.actions import Action
from baseten_operator.plan.planner import namespace_unknown
from baseten_operator.plan.world import (
    MemoryKube,
    RecordedEvent,
    RecordedEvents,
    RecordingBaseten,
    WriteRefused,
    unplanned,
)
from baseten_operator.runtime.clock import Clock, rfc3339
from baseten_operator.runtime.controller import Request, TerminalError
from baseten_operator.runtime.errors import Forbidden, NotFound
from baseten_operator.runtime.resource import SECRETS

_NO_WRITES = {
    Mode.OBSERVE: "Observe mode: the operator reads the Secret and Baseten, it never writes",
    Mode.PAUSE: "Pause mode: the operator reads no Secret and calls nothing",
}


class SecretUnread(Exception):
    """The plan could not read a referenced Secret: the pass stops, the plan says why."""


@dataclass
class SecretPlan:
    """What the next pass of one BasetenSecret would do."""

    namespace: str
    name: str
    secret: str  # the Baseten secret's name
    team: str | None
    mode: str
    actions: list[Action] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    events: list[RecordedEvent] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=lambda: {"state": None, "message": None})
    error: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class PlanSecrets:
    """The referenced Secrets as a plan reads them: the input's, else the cluster's (`get`
    by name). One the plan may not read, or cannot (files only), ends the pass."""

    def __init__(self, given: list[dict[str, Any]], kube: Any = None) -> None:
        self._given = {
            (o["metadata"].get("namespace") or "", o["metadata"]["name"]): o for o in given
        }
        self._kube = kube

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        if (namespace, name) in self._given:
            return self._given[(namespace, name)]
        if self._kube is None:
            raise SecretUnread(
                f"Secret {namespace}/{name} not read: without --cluster only the input's "
                "Secrets are, so whether its value changed is unknown"
            )
        try:
            found: dict[str, Any] | None = self._kube.get(SECRETS, name, namespace)
        except NotFound:
            return None
        except Forbidden as refused:
            raise SecretUnread(
                f"Secret {namespace}/{name} not read: the plan's user may not get it "
                f"({refused.message}), so whether its value changed is unknown"
            ) from None
        return found


@dataclass
class SecretPlanner:
    """`rules` are the planner's tenancy rules (its one recording ledger); `secrets` reads
    the referenced Secrets; `api_key` keys the fingerprint as the operator's does."""

    baseten: RecordingBaseten
    rules: Tenancy
    secrets: PlanSecrets
    clock: Clock
    api_key: str
    identity: OperatorIdentity
    timing: Timing = field(default_factory=Timing)

    def plan(
        self,
        objects: list[dict[str, Any]],
        *,
        live: list[dict[str, Any]],
        models: list[dict[str, Any]],
        destroy: bool = False,
    ) -> list[SecretPlan]:
        """One plan per BasetenSecret, in order; `live`: every live BasetenSecret (they
        claim names), `models`: every BasetenModel the plan knows (they block deletes)."""
        prepared = [self._prepare(copy.deepcopy(obj), destroy) for obj in objects]
        every = {_key(o): o for o in live}
        every.update({_key(o): o for o in prepared})
        return [self._plan_one(obj, every, models) for obj in prepared]

    def _prepare(self, obj: dict[str, Any], destroy: bool) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        meta.setdefault("resourceVersion", "0")
        meta.setdefault("generation", 1)
        # Not created yet: the youngest claimant of its name.
        meta.setdefault("creationTimestamp", rfc3339(self.clock))
        if destroy:
            meta["deletionTimestamp"] = rfc3339(self.clock)
        spec, _ = parse_spec(BasetenSecretSpec, obj)
        if spec is not None and spec.mode == Mode.RECONCILE and not has_finalizer(obj):
            # The next real pass only adds the finalizer; the plan shows the pass after it.
            meta["finalizers"] = [*(meta.get("finalizers") or []), FINALIZER]
        return obj

    def _plan_one(
        self,
        obj: dict[str, Any],
        every: dict[tuple[str, str], dict[str, Any]],
        models: list[dict[str, Any]],
    ) -> SecretPlan:
        meta = obj["metadata"]
        raw_spec = obj.get("spec") or {}
        spec, _ = parse_spec(BasetenSecretSpec, obj)
        result = SecretPlan(
            namespace=meta["namespace"],
            name=meta["name"],
            secret=str(raw_spec.get("name") or ""),
            team=raw_spec.get("team"),
            mode=str(spec.mode) if spec else str(raw_spec.get("mode") or ""),
        )
        kube = MemoryKube()
        kube.put(obj)
        events = RecordedEvents()
        recording = self.baseten.ledger.start_pass()
        deps = SecretDependencies(
            kube=kube,
            baseten=self.baseten,
            recorder=events,
            clock=self.clock,
            timing=self.timing,
            crs=_Cache(every),
            secrets=self.secrets,
            claimants=lambda name: [o for o in every.values() if name in secret_claim_index(o)],
            models_naming=lambda name: [m for m in models if name in model_secrets_index(m)],
            fingerprint_key=fingerprint_key(self.api_key),
            identity=self.identity,
            ages=LastSyncAges(self.clock),
            tenancy=self.rules,
        )
        try:
            BasetenSecretReconciler(deps).reconcile(Request(result.namespace, result.name))
        except (ReconcileError, TerminalError) as ended:
            result.blockers.append(str(ended))
        except SecretUnread as unread:
            result.notes.append(str(unread))
        except WriteRefused as refused:
            result.error = unplanned(recording, refused)
        result.error = result.error or unplanned(recording)
        stored = kube.stored(result.namespace, result.name) or obj
        status = parse_secret_status(stored.get("status"))
        result.actions = list(recording.actions)
        result.events = events.events
        result.status = {"state": status.state, "message": status.message}
        if not self.rules.knows_namespace(result.namespace):
            result.notes.append(namespace_unknown(result.namespace, "BasetenSecrets"))
        elif spec is not None and spec.mode in _NO_WRITES:
            result.notes.append(_NO_WRITES[spec.mode])
        held = status.message and status.message not in result.blockers
        if not result.actions and status.state in _HELD_STATES and held:
            result.blockers.append(str(status.message))
        return result


# The states a CR stays in until something changes, shown as its plan's blockers.
_HELD_STATES = frozenset({"FAILED", "CONFLICT", "DELETE_BLOCKED", "WAITING_FOR_SECRET"})


class _Cache:
    """The BasetenSecret informer a plan's passes read: the planned CRs over the live ones."""

    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]]) -> None:
        self._objects = objects

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self._objects.get((namespace or "", name))


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])
