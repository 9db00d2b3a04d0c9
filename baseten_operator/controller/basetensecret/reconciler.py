"""One pass of a BasetenSecret (docs/contract.md section 13).

In order, each step ending the pass or falling through: the finalizer; the namespace's
policy and the one-owner rule (no Secret read, no Baseten call for a CR that may not
write); Pause; the Secret's value (FORBIDDEN, WAITING_FOR_SECRET or FAILED, with no
Baseten call, when it cannot give one); Baseten's list of secrets; then the write, when
the value differs from the last one written (the fingerprint), the name is missing from
Baseten, or reassertInterval has elapsed. Observe stops before the write and says what it
would write. A steady pass writes nothing, to Baseten or to the status.
"""

from __future__ import annotations

import re
from typing import NoReturn

import structlog
from pydantic import SecretStr

from baseten_operator.api.constants import (
    BASETENSECRETS,
    EventReason,
    Mode,
    SecretDeletionPolicy,
    SecretState,
)
from baseten_operator.api.secret_types import BasetenSecretSpec
from baseten_operator.baseten.errors import BasetenAPIError, RateLimited
from baseten_operator.baseten.models import SecretV1
from baseten_operator.controller.basetensecret import messages
from baseten_operator.controller.basetensecret.context import SecretDependencies, SecretPass
from baseten_operator.controller.basetensecret.deletion import delete_secret
from baseten_operator.controller.basetensecret.fingerprint import fingerprint
from baseten_operator.controller.basetensecret.ownership import secret_owner
from baseten_operator.controller.basetensecret.status import SecretStatusWriter
from baseten_operator.controller.basetensecret.telemetry import count_failure, count_sync
from baseten_operator.controller.basetensecret.values import ValueUnusable, value_of
from baseten_operator.controller.shared.endings import (
    AwaitChange,
    PassEnded,
    ReconcileError,
    RequeueAfter,
    interrupted_result,
)
from baseten_operator.controller.shared.finalizers import has_finalizer, set_finalizer_on
from baseten_operator.controller.shared.messages import invalid_spec
from baseten_operator.controller.shared.ownership import object_key
from baseten_operator.controller.shared.ports import BasetenAPI
from baseten_operator.controller.shared.specs import parse_spec
from baseten_operator.controller.shared.status import StaleRead
from baseten_operator.controller.shared.tenancy import ApiKeyUnavailable
from baseten_operator.runtime.clock import format_rfc3339, parse_rfc3339
from baseten_operator.runtime.controller import Request, Result, TerminalError
from baseten_operator.runtime.errors import Forbidden

log = structlog.get_logger(__name__)

# `User "system:serviceaccount:{namespace}:{name}" cannot get resource ...`: the API
# server's refusal names who asked.
_SERVICE_ACCOUNT_USER = re.compile(r'User "system:serviceaccount:([^:"]+):([^:"]+)"')
_USER = re.compile(r'User "([^"]+)"')


class BasetenSecretReconciler:
    def __init__(self, deps: SecretDependencies) -> None:
        self._deps = deps

    def reconcile(self, request: Request) -> Result:
        obj = self._deps.crs.get(request.namespace, request.name)
        if obj is None:
            self._deps.ages.forget(request.namespace, request.name)
            return Result()
        writer = SecretStatusWriter(self._deps.kube, obj, self._deps.clock)
        spec, problems = parse_spec(BasetenSecretSpec, obj)
        if spec is None:
            if obj["metadata"].get("deletionTimestamp"):
                # Nothing it means can be trusted: let it go, touching nothing in Baseten.
                set_finalizer_on(self._deps.kube, BASETENSECRETS, obj, present=False)
                return Result()
            message = invalid_spec(problems)
            writer.report(SecretState.FAILED, message)
            writer.write_outcome(stalled=True)
            raise TerminalError(message)
        p = SecretPass(self._deps, obj, spec, writer)
        try:
            if obj["metadata"].get("deletionTimestamp"):
                return self._delete(p)
            if spec.mode == Mode.RECONCILE and not has_finalizer(obj):
                set_finalizer_on(self._deps.kube, BASETENSECRETS, obj, present=True)
                return Result()  # the update brings it back
            _run(p)
        except PassEnded as ending:
            writer.write_outcome(stalled=ending.stalled)
            return ending.result()
        except ReconcileError as error:
            writer.write_outcome(stalled=error.stalled)
            raise
        except (RateLimited, StaleRead) as interruption:
            return interrupted_result(interruption)

    def _delete(self, p: SecretPass) -> Result:
        if not has_finalizer(p.obj):
            return Result()
        retained = (
            p.spec.mode != Mode.RECONCILE or p.spec.deletion_policy == SecretDeletionPolicy.RETAIN
        )
        if not retained:
            delete_secret(p)  # ends the pass unless the secret is gone
        set_finalizer_on(p.deps.kube, BASETENSECRETS, p.obj, present=False)
        p.deps.ages.forget(p.namespace, p.name)
        return Result()


def _run(p: SecretPass) -> NoReturn:
    client = admit(p)
    if p.spec.mode == Mode.PAUSE:
        p.report(SecretState.PAUSED, messages.paused())
        raise AwaitChange()
    value = read_value(p)
    present = find_secret(p, client)
    digest = fingerprint(p.deps.fingerprint_key, p.team, p.spec.name, value)
    why = write_reason(p, present, digest)
    if p.spec.mode == Mode.OBSERVE:
        observe(p, present, why)
    if why is not None:
        present = write(p, client, value, digest, why)
    else:
        _record_age(p)
    assert present is not None  # a missing secret is always written
    p.status.secret_id = present.id
    ref = p.spec.secret_ref
    p.report(SecretState.SYNCED, messages.synced(p.spec.name, p.namespace, ref.name, ref.key))
    raise RequeueAfter(next_check(p))


def admit(p: SecretPass) -> BasetenAPI:
    """The client the pass writes with (its namespace's key, its team); ends the pass when
    the namespace's policy or another BasetenSecret's ownership says it may not write. The
    namespace's tenancy is read once here."""
    deps = p.deps
    tenancy = deps.tenancy
    if tenancy is None:
        p.team = p.spec.team
        _ensure_owner(p)
        return deps.baseten
    tenant = tenancy.tenant(p.namespace)
    if not tenant.known:
        raise RequeueAfter(deps.timing.namespace_unknown)
    violation = tenant.policy.secret_violation(
        p.spec.name, p.spec.team, require_policy=tenant.require_policy
    )
    if violation is not None:
        p.enter(SecretState.FAILED, violation, EventReason.SECRET_SYNC_FAILED)
        raise AwaitChange()  # the Namespace watch brings it back
    p.team = tenant.team(p.spec.team)
    _ensure_owner(p)
    if p.spec.mode == Mode.PAUSE:
        return deps.baseten  # no Baseten call to make
    try:
        return tenant.client(p.team)
    except ApiKeyUnavailable as error:
        p.enter(SecretState.FAILED, str(error), EventReason.SECRET_SYNC_FAILED)
        raise AwaitChange() from error


def _ensure_owner(p: SecretPass) -> None:
    """Stand down (CONFLICT) unless this CR owns its (team, name); Observe never claims."""
    if p.spec.mode == Mode.OBSERVE:
        return
    owner = secret_owner(p.deps, p.obj, p.spec, p.team)
    if owner is not p.obj and object_key(owner) != p.key:
        message = messages.conflict(p.spec.name, p.team, object_key(owner))
        p.enter(SecretState.CONFLICT, message, EventReason.SECRET_SYNC_FAILED)
        raise AwaitChange()  # the claim watch wakes it when the owner goes


def read_value(p: SecretPass) -> SecretStr:
    ref = p.spec.secret_ref
    try:
        secret = p.deps.secrets.get(p.namespace, ref.name)
    except Forbidden as refused:
        count_failure("forbidden")
        kind, subject = _subject(p, refused)
        message = messages.forbidden(p.namespace, ref.name, kind, subject)
        p.enter(SecretState.FORBIDDEN, message, EventReason.SECRET_SYNC_FAILED)
        # Stalled until someone grants it; looked at again, as a RoleBinding is not watched.
        raise RequeueAfter(p.deps.timing.secret_forbidden, stalled=True) from None
    try:
        return value_of(p.namespace, ref, secret)
    except ValueUnusable as unusable:
        count_failure("input")
        p.enter(unusable.state, unusable.message, EventReason.SECRET_SYNC_FAILED)
        if unusable.waiting:
            # The Secret's watch brings it back; the requeue is only a backstop.
            raise RequeueAfter(p.deps.timing.steady_after(p.key, p.deps.clock.now())) from None
        raise AwaitChange() from None


def _subject(p: SecretPass, refused: Forbidden) -> tuple[str, str]:
    """Whom the RoleBinding must name: the user the API server refused, else the operator's
    ServiceAccount as configured."""
    account = _SERVICE_ACCOUNT_USER.search(refused.message)
    if account is not None:
        return "ServiceAccount", f"{account.group(1)}/{account.group(2)}"
    user = _USER.search(refused.message)
    if user is not None:
        return "User", user.group(1)
    identity = p.deps.identity
    return "ServiceAccount", f"{identity.namespace}/{identity.service_account}"


def find_secret(p: SecretPass, client: BasetenAPI) -> SecretV1 | None:
    try:
        listed: list[SecretV1] = client.list_secrets()
    except BasetenAPIError as error:
        _failed(p, messages.list_failed(error))
    return next((secret for secret in listed if secret.name == p.spec.name), None)


def write_reason(p: SecretPass, present: SecretV1 | None, digest: str) -> str | None:
    """Why the value must be written now; None when Baseten holds it already."""
    status = p.status
    if present is None:
        return messages.WHY_MISSING
    if status.fingerprint is None:
        return messages.WHY_NEVER_WRITTEN
    if status.fingerprint != digest:
        return messages.WHY_CHANGED
    due = _reassert_due(p)
    if due is not None and due <= p.deps.clock.now():
        return messages.WHY_REASSERT
    return None


def _reassert_due(p: SecretPass) -> float | None:
    interval = p.spec.reassert_seconds
    last = parse_rfc3339(p.status.last_sync_time)
    if interval is None or last is None:
        return None
    return last + interval * p.deps.timing.scale


def observe(p: SecretPass, present: SecretV1 | None, why: str | None) -> NoReturn:
    if present is not None:
        p.status.secret_id = present.id
    name = p.spec.name
    if why is None or why == messages.WHY_REASSERT:
        p.report(SecretState.SYNCED, messages.observed_in_sync(name))
    elif why == messages.WHY_NEVER_WRITTEN:
        # An Observe CR that never wrote (a standby region's, whose active twin writes the
        # value) cannot vouch for the value, nor call it wrong: a secret that exists is
        # what a model needs. Reporting it out of sync would leave Flux waiting forever.
        p.report(SecretState.SYNCED, messages.observed_unverifiable(name))
    else:
        p.report(SecretState.OUT_OF_SYNC, messages.would_write(name, why))
    raise RequeueAfter(p.deps.timing.observe)


def write(p: SecretPass, client: BasetenAPI, value: SecretStr, digest: str, why: str) -> SecretV1:
    # A copy older than the last write's status (an informer that lags) reads as "never
    # written" or "value changed": the conditional write proves this copy is current, or
    # ends the pass (StaleRead) before a second upsert of the same value.
    p.writer.write_intent()
    try:
        written: SecretV1 = client.upsert_secret(p.spec.name, value)
    except BasetenAPIError as error:
        _failed(p, messages.sync_failed(p.spec.name, error))
    now = p.deps.clock.now()
    count_sync()
    p.deps.ages.record(p.namespace, p.name, p.spec.name, now)
    status = p.status
    status.fingerprint = digest
    status.last_sync_time = format_rfc3339(now)
    # Where it went: a later deletion deletes there, and nowhere else.
    status.written_name = p.spec.name
    status.written_team = p.team
    ref = p.spec.secret_ref
    p.event(
        EventReason.SECRET_SYNCED,
        messages.synced_event(p.spec.name, p.namespace, ref.name, ref.key, why),
    )
    log.info("wrote Baseten secret", secret=p.spec.name, team=p.team or "", reason=why)
    p.deps.on_synced(p.spec.name)
    return written


def _record_age(p: SecretPass) -> None:
    """The last write's age from the status (a new leader's first steady pass)."""
    last = parse_rfc3339(p.status.last_sync_time)
    if last is not None:
        p.deps.ages.record(p.namespace, p.name, p.spec.name, last)


def _failed(p: SecretPass, message: str) -> NoReturn:
    count_failure("baseten")
    p.enter(SecretState.FAILED, message, EventReason.SECRET_SYNC_FAILED)
    raise ReconcileError(message)


def next_check(p: SecretPass) -> float:
    """The steady re-check (a name deleted in the UI comes back), or the reassert if due
    sooner."""
    steady = p.deps.timing.steady_after(p.key, p.deps.clock.now())
    due = _reassert_due(p)
    if due is None:
        return steady
    return max(min(steady, due - p.deps.clock.now()), 0.05)
