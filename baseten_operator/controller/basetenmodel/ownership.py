"""One owner per (team, model, environment), and no deletion of a model others manage.

Two CRs driving the same Baseten environment revert each other's settings forever, so
among the CRs in Reconcile or Pause mode that claim one, the oldest (creationTimestamp,
then namespace/name) owns it and every other one stands down (CONFLICT) without a
single Baseten call. Observe CRs only read: they never claim and never conflict.

Claimants are taken oldest first (shared/ownership.py); each owns unless an owner already
taken may share its team (then it stands down, managed by the oldest such owner). No two
owners may share a team, so no real environment ever has two; and a CR only ever stands
down for a real owner (docs/contract.md section 12).

The claim index (model, environment) spans teams: a namespace's team is an annotation
that may change under a cached object, so the team is compared when the index is read.
"""

from __future__ import annotations

from typing import Any

from baseten_operator.api.constants import CONFLICT, DELETE_BLOCKED, EventReason, Mode
from baseten_operator.api.types import BasetenModelSpec
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.shared.endings import AwaitChange, RequeueAfter
from baseten_operator.controller.shared.namespace_policy import team_in
from baseten_operator.controller.shared.ownership import (
    age,
    object_key,
    oldest_owner,
    teams_may_match,
)
from baseten_operator.controller.shared.ports import Lookup
from baseten_operator.controller.shared.specs import valid_spec
from baseten_operator.controller.shared.tenancy import Tenancy
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


def _allowed_team(tenancy: Tenancy, obj: dict[str, Any]) -> tuple[bool, str | None]:
    """(allowed by its namespace's policy, its team): a refused CR manages nothing."""
    spec = valid_spec(BasetenModelSpec, obj)
    if spec is None:
        return False, None
    policy = tenancy.policy(obj["metadata"].get("namespace") or "")
    if policy.violation(spec, require_policy=tenancy.require_policy) is not None:
        return False, None
    return True, team_in(spec.team, policy)


def owner_of(
    tenancy: Tenancy,
    claimants: Lookup,
    obj: dict[str, Any],
    spec: BasetenModelSpec,
    team: str | None,
) -> dict[str, Any]:
    """The CR that owns `obj`'s (team, model, environment); `obj` itself when it does."""
    return oldest_owner(
        obj,
        claimants(claim_value(spec.model_name, spec.environment.name)),
        lambda claimant: _allowed_team(tenancy, claimant),
        team,
    )


def ensure_owner(p: Pass, tenancy: Tenancy, team: str | None) -> None:
    """Stand down (CONFLICT, no Baseten call) unless this CR owns its environment."""
    if p.spec.effective_mode == Mode.OBSERVE:
        return
    owner = owner_of(tenancy, p.deps.claimants, p.obj, p.spec, team)
    if owner is p.obj or object_key(owner) == p.key:
        return
    message = messages.environment_conflict(p.env, p.spec.model_name, object_key(owner))
    p.enter(CONFLICT, message, EventReason.ENVIRONMENT_CONFLICT)
    raise AwaitChange()  # the claim watch wakes it when the owner goes or moves


def ensure_not_shared(p: Pass, tenancy: Tenancy, team: str | None) -> None:
    """Deleting the Baseten model is blocked while another CR, in any namespace and mode,
    names the same model in a team that may be this one's (deleting CRs are leaving)."""
    others = sorted(
        (
            other
            for other in p.deps.siblings(p.spec.model_name)
            if object_key(other) != p.key
            and not other["metadata"].get("deletionTimestamp")
            and _shares_team(tenancy, team, other)
        ),
        key=age,
    )
    if not others:
        return
    other = others[0]
    env = ((other.get("spec") or {}).get("environment") or {}).get("name") or ""
    message = messages.delete_shared(p.spec.model_name, object_key(other), env)
    p.enter(DELETE_BLOCKED, message, EventReason.MODEL_DELETE_BLOCKED)
    raise RequeueAfter(p.deps.timing.delete_blocked)


def _shares_team(tenancy: Tenancy, team: str | None, other: dict[str, Any]) -> bool:
    allowed, other_team = _allowed_team(tenancy, other)
    return allowed and teams_may_match(team, other_team)


def claim_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return claim_index(old) != claim_index(new)


def requests_for_claims(claimants: Lookup, objs: list[dict[str, Any]]) -> list[Request]:
    """Every CR claiming what one of `objs` claims (or claimed)."""
    requests: dict[str, Request] = {}
    for obj in objs:
        for value in claim_index(obj) or _former_claim(obj):
            for other in claimants(value):
                requests.setdefault(object_key(other), Request.for_object(other))
    return list(requests.values())


def _former_claim(obj: dict[str, Any]) -> list[str]:
    """A deleting CR's claim before it stopped claiming (its spec still says what it was)."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("deletionTimestamp", None)
    return claim_index({**obj, "metadata": meta})
