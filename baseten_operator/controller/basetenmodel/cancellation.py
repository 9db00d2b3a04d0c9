"""Cancelling this CR's own promotion once the spec no longer wants it (docs/contract.md 3.8,
its last step): a revert, or a forward fix, must not wait for a bad rollout to reach full
traffic first.

Only a candidate this CR recorded as its own (`candidateDeploymentID`) is ever cancelled: a
promotion started in the UI, by CI or by another CR is left to step 12's guard. The cancel is
announced in `cancellingDeploymentID` before the call (a version-checked intent), and
Baseten's acknowledgement in `cancelAcknowledgedTime` after it: a cancel Baseten took is
never sent again, one it refused or failed is retried with backoff (the pass ends in an
error), and a new leader inheriting the record knows which it was.
"""

from __future__ import annotations

from typing import NoReturn

from baseten_operator.api.constants import FAILED, PROMOTING, EventReason
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import (
    CANCELED,
    RAMPING_DOWN,
    DeploymentV1,
    EnvironmentV1,
    InProgressPromotionV1,
)
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.basetenmodel.environment import get_environment, promotion_traffic
from baseten_operator.controller.basetenmodel.source import matches_source
from baseten_operator.controller.basetenmodel.telemetry import count_cancellation
from baseten_operator.controller.basetenmodel.truss_source import (
    SetupScriptError,
    expected_truss_source,
)
from baseten_operator.controller.shared.endings import ReconcileError, RequeueAfter

# Promotion phases in which Baseten itself ended the promotion without the candidate becoming
# current (InProgressPromotionStatusV1): a cancel would change nothing.
ENDED_WITHOUT_CANDIDATE = frozenset({CANCELED, "FAILED"})


def cancel_unwanted_promotion(
    p: Pass, model_id: str, source: str, environment: EnvironmentV1
) -> EnvironmentV1:
    """The environment as the rest of the pass is to see it: without the candidate once
    Baseten cancelled its promotion (or ended it otherwise). Ends the pass while a
    cancellation Baseten took is under way, or when the cancel failed."""
    cancelling = p.status.cancelling_deployment_id
    if (
        cancelling
        # Only on an answer that says what serves: one without it could hide a promotion
        # completed before the cancel landed, which would then be forgotten unsaid.
        and environment.stated("current_deployment")
        and not _unwanted(environment.candidate_deployment, cancelling, source)
    ):
        _cancellation_over(p, environment, cancelling, source)
    candidate = unwanted_candidate(p, environment, source)
    if candidate is None:
        return environment
    phase = _phase(environment)
    if phase in ENDED_WITHOUT_CANDIDATE:
        # Baseten says the candidate will not become current: there is nothing to cancel.
        return _without_candidate(p, environment)
    ap = messages.active_prefix(environment.current_deployment)
    if cancelling == candidate.id and (
        p.status.cancel_acknowledged_time is not None or phase == RAMPING_DOWN
    ):
        # Baseten took our cancel (a ramp-down says so too, when a crash lost the answer):
        # it is never sent again; the pass waits for Baseten to stop the promotion.
        _cancel_under_way(p, ap, candidate, source, environment)
    p.record_cancelling(candidate)
    p.report(PROMOTING, messages.cancelling_promotion(ap, candidate.name, p.env, source))
    p.persist_intent()
    try:
        answer = p.deps.baseten.cancel_promotion(model_id, p.env)
    except BasetenAPIError as error:
        # The intent stays on record, unacknowledged: the retry (rate-limited, with backoff)
        # reads the environment again and cancels again only if the promotion still runs.
        message = messages.cancel_failed(ap, candidate.name, p.env, error)
        p.report(FAILED, message)
        p.event(
            EventReason.PROMOTION_CANCEL_FAILED,
            messages.cancel_failed_event(candidate.name, p.env, error),
        )
        raise ReconcileError(message) from error
    status = str(answer.status)
    count_cancellation(status)
    p.event(
        EventReason.PROMOTION_CANCELLED,
        messages.promotion_cancelled_event(candidate.name, p.env, source),
    )
    if status == RAMPING_DOWN:
        p.record_cancel_acknowledged()
        # What Baseten just said, not the phase read before the call.
        progress = environment.in_progress_promotion or InProgressPromotionV1()
        environment = environment.model_copy(
            update={"in_progress_promotion": progress.model_copy(update={"status": RAMPING_DOWN})}
        )
        p.record_environment(environment)
        _cancel_under_way(p, ap, candidate, source, environment)
    return _without_candidate(p, environment)


def cancel_before_the_source(p: Pass) -> EnvironmentV1 | None:
    """A promotion of this CR's own that the spec's source no longer names is cancelled
    first, before the new source is resolved or pushed: a forward fix whose push waits
    (for secrets, for capacity, in backoff) or fails must not leave the bad version ramping
    meanwhile. The environment as read, when it was (None: it was not)."""
    status = p.status
    model_id = status.model_id
    recorded = status.candidate_deployment_name
    if not model_id or not (status.candidate_deployment_id or status.cancelling_deployment_id):
        return None
    wanted = wanted_source(p)
    if wanted is None:
        return None  # not known without the push's inputs: what the next steps report
    if not status.cancelling_deployment_id and recorded and matches_source(recorded, wanted):
        return None  # the spec still asks for the candidate on record
    environment = get_environment(p, model_id)
    if environment is None:
        return None
    p.record_environment(environment)
    return cancel_unwanted_promotion(p, model_id, wanted, environment)


def wanted_source(p: Pass) -> str | None:
    """The source deployment's name the spec asks for, without pushing it; None when a
    trussConfig's setup script cannot be read (the push step says why)."""
    if p.spec.truss_config is None:
        return p.spec.source_deployment_name
    try:
        return expected_truss_source(p).name
    except SetupScriptError:
        return None


def _without_candidate(p: Pass, environment: EnvironmentV1) -> EnvironmentV1:
    """The promotion is over and its candidate will not become current: the pass goes on as
    if the environment promoted nothing."""
    p.clear_cancelling()
    p.clear_candidate()
    cancelled = environment.model_copy(
        update={"candidate_deployment": None, "in_progress_promotion": None}
    )
    p.record_environment(cancelled)
    return cancelled


def unwanted_candidate(p: Pass, environment: EnvironmentV1, source: str) -> DeploymentV1 | None:
    """The environment's candidate when this CR recorded it as its own and the spec no
    longer asks for it: the promotion Reconcile cancels (and Observe says it would)."""
    candidate = environment.candidate_deployment
    if _unwanted(candidate, p.status.candidate_deployment_id, source):
        return candidate
    return None


def _unwanted(candidate: DeploymentV1 | None, recorded_id: str | None, source: str) -> bool:
    """`candidate` is the deployment recorded as this CR's and the spec no longer asks for it."""
    return (
        candidate is not None
        and bool(recorded_id)
        and candidate.id == recorded_id
        and not matches_source(candidate.name, source)
    )


def _phase(environment: EnvironmentV1) -> str | None:
    promotion = environment.in_progress_promotion
    return promotion.status if promotion is not None else None


def _cancel_under_way(
    p: Pass, ap: str, candidate: DeploymentV1, source: str, environment: EnvironmentV1
) -> NoReturn:
    """Nothing else is promoted until Baseten has stopped the promotion it took the cancel
    of: moved the traffic back (RAMPING_DOWN), or left another phase."""
    phase = _phase(environment)
    if phase == RAMPING_DOWN:
        traffic = promotion_traffic(environment)
        message = messages.cancel_ramping_down(ap, candidate.name, p.env, source, traffic)
    else:
        message = messages.cancel_pending(ap, candidate.name, p.env, source, phase)
    p.report(PROMOTING, message)
    raise RequeueAfter(p.deps.timing.poll)


def _cancellation_over(p: Pass, environment: EnvironmentV1, cancelling: str, source: str) -> None:
    """Baseten no longer promotes the deployment being cancelled (ramped down, completed,
    or the spec asks for it again): forget the cancellation."""
    current = environment.current_deployment
    candidate = environment.candidate_deployment
    if (
        current is not None
        and current.id == cancelling
        and not matches_source(current.name, source)
    ):
        # Baseten completed the promotion before the cancel landed: the steps that follow
        # promote the spec's source as they would have without a cancellation.
        p.event(
            EventReason.PROMOTION_CANCEL_FAILED,
            messages.cancel_too_late_event(current.name, p.env, source),
        )
    if p.status.candidate_deployment_id == cancelling and (
        candidate is None or candidate.id != cancelling
    ):
        # Gone from the environment: a candidate never to become current is not "now active".
        p.clear_candidate()
    p.clear_cancelling()
