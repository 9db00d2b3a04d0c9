"""The tenancy gate at the start of every pass, before any Baseten call: the namespace's
policy, the one-owner rule, and the client (key, team) the pass then uses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from baseten_operator.api.constants import FAILED, EventReason, Mode
from baseten_operator.baseten.teams import TeamScopedClient
from baseten_operator.controller.context import Pass
from baseten_operator.controller.endings import AwaitChange, PassEnded, RequeueAfter
from baseten_operator.controller.namespace_policy import NamespacePolicy
from baseten_operator.controller.ownership import ensure_not_shared, ensure_owner
from baseten_operator.controller.ports import BasetenAPI
from baseten_operator.controller.scoped_pusher import ScopedPusher
from baseten_operator.controller.tenancy import ApiKeyUnavailable, Tenancy


def admit(p: Pass) -> Pass:
    """The pass to run, with the namespace's client; ends the pass when it may not run."""
    tenancy = p.deps.tenancy
    if tenancy is None:
        return p
    policy = tenancy.policy(p.namespace)
    violation = policy.violation(p.spec, require_policy=tenancy.require_policy)
    if violation is not None:
        entering = p.status.deployment_status != FAILED or p.status.message != violation
        p.report(FAILED, violation)
        if entering:
            p.event(EventReason.POLICY_VIOLATION, violation)
        raise AwaitChange()  # the Namespace watch brings it back when the policy changes
    ensure_owner(p, tenancy)
    if p.spec.effective_mode == Mode.PAUSE:
        return p  # no Baseten call to make: a missing key must not hide the pause
    return _scoped(p, tenancy, policy)


def admit_deletion(p: Pass) -> Pass | None:
    """The pass that may delete the Baseten model; None when the CR must let go without
    touching Baseten (its namespace's policy refuses it)."""
    tenancy = p.deps.tenancy
    if tenancy is None:
        return p
    policy = tenancy.policy(p.namespace)
    if policy.violation(p.spec, require_policy=tenancy.require_policy) is not None:
        return None
    ensure_not_shared(p, tenancy)
    # Without its key, a deletion is blocked like any other: it comes back after 30s.
    return _scoped(
        p, tenancy, policy, key_missing=lambda: RequeueAfter(p.deps.timing.delete_blocked)
    )


def _scoped(
    p: Pass,
    tenancy: Tenancy,
    policy: NamespacePolicy,
    key_missing: Callable[[], PassEnded] = AwaitChange,
) -> Pass:
    team = tenancy.team_of(p.namespace, p.spec)
    try:
        client = tenancy.baseten_for(policy, team)
        api_key = tenancy.api_key(policy)
    except ApiKeyUnavailable as error:
        p.report(FAILED, str(error))
        # Unless told otherwise, the Secret watch brings it back when the key appears.
        raise key_missing() from error
    return _with_client(p, client, api_key)


def _with_client(p: Pass, client: BasetenAPI, api_key: str | None) -> Pass:
    """The pass calling Baseten through `client`, its pushes with the same key and team."""
    pusher = p.deps.pusher
    team_client = client if isinstance(client, TeamScopedClient) else None
    if pusher is not None and (api_key is not None or team_client is not None):
        pusher = ScopedPusher(pusher, api_key, team_client)
    return replace(p, deps=replace(p.deps, baseten=client, pusher=pusher))
