"""Section 4: retries of FAILED, DEPLOY_FAILED and BUILD_FAILED deployments."""

from __future__ import annotations

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import RetryResult
from baseten_operator.runtime.controller import TerminalError

AP = "active: old (3 replicas) | "


def failing_source(h, status: str = "BUILD_FAILED"):
    h.baseten.add_model()
    old = h.baseten.add_deployment(name="old", active_replica_count=3)
    source = h.baseten.add_deployment(name="src", status=status)
    h.baseten.add_environment(current=old)
    h.create()
    return source


@pytest.mark.parametrize("status", ["FAILED", "DEPLOY_FAILED", "BUILD_FAILED"])
def test_first_detection_retries(h, status: str) -> None:
    source = failing_source(h, status)
    assert h.run().requeue_after == 30
    assert h.baseten.called("retry_deployment") == [("m1", source.id)]
    assert h.event("DeploymentRetried") == (
        "Normal",
        f"Retried deployment src (was {status}, attempt 1)",
    )
    assert h.word() == "BUILDING"
    assert h.message() == f"retrying deployment src (was {status}, attempt 1)"
    status_ = h.status()
    assert status_["firstDeploymentFailureTime"] == "2026-01-01T00:00:00Z"
    assert status_["deploymentRetryCount"] == 1
    assert status_["nextRetryTime"] == "2026-01-01T00:02:00Z"  # 2m, no jitter
    # first failure persisted first, then the outcome
    assert h.writes == 2
    assert h.kube.status_writes[0]["firstDeploymentFailureTime"] == "2026-01-01T00:00:00Z"


def test_before_next_retry_time_requeues_at_it_and_does_nothing(h) -> None:
    failing_source(h)
    h.run()
    h.clock.advance(50)
    calls = len(h.baseten.called("retry_deployment"))
    assert h.run().requeue_after == 70
    assert len(h.baseten.called("retry_deployment")) == calls
    assert h.events == []


def test_backoff_doubles_with_jitter_and_caps(h) -> None:
    failing_source(h)
    h.jitter = 0.5  # U = 0.5 -> jitter 25%
    delays = []
    for _ in range(6):
        h.run()
        next_retry = h.status()["nextRetryTime"]
        from datetime import datetime

        delays.append(datetime.fromisoformat(next_retry).timestamp() - h.clock.now())
        h.clock.advance(delays[-1])
    assert delays == [150, 300, 600, 1200, 2250, 2250]


def test_someone_else_already_retried(h) -> None:
    source = failing_source(h)
    original_get = h.baseten.get_deployment

    def recovered(model_id, deployment_id):
        original_get(model_id, deployment_id)
        return source.model_copy(update={"status": "BUILDING"})

    h.baseten.get_deployment = recovered
    assert h.run().requeue_after == 30
    assert h.baseten.called("retry_deployment") == []


def test_retry_http_error(h) -> None:
    failing_source(h)
    h.baseten.fail("retry_deployment", BasetenAPIError(429, "Rate limit exceeded"))
    assert h.run().requeue_after == 30
    assert h.event("DeploymentRetryFailed") == (
        "Warning",
        "Failed to retry deployment src: HTTP 429: Rate limit exceeded",
    )
    assert h.status()["deploymentRetryCount"] == 1
    assert h.word() == "BUILD_FAILED"
    assert h.message() == f"{AP}unable to promote: source deployment src is BUILD_FAILED"


def test_retry_declined(h) -> None:
    failing_source(h)
    h.baseten.retry_result = RetryResult(retried=False, reason="not retryable")
    h.run()
    assert h.event("DeploymentRetryFailed") == (
        "Warning",
        "Retry declined for deployment src: not retryable",
    )
    assert h.status()["deploymentRetryCount"] == 1
    assert h.status()["nextRetryTime"] == "2026-01-01T00:02:00Z"


def test_source_exhausted_after_two_hours(h) -> None:
    failing_source(h)
    h.edit(
        lambda o: o.__setitem__(
            "status",
            {
                "firstDeploymentFailureTime": "2025-12-31T22:00:00Z",
                "modelID": "m1",
                "sourceDeploymentName": "src",
            },
        )
    )
    with pytest.raises(TerminalError):
        h.run()
    assert h.word() == "BUILD_FAILED"
    assert h.message() == (
        f"{AP}unable to promote: source deployment src is BUILD_FAILED "
        "(retries exhausted after 2h0m0s)"
    )
    assert h.event("DeploymentRetryExhausted") == (
        "Warning",
        "Deployment src has been failing for over 2h0m0s, giving up retries",
    )
    assert h.event("SourceDeploymentFailed") == (
        "Warning",
        'Source deployment "src" is in BUILD_FAILED state (retries exhausted)',
    )
    assert h.baseten.called("retry_deployment") == []


def test_candidate_failure_retries_then_exhausts(h) -> None:
    h.baseten.add_model()
    candidate = h.baseten.add_deployment(name="src", status="DEPLOY_FAILED", id="c1")
    h.baseten.add_environment(candidate=candidate)
    h.create()
    h.run()
    assert (
        h.event("DeploymentRetried")[1] == "Retried deployment src (was DEPLOY_FAILED, attempt 1)"
    )
    h.clock.advance(2 * 3600)
    with pytest.raises(TerminalError):
        h.run()
    assert h.word() == "DEPLOY_FAILED"
    assert h.message() == "candidate src failed: DEPLOY_FAILED (retries exhausted after 2h0m0s)"
    assert h.event("PromotionFailed") == (
        "Warning",
        "Candidate deployment src failed with status DEPLOY_FAILED (retries exhausted)",
    )


def test_a_different_failing_deployment_starts_fresh(h) -> None:
    failing_source(h)
    h.run()
    h.clock.advance(3600)
    h.baseten.add_deployment(name="src2", status="FAILED")
    h.edit(lambda o: o["spec"].__setitem__("sourceDeploymentName", "src2"))
    h.run()
    assert h.status()["firstDeploymentFailureTime"] == "2026-01-01T01:00:00Z"
    assert h.status()["deploymentRetryCount"] == 1
