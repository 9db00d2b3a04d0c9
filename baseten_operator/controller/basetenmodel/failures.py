"""Why a deployment failed (docs/contract.md 4): its last error-level log lines, read once per
failure into `status.lastFailure` and the DeploymentFailed Event.

One failure is one deployment in one failed state through one retry episode: a retry that
fails the same way again is the same failure (its attempts are counted in
`deploymentRetryCount`), one that fails in another state is a new one. The read is
bounded (`EXCERPT_LINES` lines, `EXCERPT_BYTES` bytes), masked as every error is, and
whatever it finds, or fails to find, is said once: reading the logs never changes the
retry schedule.
"""

from __future__ import annotations

import structlog

from baseten_operator.api.constants import EventReason
from baseten_operator.api.types import LastFailure
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import DeploymentV1, LogV1
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.runtime.clock import parse_rfc3339, rfc3339
from baseten_operator.runtime.logging import redact
from baseten_operator.runtime.text import cut_bytes

log = structlog.get_logger(__name__)

EXCERPT_LINES = 5
EXCERPT_BYTES = 1024
# Baseten serves at most 7 days of logs per query; a failure older than that is read from
# its last 6 (a margin for the clocks' disagreement).
_LOG_WINDOW = 6 * 24 * 3600.0


def explain_failure(p: Pass, model_id: str, deployment: DeploymentV1) -> bool:
    """Say why `deployment` failed, unless this failure was already explained; whether the
    status changed (the caller persists it before going on)."""
    if _explained(p, deployment):
        return False
    excerpt = _excerpt(p, model_id, deployment)
    p.record_failure(
        LastFailure(
            deploymentID=deployment.id,
            reason=deployment.status,
            excerpt=excerpt,
            time=rfc3339(p.deps.clock),
        )
    )
    p.event(
        EventReason.DEPLOYMENT_FAILED,
        messages.deployment_failed_event(deployment.name, deployment.status, excerpt),
    )
    return True


def _explained(p: Pass, deployment: DeploymentV1) -> bool:
    last = p.status.last_failure
    if last is None or last.deployment_id != deployment.id or last.reason != deployment.status:
        return False
    # Within a retry episode, one explanation; a new episode is a new failure.
    episode = parse_rfc3339(p.status.first_deployment_failure_time)
    read = parse_rfc3339(last.time)
    return episode is None or (read is not None and read >= episode)


def _excerpt(p: Pass, model_id: str, deployment: DeploymentV1) -> str:
    now = p.deps.clock.now()
    created = deployment.created_at.timestamp() if deployment.created_at is not None else None
    start = max(created, now - _LOG_WINDOW) if created is not None else now - _LOG_WINDOW
    try:
        lines = p.deps.baseten.get_deployment_logs(
            model_id,
            deployment.id,
            min_level="ERROR",
            limit=EXCERPT_LINES,
            start_ms=int(start * 1000),
            direction="desc",
        )
    except BasetenAPIError as error:
        log.warning("deployment logs unreadable", key=p.key, deployment=deployment.id)
        return cut_bytes(redact(messages.failure_logs_unreadable(error)), EXCERPT_BYTES)
    return bounded_excerpt(lines) or messages.NO_ERROR_LINES


def bounded_excerpt(newest_first: list[LogV1]) -> str:
    """The newest lines that fit in EXCERPT_LINES and EXCERPT_BYTES, oldest first, each
    masked; a single line longer than the whole is cut."""
    kept: list[str] = []
    size = 0
    for line in newest_first[:EXCERPT_LINES]:
        text = redact(line.message.strip())
        if not text:
            continue
        cost = len(text.encode()) + (1 if kept else 0)
        if size + cost > EXCERPT_BYTES:
            if not kept:
                kept.append(cut_bytes(text, EXCERPT_BYTES))
            break
        kept.append(text)
        size += cost
    return "\n".join(reversed(kept))
