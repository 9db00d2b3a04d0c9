"""One owner per (team, Baseten secret name) (docs/contract.md 13.6).

Two BasetenSecrets writing one Baseten secret from different Secrets would overwrite each
other on every pass. As for environments (shared/ownership.py), among the BasetenSecrets in
Reconcile or Pause mode claiming a name, the oldest owns it in every team it may reach;
the others stand down (CONFLICT) without reading their Secret or calling Baseten. Observe
only reads: it never claims.
"""

from __future__ import annotations

from typing import Any

from baseten_operator.api.constants import Mode
from baseten_operator.api.secret_types import BasetenSecretSpec
from baseten_operator.controller.basetensecret.context import SecretDependencies
from baseten_operator.controller.shared.namespace_policy import team_in
from baseten_operator.controller.shared.ownership import oldest_owner
from baseten_operator.controller.shared.specs import valid_spec

# BasetenSecrets by the Baseten secret name they claim.
SECRET_CLAIM_INDEX = "secret.claim"
# BasetenSecrets by the `namespace/name` of the Secret they read.
SECRET_REF_INDEX = "secret.secretRef"


def secret_claim_index(obj: dict[str, Any]) -> list[str]:
    """What a raw BasetenSecret claims: nothing when deleting or in Observe mode."""
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return []
    spec = obj.get("spec") or {}
    name = spec.get("name")
    if not isinstance(name, str) or not name or spec.get("mode") == Mode.OBSERVE:
        return []
    return [name]


def secret_ref_index(obj: dict[str, Any]) -> list[str]:
    ref = (obj.get("spec") or {}).get("secretRef") or {}
    name = ref.get("name")
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    return [f"{namespace}/{name}"] if isinstance(name, str) and name else []


def allowed_team(deps: SecretDependencies, obj: dict[str, Any]) -> tuple[bool, str | None]:
    """(allowed by its namespace's policy, its team): a refused CR writes nothing."""
    spec = valid_spec(BasetenSecretSpec, obj)
    if spec is None:
        return False, None
    tenancy = deps.tenancy
    if tenancy is None:
        return True, spec.team
    policy = tenancy.policy(obj["metadata"].get("namespace") or "")
    violation = policy.secret_violation(spec.name, spec.team, require_policy=tenancy.require_policy)
    if violation is not None:
        return False, None
    return True, team_in(spec.team, policy)


def secret_owner(
    deps: SecretDependencies, obj: dict[str, Any], spec: BasetenSecretSpec, team: str | None
) -> dict[str, Any]:
    """The BasetenSecret that owns `obj`'s (team, name); `obj` itself when it does."""
    return oldest_owner(
        obj, deps.claimants(spec.name), lambda other: allowed_team(deps, other), team
    )
