"""From environment to promotion: docs/contract.md steps 3.9 to 3.14 (and 8 in steady state)."""

from __future__ import annotations

from typing import NoReturn

from baseten_operator.api.constants import (
    ACTIVATING,
    ACTIVE,
    BUILD_STOPPED,
    BUILDING,
    DEACTIVATING,
    DEPLOYING,
    FAILED,
    INACTIVE,
    LOADING_MODEL,
    PENDING,
    PROMOTING,
    PROMOTING_DEPLOYMENT,
    RETRYABLE_FAILURES,
    ROLLED_BACK,
    SCALED_TO_ZERO,
    UPDATING,
    WAKING_UP,
    EventReason,
)
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import DeploymentV1, EnvironmentV1
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.analysis import (
    begin,
    conclude,
    rollback_stands,
    rolled_back_message,
    supervise,
)
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.basetenmodel.environment import promotion_traffic, steady_of
from baseten_operator.controller.basetenmodel.model_id import raise_if_model_gone
from baseten_operator.controller.basetenmodel.orphans import clean_up_orphans
from baseten_operator.controller.basetenmodel.retries import deadline_text, retry_failed_deployment
from baseten_operator.controller.basetenmodel.source import matches_source
from baseten_operator.controller.shared.endings import ReconcileError, RequeueAfter
from baseten_operator.runtime.controller import TerminalError

# A source in one of these is on its way: wait for it.
SOURCE_IN_PROGRESS = frozenset(
    {BUILDING, DEPLOYING, LOADING_MODEL, WAKING_UP, UPDATING, DEACTIVATING}
)
PROMOTABLE = frozenset({ACTIVE, SCALED_TO_ZERO})
# A recorded candidate in one of these is still being promoted.
CANDIDATE_IN_PROGRESS = SOURCE_IN_PROGRESS | {ACTIVATING}


def promote_source(p: Pass, model_id: str, source: str, environment: EnvironmentV1) -> NoReturn:
    """Steps 9 to 14: every branch ends the pass."""
    current = environment.current_deployment
    candidate = environment.candidate_deployment
    ap = messages.active_prefix(current)
    if not environment.stated("current_deployment"):
        # Without it nobody can tell whether S already serves: promoting could roll back.
        p.report(PENDING, messages.promotion_data_unknown(ap, p.env, "current_deployment"))
        raise RequeueAfter(p.deps.timing.poll)
    if current is not None and matches_source(current.name, source):
        _current_matches(p, model_id, source, environment, current)
    traffic = promotion_traffic(environment)
    if candidate is not None and matches_source(candidate.name, source):
        _candidate_matches(p, model_id, ap, candidate, environment)
    if rollback_stands(p):  # section 14: not promoted again until the spec says so
        p.report(ROLLED_BACK, rolled_back_message(p))
        raise RequeueAfter(p.steady_period, stalled=True)
    _guard_double_promotion(p, model_id, ap, source, candidate, traffic)
    deployment = _validate_source(p, model_id, ap, source)
    _promote(p, model_id, ap, source, deployment)


# --- step 10 -----------------------------------------------------------------------------


def _current_matches(
    p: Pass, model_id: str, source: str, environment: EnvironmentV1, current: DeploymentV1
) -> NoReturn:
    timing = p.deps.timing
    if current.status == INACTIVE:
        # Baseten's TTL deactivated a deployment that still serves the environment.
        try:
            p.deps.baseten.activate_deployment(model_id, current.id)
        except BasetenAPIError as error:
            raise_if_model_gone(error)
            p.report(FAILED, messages.reactivate_failed(current.name, p.env, error))
            raise RequeueAfter(timing.poll) from error
        p.report(ACTIVATING, messages.reactivating(current.name, p.env))
        p.event(EventReason.DEPLOYMENT_REACTIVATED, messages.reactivated_event(current.name, p.env))
        raise RequeueAfter(timing.poll)

    had_candidate = bool(p.status.candidate_deployment_id or p.status.candidate_deployment_name)
    conclude(p, current)  # section 14: an analysis still running passed
    steady = steady_of(p, current, environment)
    p.report(current.status, steady)
    p.clear_candidate()
    if had_candidate:
        p.event(
            EventReason.DEPLOYMENT_ACTIVE, messages.deployment_active_event(current.name, p.env)
        )
    skipped = clean_up_orphans(p, model_id, source)
    if skipped is not None:
        # Failed closed: said in the status, and tried again on the next steady pass (the
        # same answer gives the same message, so steady passes still write nothing new).
        p.report(current.status, messages.orphan_cleanup_skipped(steady, skipped))
    raise RequeueAfter(p.steady_period)


# --- step 11 -----------------------------------------------------------------------------


def _candidate_matches(
    p: Pass, model_id: str, ap: str, candidate: DeploymentV1, environment: EnvironmentV1
) -> NoReturn:
    p.track_candidate(candidate)
    _fail_or_retry_candidate(p, model_id, ap, candidate)
    promoting = messages.promoting_candidate(ap, candidate, promotion_traffic(environment))
    # Section 14: this CR's own promotion is held and judged as it goes.
    wait = supervise(p, model_id, candidate, environment, promoting)
    if wait is None:
        p.report(PROMOTING, promoting)
        wait = p.deps.timing.poll
    raise RequeueAfter(wait)


def _fail_or_retry_candidate(p: Pass, model_id: str, ap: str, candidate: DeploymentV1) -> None:
    """A failed candidate ends the pass (a retry, a terminal failure, or for a stopped build
    a look again after the steady period); any other returns."""
    status = candidate.status
    if status in RETRYABLE_FAILURES:
        p.report(status, messages.candidate_failed(ap, candidate.name, status))

        def exhausted() -> NoReturn:
            message = messages.candidate_exhausted(ap, candidate.name, status, deadline_text(p))
            p.report(status, message)
            p.event(
                EventReason.PROMOTION_FAILED,
                messages.candidate_failed_event(candidate.name, status, exhausted=True),
            )
            raise TerminalError(message)

        retry_failed_deployment(p, model_id, candidate, exhausted)
    if status == BUILD_STOPPED:
        # A person stopped the build: never retried, but looked at again every steady
        # period, so that a build restarted in the Baseten UI is noticed.
        message = messages.candidate_failed(ap, candidate.name, status)
        entering = p.status.deployment_status != status or p.status.message != message
        p.report(status, message)
        if entering:
            p.event(
                EventReason.PROMOTION_FAILED,
                messages.candidate_failed_event(candidate.name, status, exhausted=False),
            )
        raise RequeueAfter(p.steady_period, stalled=True)


# --- step 12 -----------------------------------------------------------------------------


def _recorded_candidate(
    p: Pass, model_id: str, source: str, env_candidate: DeploymentV1 | None
) -> DeploymentV1 | None:
    """The candidate this CR recorded, if it is still being promoted; a stale one is cleared."""
    recorded_id = p.status.candidate_deployment_id
    if not recorded_id:
        return None
    deployment: DeploymentV1 | None = None
    # The environment's own candidate reached here only if it no longer matches the source.
    if env_candidate is None or env_candidate.id != recorded_id:
        try:
            deployment = p.deps.baseten.get_deployment(model_id, recorded_id)
        except BasetenAPIError as error:
            if not error.is_not_found:
                raise
    live = (
        deployment is not None
        and matches_source(deployment.name, source)
        # With no candidate on the environment, only a deployment still on its way (or
        # failed, to be retried) is a promotion in progress.
        and (
            env_candidate is not None
            or deployment.status in CANDIDATE_IN_PROGRESS
            or deployment.status in RETRYABLE_FAILURES
            or deployment.status == BUILD_STOPPED
        )
    )
    if not live:
        p.clear_candidate()
        return None
    return deployment


def _guard_double_promotion(
    p: Pass,
    model_id: str,
    ap: str,
    source: str,
    env_candidate: DeploymentV1 | None,
    traffic: int | None,
) -> None:
    recorded = _recorded_candidate(p, model_id, source, env_candidate)
    if recorded is not None and env_candidate is None:
        _fail_or_retry_candidate(p, model_id, ap, recorded)
    timing = p.deps.timing
    if env_candidate is not None:
        # Another CR's promotion, or one started in the UI: one at a time per environment.
        p.report(PROMOTING, messages.blocked_by_candidate(ap, env_candidate, source, traffic))
        p.event(EventReason.PROMOTION_BLOCKED, messages.promotion_blocked_event(env_candidate.name))
        raise RequeueAfter(timing.poll)
    if recorded is not None:
        p.report(
            PROMOTING,
            messages.blocked_by_recorded_candidate(ap, recorded.name, recorded.status),
        )
        p.event(EventReason.PROMOTION_BLOCKED, messages.promotion_blocked_event(recorded.name))
        raise RequeueAfter(timing.poll)


# --- step 13 -----------------------------------------------------------------------------


def _validate_source(p: Pass, model_id: str, ap: str, source: str) -> DeploymentV1:
    """The source deployment when it can be promoted now; otherwise the pass ends."""
    timing = p.deps.timing
    try:
        deployment: DeploymentV1 | None = p.deps.baseten.find_deployment(model_id, source)
    except BasetenAPIError as error:
        # A failed lookup is not an absence: say what happened, no SourceDeploymentNotFound.
        raise_if_model_gone(error)
        p.report(PENDING, messages.deployment_check_failed(ap, source, error))
        raise RequeueAfter(timing.poll) from error
    if deployment is None:  # the exact-name list came back without it
        message = messages.source_not_found(ap, source)
        p.report(FAILED, message)
        p.event(
            EventReason.SOURCE_DEPLOYMENT_NOT_FOUND,
            messages.source_not_found_event(source, p.spec.model_name),
        )
        raise ReconcileError(message)

    status = deployment.status
    if status in PROMOTABLE:
        return deployment
    if status in RETRYABLE_FAILURES:
        p.report(status, messages.source_failing(ap, source, status))

        def exhausted() -> NoReturn:
            deadline = deadline_text(p)
            message = messages.source_exhausted(ap, source, status, deadline)
            p.report(status, message)
            p.event(
                EventReason.SOURCE_DEPLOYMENT_FAILED,
                messages.source_failed_event(source, status),
            )
            raise TerminalError(message)

        retry_failed_deployment(p, model_id, deployment, exhausted)
    if status == INACTIVE:
        try:
            p.deps.baseten.activate_deployment(model_id, deployment.id)
        except BasetenAPIError as error:
            raise_if_model_gone(error)
            p.report(FAILED, messages.source_activate_failed(ap, source, error))
            raise RequeueAfter(timing.poll) from error
        p.report(ACTIVATING, messages.waiting_for_source(ap, source, ACTIVATING))
        raise RequeueAfter(timing.poll)
    if status in SOURCE_IN_PROGRESS:
        p.report(status, messages.waiting_for_source(ap, source, status))
    else:
        p.report(status, messages.waiting_for_source_status(ap, source, status))
    if status == BUILD_STOPPED:
        # Stopped by a person: nothing to wait for unless the build is restarted in the
        # Baseten UI, which the steady period's look notices.
        raise RequeueAfter(p.steady_period, stalled=True)
    raise RequeueAfter(timing.poll)


# --- step 14 -----------------------------------------------------------------------------


def _promote(p: Pass, model_id: str, ap: str, source: str, deployment: DeploymentV1) -> NoReturn:
    p.report(PROMOTING_DEPLOYMENT, messages.promoting_source(ap, source, p.env))
    # On record before the call: a promotion started by a pass that then crashed shows, and
    # is known as this CR's own (section 14 holds and judges only those).
    p.record_promoted_source(source, deployment.id)
    p.persist_intent()
    settings = p.spec.environment.promotion_settings
    scale_down = settings.scale_down_previous_deployment if settings else None
    preserve = settings.preserve_instance_type if settings else None
    try:
        promoted: DeploymentV1 = p.deps.baseten.promote(
            model_id,
            p.env,
            deployment.id,
            scale_down_previous_deployment=scale_down is not False,
            preserve_env_instance_type=preserve is not False,
        )
    except BasetenAPIError as error:
        raise_if_model_gone(error)
        message = messages.promotion_failed(ap, source, p.env, error)
        p.report(FAILED, message)
        p.event(EventReason.PROMOTION_FAILED, messages.promotion_failed_event(source, p.env, error))
        raise ReconcileError(message) from error
    p.event(EventReason.DEPLOYMENT_PROMOTED, messages.promoted_event(source, p.env))
    p.report(PROMOTING, messages.promoted(ap, source, p.env, promoted.status))
    p.track_candidate(promoted)
    analysis = p.spec.promotion.analysis if p.spec.promotion is not None else None
    if analysis is not None:
        begin(p, promoted, analysis)  # section 14: judged from its first step
    raise RequeueAfter(p.deps.timing.poll)
