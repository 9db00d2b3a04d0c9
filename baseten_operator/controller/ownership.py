"""One owner per (team, model, environment), and no deletion of a model others manage.

Two CRs driving the same Baseten environment revert each other's settings forever, so
among the CRs in Reconcile or Pause mode that claim one, the oldest (creationTimestamp,
then namespace/name) owns it and every other one stands down (CONFLICT) without a
single Baseten call. Observe CRs only read: they never claim and never conflict.

Teams fail closed: a CR without a team looks its model up organisation-wide, where a
model of that name in any team can match, so its team "may be" every team. Claimants
are taken oldest first; each owns unless an owner already taken may share its team
(then it stands down, managed by the oldest such owner). No two owners may share a team,
so no real environment ever has two; and a CR only ever stands down for a real owner
(docs/contract.md section 12).

The claim index (model, environment) spans teams: a namespace's team is an annotation
that may change under a cached object, so the team is compared when the index is read.
"""

from __future__ import annotations

from collections.abc import Callable
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


def age(obj: dict[str, Any]) -> tuple[str, str, str]:
    """Oldest first: creationTimestamp, then namespace/name."""
    meta = obj.get("metadata") or {}
    return (
        str(meta.get("creationTimestamp") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


def object_key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or ''}/{meta['name']}"


def teams_may_match(team: str | None, other: str | None) -> bool:
    """Two CRs may reach the same Baseten model unless both name a team and they differ:
    without a team, a lookup is organisation-wide and can resolve any team's model."""
    return team is None or other is None or team == other


def _allowed_team(tenancy: Tenancy, obj: dict[str, Any]) -> tuple[bool, str | None]:
    """(allowed by its namespace's policy, its team): a refused CR manages nothing."""
    spec = tenancy.allows(obj)
    if spec is None:
        return False, None
    return True, tenancy.team_of(obj["metadata"].get("namespace") or "", spec)


def owner_of(tenancy: Tenancy, obj: dict[str, Any], spec: BasetenModelSpec) -> dict[str, Any]:
    """The CR that owns `obj`'s (team, model, environment); `obj` itself when it does."""
    return oldest_owner(
        obj,
        tenancy.claimants(claim_value(spec.model_name, spec.environment.name)),
        lambda claimant: _allowed_team(tenancy, claimant),
        tenancy.team_of(obj["metadata"].get("namespace") or "", spec),
    )


def oldest_owner(
    obj: dict[str, Any],
    claimants: list[dict[str, Any]],
    allowed_team: Callable[[dict[str, Any]], tuple[bool, str | None]],
    team: str | None,
) -> dict[str, Any]:
    """Of the CRs claiming what `obj` (in `team`) claims, the one that owns it for `obj`;
    `obj` itself when it does.

    Only older claimants decide it: taken oldest first, each becomes an owner unless an
    owner before it may share its team; `allowed_team` says whether a claimant's namespace
    policy allows it (a refused CR manages nothing) and its team.
    """
    me, my_age = object_key(obj), age(obj)
    older = sorted(
        (other for other in claimants if object_key(other) != me and age(other) < my_age),
        key=age,
    )
    owners: list[tuple[dict[str, Any], str | None]] = []
    for claimant in older:
        allowed, claimant_team = allowed_team(claimant)
        if allowed and not any(teams_may_match(claimant_team, taken) for _, taken in owners):
            owners.append((claimant, claimant_team))
    return next((owner for owner, taken in owners if teams_may_match(team, taken)), obj)


def ensure_owner(p: Pass, tenancy: Tenancy) -> None:
    """Stand down (CONFLICT, no Baseten call) unless this CR owns its environment."""
    if p.spec.effective_mode == Mode.OBSERVE:
        return
    owner = owner_of(tenancy, p.obj, p.spec)
    if owner is p.obj or object_key(owner) == p.key:
        return
    message = messages.environment_conflict(p.env, p.spec.model_name, object_key(owner))
    p.enter(CONFLICT, message, EventReason.ENVIRONMENT_CONFLICT)
    raise AwaitChange()  # the claim watch wakes it when the owner goes or moves


def ensure_not_shared(p: Pass, tenancy: Tenancy) -> None:
    """Deleting the Baseten model is blocked while another CR, in any namespace and mode,
    names the same model in a team that may be this one's (deleting CRs are leaving)."""
    team = tenancy.team_of(p.namespace, p.spec)
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


def requests_for_claims(claimants: ClaimLookup, objs: list[dict[str, Any]]) -> list[Request]:
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
