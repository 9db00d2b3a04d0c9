"""Cancelling this CR's own promotion once the spec no longer wants it (docs/contract.md 3.8,
its last step): a revert, or a forward fix, must not wait for a bad rollout to reach full
traffic first.

Only a candidate this CR recorded as its own (`candidateDeploymentID`) is ever cancelled: a
promotion started in the UI, by CI or by another CR is left to step 12's guard. The cancel is
announced in `cancellingDeploymentID` before the call (a version-checked intent), so a new
leader inheriting it knows whether Baseten is already ramping the candidate down.
"""

from __future__ import annotations

from typing import NoReturn

from baseten_operator.api.constants import FAILED, PROMOTING, EventReason
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import (
    RAMPING_DOWN,
    DeploymentV1,
    EnvironmentV1,
    InProgressPromotionV1,
)
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.basetenmodel.environment import promotion_traffic
from baseten_operator.controller.basetenmodel.source import matches_source
from baseten_operator.controller.basetenmodel.telemetry import count_cancellation
from baseten_operator.controller.shared.endings import ReconcileError, RequeueAfter


def cancel_unwanted_promotion(
    p: Pass, model_id: str, source: str, environment: EnvironmentV1
) -> EnvironmentV1:
    """The environment as the rest of the pass is to see it: without the candidate once
    Baseten cancelled its promotion. Ends the pass while a cancellation ramps down, or
    when the cancel failed."""
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
    ap = messages.active_prefix(environment.current_deployment)
    if cancelling == candidate.id and _phase(environment) == RAMPING_DOWN:
        # Our cancel landed: Baseten is moving the traffic back. Calling again would be a
        # second cancel of the same promotion.
        _ramping_down(p, ap, candidate, source, environment)
    p.record_cancelling(candidate)
    p.report(PROMOTING, messages.cancelling_promotion(ap, candidate.name, p.env, source))
    p.persist_intent()
    try:
        answer = p.deps.baseten.cancel_promotion(model_id, p.env)
    except BasetenAPIError as error:
        # The intent stays on record: the next pass reads the environment again and cancels
        # again only if the promotion still runs and is not ramping down.
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
        # What Baseten just said, not the phase read before the call.
        progress = environment.in_progress_promotion or InProgressPromotionV1()
        environment = environment.model_copy(
            update={"in_progress_promotion": progress.model_copy(update={"status": RAMPING_DOWN})}
        )
        p.record_environment(environment)
        _ramping_down(p, ap, candidate, source, environment)
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


def _ramping_down(
    p: Pass, ap: str, candidate: DeploymentV1, source: str, environment: EnvironmentV1
) -> NoReturn:
    """Nothing else is promoted until Baseten has moved the traffic back."""
    traffic = promotion_traffic(environment)
    p.report(PROMOTING, messages.cancel_ramping_down(ap, candidate.name, p.env, source, traffic))
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
