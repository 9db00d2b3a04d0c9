"""Retries of failed deployments (docs/contract.md section 4).

The bookkeeping (firstDeploymentFailureTime, deploymentRetryCount, nextRetryTime)
belongs to one failing deployment: it starts fresh when the pass moves on to another
source or candidate (`Pass.track_source`, `Pass.track_candidate`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

import structlog

from baseten_operator.api.constants import BUILDING, RETRYABLE_FAILURES, EventReason
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import DeploymentV1
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.basetenmodel.telemetry import count_retry
from baseten_operator.controller.shared.endings import RequeueAfter
from baseten_operator.controller.shared.timing import go_duration
from baseten_operator.runtime.clock import parse_rfc3339

log = structlog.get_logger(__name__)


def deadline_text(p: Pass) -> str:
    """The retry deadline as messages quote it: nominal, whatever the time scale."""
    timing = p.deps.timing
    return go_duration(timing.nominal(timing.retry_deadline))


def retry_failed_deployment(
    p: Pass, model_id: str, deployment: DeploymentV1, exhausted: Callable[[], NoReturn]
) -> NoReturn:
    """Section 4 for a source or candidate in FAILED, DEPLOY_FAILED or BUILD_FAILED.

    The caller has already set the status describing the failure; `exhausted` gives the
    caller's terminal outcome once the deadline has passed. Always ends the pass.
    """
    deps = p.deps
    timing = deps.timing
    now = deps.clock.now()
    status = p.status
    first = parse_rfc3339(status.first_deployment_failure_time)
    if first is None:
        first = now
        p.record_first_failure(now)
        # On record before anything else: a crash now must not restart the 2h window.
        p.persist_intent()

    if now - first >= timing.retry_deadline:
        p.event(
            EventReason.DEPLOYMENT_RETRY_EXHAUSTED,
            messages.retry_exhausted_event(deployment.name, deadline_text(p)),
        )
        count_retry("exhausted")
        exhausted()

    next_retry = parse_rfc3339(status.next_retry_time)
    if next_retry is not None and now < next_retry:
        raise RequeueAfter(next_retry - now)

    # Another BasetenModel on the same model may have retried it already.
    try:
        fresh = deps.baseten.get_deployment(model_id, deployment.id)
    except BasetenAPIError as error:
        if not error.is_not_found:
            raise
        raise RequeueAfter(timing.poll) from error
    if fresh.status not in RETRYABLE_FAILURES:
        raise RequeueAfter(timing.poll)

    attempt = (status.deployment_retry_count or 0) + 1
    try:
        outcome = deps.baseten.retry_deployment(model_id, deployment.id)
    except BasetenAPIError as error:
        p.event(
            EventReason.DEPLOYMENT_RETRY_FAILED,
            messages.retry_failed_event(deployment.name, error),
        )
        count_retry("error")
    else:
        if outcome.retried:
            p.event(
                EventReason.DEPLOYMENT_RETRIED,
                messages.retried_event(deployment.name, fresh.status, attempt),
            )
            p.report(BUILDING, messages.retrying(deployment.name, fresh.status, attempt))
            count_retry("retried")
        else:
            p.event(
                EventReason.DEPLOYMENT_RETRY_FAILED,
                messages.retry_declined_event(deployment.name, outcome.reason),
            )
            count_retry("declined")

    _schedule_next_retry(p, now)
    log.info("deployment retry", key=p.key, deployment=deployment.name, attempt=attempt)
    raise RequeueAfter(timing.poll)


def _schedule_next_retry(p: Pass, now: float) -> float:
    """Count the attempt just made and set nextRetryTime after its backoff; the delay."""
    attempt = (p.status.deployment_retry_count or 0) + 1
    delay = p.deps.timing.retry_delay(attempt, p.deps.random())
    p.record_retry(attempt, now + delay)
    return delay
