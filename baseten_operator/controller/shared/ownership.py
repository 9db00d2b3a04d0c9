"""One owner per claim, the rule both kinds share: among the CRs claiming the same thing
(a BasetenModel's environment, a BasetenSecret's Baseten secret name) in teams that may be
the same, the oldest (creationTimestamp, then namespace/name) owns it and the others stand
down.

Teams fail closed: a CR without a team looks its model or secret up organisation-wide,
where any team's can match, so its team "may be" every team (docs/contract.md section 12).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
