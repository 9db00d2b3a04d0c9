"""Deleting a BasetenSecret with `deletionPolicy: Delete` (docs/contract.md 13.7).

The Baseten secret goes only when this CR wrote it (its status holds the fingerprint of a
write: a CR that never wrote retains whatever exists under the name), only in the team and
under the name its status says the value went to (a team changed since without a new write
deletes nothing, with a SecretDeleteBlocked Event naming both) and nothing the
operator knows still needs it: no
BasetenModel (in any namespace, not itself being deleted) names it in
trussConfig.secrets in a team that may be this one's, and no other BasetenSecret writes
it. Otherwise DELETE_BLOCKED names them, and the pass comes back when they change (the
model watch) or after a while. Only the owner of the (team, name) deletes; a CR its
namespace's policy refuses, or one that stands down for another, lets go touching nothing.
"""

from __future__ import annotations

from typing import Any

from baseten_operator.api.constants import EventReason, SecretState
from baseten_operator.api.types import BasetenModelSpec
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.controller.basetensecret import messages
from baseten_operator.controller.basetensecret.context import SecretPass
from baseten_operator.controller.basetensecret.fingerprint import fingerprint
from baseten_operator.controller.basetensecret.ownership import allowed_team, secret_owner
from baseten_operator.controller.basetensecret.values import ValueUnusable, value_of
from baseten_operator.controller.shared.endings import ReconcileError, RequeueAfter
from baseten_operator.controller.shared.namespace_policy import team_in
from baseten_operator.controller.shared.ownership import age, object_key, teams_may_match
from baseten_operator.controller.shared.ports import BasetenAPI
from baseten_operator.controller.shared.specs import valid_spec
from baseten_operator.controller.shared.tenancy import ApiKeyUnavailable
from baseten_operator.runtime.errors import Forbidden


def delete_secret(p: SecretPass) -> None:
    """Delete the Baseten secret, or end the pass (blocked, failed); returns when the
    finalizer may go (deleted, already absent, or not this CR's to delete)."""
    tenancy = p.deps.tenancy
    if tenancy is not None and not tenancy.knows_namespace(p.namespace):
        # Its policy, and with it the team the secret is in, is unknown yet, not empty.
        raise RequeueAfter(p.deps.timing.namespace_unknown)
    if p.status.fingerprint is None:
        return  # never written by this CR: a secret of that name is someone else's
    allowed, team = allowed_team(p.deps, p.obj)
    if not allowed:
        return
    if not _wrote_there(p, team):
        return
    p.team = team
    owner = secret_owner(p.deps, p.obj, p.spec, team)
    if owner is not p.obj and object_key(owner) != p.key:
        return
    users = users_of(p, team)
    if users:
        message = messages.delete_blocked(p.spec.name, users)
        p.enter(SecretState.DELETE_BLOCKED, message, EventReason.SECRET_DELETE_BLOCKED)
        raise RequeueAfter(p.deps.timing.delete_blocked, stalled=True)
    client: BasetenAPI = p.deps.baseten
    try:
        if tenancy is not None:
            client = tenancy.baseten_for(tenancy.policy(p.namespace), team)
        deleted = client.delete_secret(p.spec.name)
    except (ApiKeyUnavailable, BasetenAPIError) as error:
        message = messages.delete_failed(p.spec.name, error)
        p.enter(SecretState.FAILED, message, EventReason.SECRET_SYNC_FAILED)
        raise ReconcileError(message) from error
    if deleted:
        p.event(EventReason.SECRET_DELETED, messages.deleted_event(p.spec.name))


def users_of(p: SecretPass, team: str | None) -> list[str]:
    """What still needs the Baseten secret, oldest first: BasetenModels naming it, other
    BasetenSecrets writing it."""
    models = [
        model
        for model in p.deps.models_naming(p.spec.name)
        if not model["metadata"].get("deletionTimestamp") and _model_may_share(p, team, model)
    ]
    secrets = [
        other
        for other in p.deps.claimants(p.spec.name)
        if object_key(other) != p.key and teams_may_match(team, allowed_team(p.deps, other)[1])
    ]
    names = [
        messages.model_user(*object_key(model).split("/", 1)) for model in sorted(models, key=age)
    ]
    names += [
        messages.secret_user(*object_key(other).split("/", 1)) for other in sorted(secrets, key=age)
    ]
    return names


def _model_may_share(p: SecretPass, team: str | None, model: dict[str, Any]) -> bool:
    """Fail closed: a model whose spec cannot be read, or whose team is unknown, counts."""
    spec = valid_spec(BasetenModelSpec, model)
    tenancy = p.deps.tenancy
    if spec is None:
        return True
    namespace = model["metadata"].get("namespace") or ""
    model_team = team_in(spec.team, tenancy.policy(namespace)) if tenancy else spec.team
    return teams_may_match(team, model_team)


def _wrote_there(p: SecretPass, team: str | None) -> bool:
    """Whether this CR's last write went to the (team, name) it would delete: only what it
    wrote, only where it wrote it. A team changed since (spec.team set later, the
    namespace's annotation moved) without a new write deletes nothing, and says so."""
    status = p.status
    written: tuple[str, str | None] | None = (
        (status.written_name, status.written_team)
        if status.written_name is not None
        else _proven_by_fingerprint(p, team)
    )
    if written == (p.spec.name, team):
        return True
    where = messages.where_written(*written) if written is not None else messages.WRITTEN_UNKNOWN
    p.event(
        EventReason.SECRET_DELETE_BLOCKED,
        messages.delete_elsewhere_event(p.spec.name, where, messages.team_text(team)),
    )
    return False


def _proven_by_fingerprint(p: SecretPass, team: str | None) -> tuple[str, str | None] | None:
    """A status from before the record of where the value went (it has the fingerprint
    only): the (name, team) it proves, when the Secret's value still reads and its
    fingerprint there is the one on record; else unknown."""
    ref = p.spec.secret_ref
    try:
        value = value_of(p.namespace, ref, p.deps.secrets.get(p.namespace, ref.name))
    except (Forbidden, ValueUnusable):
        return None
    digest = fingerprint(p.deps.fingerprint_key, team, p.spec.name, value)
    return (p.spec.name, team) if digest == p.status.fingerprint else None
