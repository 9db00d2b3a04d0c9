"""The tenancy gate at the start of every pass, before any Baseten call: the namespace's
policy, the one-owner rule, and the client (key, team) the pass then uses. The namespace's
tenancy is read once here and handed on."""

from __future__ import annotations

from dataclasses import replace

import structlog

from baseten_operator.api.constants import FAILED, EventReason, Mode
from baseten_operator.baseten.teams import TeamScopedClient
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.basetenmodel.ownership import ensure_not_shared, ensure_owner
from baseten_operator.controller.basetenmodel.scoped_pusher import ScopedPusher
from baseten_operator.controller.shared.endings import AwaitChange, PassEnded, RequeueAfter
from baseten_operator.controller.shared.tenancy import ApiKeyUnavailable, Tenancy, Tenant

log = structlog.get_logger(__name__)


def admit(p: Pass) -> Pass:
    """The pass to run, with the namespace's client; ends the pass when it may not run."""
    tenancy = p.deps.tenancy
    if tenancy is None:
        return p
    tenant = _tenant(p, tenancy)
    violation = tenant.policy.violation(p.spec, require_policy=tenant.require_policy)
    if violation is not None:
        p.enter(FAILED, violation, EventReason.POLICY_VIOLATION)
        # The Namespace watch brings it back when the policy changes.
        raise AwaitChange()
    team = tenant.team(p.spec.team)
    ensure_owner(p, tenancy, team)
    if p.spec.effective_mode == Mode.PAUSE:
        return p  # no Baseten call to make: a missing key must not hide the pause
    return _with_client(p, tenant, team)


def admit_deletion(p: Pass) -> Pass | None:
    """The pass that may delete the Baseten model; None when the CR must let go without
    touching Baseten (its namespace's policy refuses it)."""
    tenancy = p.deps.tenancy
    if tenancy is None:
        return p
    tenant = _tenant(p, tenancy)
    if tenant.policy.violation(p.spec, require_policy=tenant.require_policy) is not None:
        return None
    team = tenant.team(p.spec.team)
    ensure_not_shared(p, tenancy, team)
    # Without its key, a deletion is blocked like any other: it comes back after 30s.
    return _with_client(p, tenant, team, key_missing=RequeueAfter(p.deps.timing.delete_blocked))


def _tenant(p: Pass, tenancy: Tenancy) -> Tenant:
    """The namespace's tenancy; fail closed on a Namespace the cache has not seen yet (a CR
    applied with its Namespace can arrive first): its policy, team and key are unknown, so
    no Baseten call. The Namespace's add event wakes the CR; the requeue is only a backstop."""
    tenant = tenancy.tenant(p.namespace)
    if not tenant.known:
        log.debug("namespace not in the cache yet: waiting for it", key=p.key)
        raise RequeueAfter(p.deps.timing.namespace_unknown)
    return tenant


def with_namespace_client(p: Pass) -> Pass:
    """`p` with its namespace's Baseten client and pusher (what `plan` replays a pass with)."""
    tenancy = p.deps.tenancy
    if tenancy is None:
        return p
    tenant = tenancy.tenant(p.namespace)
    return _with_client(p, tenant, tenant.team(p.spec.team))


def _with_client(
    p: Pass, tenant: Tenant, team: str | None, key_missing: PassEnded | None = None
) -> Pass:
    """`p` with its namespace's Baseten client (its key, its team) and pusher. A key that
    is unavailable sets FAILED and ends the pass with `key_missing` (default: wait for the
    Secret watch to bring the CR back when the key appears)."""
    try:
        client = tenant.client(team)
        api_key = tenant.api_key()
    except ApiKeyUnavailable as error:
        p.report(FAILED, str(error))
        raise (key_missing or AwaitChange()) from error
    pusher = p.deps.pusher
    team_client = client if isinstance(client, TeamScopedClient) else None
    if pusher is not None and (api_key is not None or team_client is not None):
        pusher = ScopedPusher(pusher, api_key, team_client)
    return replace(p, deps=replace(p.deps, baseten=client, pusher=pusher))
