"""One owner per (team, model, environment), and no deletion of a model others manage.

Two CRs driving the same Baseten environment revert each other's settings forever, so
among the CRs in Reconcile or Pause mode that claim one, the oldest (creationTimestamp,
then namespace/name) owns it and every other one stands down (CONFLICT) without a
single Baseten call. Observe CRs only read: they never claim and never conflict.

The claim index (model, environment) spans teams: a namespace's team is an annotation
that may change under a cached object, so the team is compared when the index is read.
"""

from __future__ import annotations

from typing import Any

from baseten_operator.api.constants import CONFLICT, DELETE_BLOCKED, EventReason, Mode
from baseten_operator.api.types import BasetenModelSpec
from baseten_operator.controller import messages
from baseten_operator.controller.context import Pass
from baseten_operator.controller.endings import AwaitChange, RequeueAfter
from baseten_operator.controller.tenancy import ClaimLookup, Tenancy
from baseten_operator.runtime.controller import Request

CLAIM_INDEX = "tenancy.claim"


def claim_value(model_name: str, env: str) -> str:
    # NUL cannot appear in either name, so no two claims share a value.
    return f"{model_name}\x00{env}"


def claim_index(obj: dict[str, Any]) -> list[str]:
    """What a raw BasetenModel claims: nothing when deleting or in Observe mode."""
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return []
    spec = obj.get("spec") or {}
    model = spec.get("modelName")
    env = (spec.get("environment") or {}).get("name")
    if not isinstance(model, str) or not isinstance(env, str) or not model or not env:
        return []
    if spec.get("mode") == Mode.OBSERVE and spec.get("paused") is not True:
        return []
    return [claim_value(model, env)]


def _age(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return (
        str(meta.get("creationTimestamp") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or ''}/{meta['name']}"


def _same_team(tenancy: Tenancy, team: str | None, other: dict[str, Any]) -> bool:
    """`other` is allowed by its namespace's policy and lives in `team`."""
    spec = tenancy.allows(other)
    namespace = other["metadata"].get("namespace") or ""
    return spec is not None and tenancy.team_of(namespace, spec) == team


def owner_of(tenancy: Tenancy, obj: dict[str, Any], spec: BasetenModelSpec) -> dict[str, Any]:
    """The CR that owns `obj`'s (team, model, environment); `obj` itself when it does."""
    namespace = obj["metadata"].get("namespace") or ""
    team = tenancy.team_of(namespace, spec)
    me = _key(obj)
    contenders = [
        other
        for other in tenancy.claimants(claim_value(spec.model_name, spec.environment.name))
        if _key(other) != me and _same_team(tenancy, team, other)
    ]
    return min([obj, *contenders], key=_age)


def ensure_owner(p: Pass, tenancy: Tenancy) -> None:
    """Stand down (CONFLICT, no Baseten call) unless this CR owns its environment."""
    if p.spec.effective_mode == Mode.OBSERVE:
        return
    owner = owner_of(tenancy, p.obj, p.spec)
    if owner is p.obj or _key(owner) == p.key:
        return
    message = messages.environment_conflict(p.env, p.spec.model_name, _key(owner))
    entering = p.status.deployment_status != CONFLICT or p.status.message != message
    p.report(CONFLICT, message)
    if entering:
        p.event(EventReason.ENVIRONMENT_CONFLICT, message)
    raise AwaitChange()  # the claim watch wakes it when the owner goes or moves


def ensure_not_shared(p: Pass, tenancy: Tenancy) -> None:
    """Deleting the Baseten model is blocked while another CR, in any namespace and mode,
    names the same model of the same team (deleting CRs are leaving anyway)."""
    team = tenancy.team_of(p.namespace, p.spec)
    others = sorted(
        (
            other
            for other in p.deps.siblings(p.spec.model_name)
            if _key(other) != p.key
            and not other["metadata"].get("deletionTimestamp")
            and _same_team(tenancy, team, other)
        ),
        key=_age,
    )
    if not others:
        return
    other = others[0]
    env = ((other.get("spec") or {}).get("environment") or {}).get("name") or ""
    message = messages.delete_shared(p.spec.model_name, _key(other), env)
    entering = p.status.deployment_status != DELETE_BLOCKED or p.status.message != message
    p.report(DELETE_BLOCKED, message)
    if entering:
        p.event(EventReason.MODEL_DELETE_BLOCKED, message)
    raise RequeueAfter(p.deps.timing.delete_blocked)


def claim_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return claim_index(old) != claim_index(new)


def requests_for_claims(claimants: ClaimLookup, objs: list[dict[str, Any]]) -> list[Request]:
    """Every CR claiming what one of `objs` claims (or claimed)."""
    requests: dict[str, Request] = {}
    for obj in objs:
        for value in claim_index(obj) or _former_claim(obj):
            for other in claimants(value):
                requests.setdefault(_key(other), Request.for_object(other))
    return list(requests.values())


def _former_claim(obj: dict[str, Any]) -> list[str]:
    """A deleting CR's claim before it stopped claiming (its spec still says what it was)."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("deletionTimestamp", None)
    return claim_index({**obj, "metadata": meta})
