"""Section 4: a failed deployment's last error lines, once per failure, never in the way of
its retries."""

from __future__ import annotations

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import LogV1
from baseten_operator.controller.basetenmodel.failures import (
    EXCERPT_BYTES,
    EXCERPT_LINES,
    bounded_excerpt,
)
from baseten_operator.runtime.logging import register_secret

from .test_s4_retries import failing_source

# A value the operator holds as a secret (registered as the API keys are).
LEAKED = "sk-live-4f1c9e2a7b"


def test_the_error_lines_go_in_status_and_the_event(h) -> None:
    source = failing_source(h, "BUILD_FAILED")
    h.baseten.add_log(source.id, "Collecting torch==9.9", level="INFO")
    h.baseten.add_log(source.id, "ERROR: no version of torch satisfies torch==9.9")
    h.baseten.add_log(source.id, "build step 4/9 failed: pip exited with status 1")
    h.run()
    failure = h.status()["lastFailure"]
    assert failure == {
        "deploymentID": source.id,
        "reason": "BUILD_FAILED",
        "excerpt": (
            "ERROR: no version of torch satisfies torch==9.9\n"
            "build step 4/9 failed: pip exited with status 1"
        ),
        "time": "2026-01-01T00:00:00Z",
    }
    assert h.event("DeploymentFailed") == (
        "Warning",
        "Deployment src is BUILD_FAILED: ERROR: no version of torch satisfies torch==9.9 | "
        "build step 4/9 failed: pip exited with status 1",
    )
    (read,) = h.baseten.called("get_deployment_logs")
    assert read == ("m1", source.id, "ERROR", EXCERPT_LINES, "desc")
    # Written with the failure's start, before the retry call.
    assert h.kube.status_writes[0]["lastFailure"] == failure
    assert h.baseten.called("retry_deployment") == [("m1", source.id)]


def test_read_once_per_failure_not_once_per_retry(h) -> None:
    source = failing_source(h, "DEPLOY_FAILED")
    h.baseten.add_log(source.id, "CUDA out of memory")
    h.run()
    for _ in range(3):  # the retries fail the same way
        h.clock.advance(1800)  # past every backoff, inside the 2h deadline
        h.run()
        assert "DeploymentFailed" not in h.reasons()
    assert len(h.baseten.called("retry_deployment")) == 4
    assert len(h.baseten.called("get_deployment_logs")) == 1
    assert (
        h.recorder.events.count(
            (
                "Warning",
                "DeploymentFailed",
                "Deployment src is " "DEPLOY_FAILED: CUDA out of memory",
            )
        )
        == 1
    )


def test_failing_in_another_state_is_a_new_failure(h) -> None:
    source = failing_source(h, "BUILD_FAILED")
    h.baseten.add_log(source.id, "build broke")
    h.run()
    h.baseten.deployments["m1"] = [
        d.model_copy(update={"status": "DEPLOY_FAILED"}) if d.id == source.id else d
        for d in h.baseten.deployments["m1"]
    ]
    h.baseten.add_log(source.id, "readiness probe failed")
    h.clock.advance(3600)
    h.run()
    assert h.status()["lastFailure"]["reason"] == "DEPLOY_FAILED"
    assert h.status()["lastFailure"]["excerpt"] == "build broke\nreadiness probe failed"
    assert h.event("DeploymentFailed")[1].startswith("Deployment src is DEPLOY_FAILED: ")


@pytest.mark.parametrize(
    "error", [BasetenAPIError(500, "logs down"), BasetenAPIError(None, "malformed answer")]
)
def test_unreadable_logs_change_no_retry(h, error) -> None:
    failing_source(h)
    h.baseten.fail("get_deployment_logs", error)
    h.run()
    assert h.status()["lastFailure"]["excerpt"] == (
        f"the deployment's logs could not be read: {error}"
    )
    assert h.status()["deploymentRetryCount"] == 1
    assert h.status()["nextRetryTime"] == "2026-01-01T00:02:00Z"  # as without the failure
    assert h.event("DeploymentRetried")[1] == "Retried deployment src (was BUILD_FAILED, attempt 1)"
    h.clock.advance(3600)
    h.run()  # said once: not read again
    assert len(h.baseten.called("get_deployment_logs")) == 1


def test_no_error_lines_is_said(h) -> None:
    source = failing_source(h, "FAILED")
    h.baseten.add_log(source.id, "starting", level="INFO")
    h.run()
    assert h.status()["lastFailure"]["excerpt"] == "no error-level lines in the deployment's logs"


def test_secrets_are_masked(h) -> None:
    register_secret(LEAKED)
    source = failing_source(h)
    h.baseten.add_log(source.id, f"401 from huggingface with token {LEAKED}")
    h.baseten.add_log(source.id, "GET /v1/x Authorization: Bearer abc.def-123 refused")
    h.run()
    excerpt = h.status()["lastFailure"]["excerpt"]
    assert LEAKED not in excerpt and "abc.def-123" not in excerpt
    assert excerpt == (
        "401 from huggingface with token [redacted]\n"
        "GET /v1/x Authorization: Bearer [redacted] refused"
    )
    assert LEAKED not in h.event("DeploymentFailed")[1]


def line(message: str) -> LogV1:
    return LogV1(timestamp="0", message=message, level="ERROR")


def test_the_excerpt_keeps_the_newest_lines_that_fit() -> None:
    newest_first = [line(f"error {n} " + "x" * 300) for n in range(9, 0, -1)]
    excerpt = bounded_excerpt(newest_first)
    assert len(excerpt.encode()) <= EXCERPT_BYTES
    # Three 310-byte lines fit in 1 KiB, oldest first, and they are the newest three.
    assert [text.split()[1] for text in excerpt.splitlines()] == ["7", "8", "9"]
    assert bounded_excerpt([line("a"), line("b"), line("c")]) == "c\nb\na"
    assert len(bounded_excerpt([line(str(n)) for n in range(20)]).splitlines()) == EXCERPT_LINES


def test_one_long_line_is_cut_to_the_bound() -> None:
    excerpt = bounded_excerpt([line("é" * 2000)])
    assert len(excerpt.encode()) <= EXCERPT_BYTES
    assert excerpt.endswith("…")


def test_observe_explains_a_failed_current_by_reading_only(h) -> None:
    current = h.steady_world(status="DEPLOY_FAILED")
    h.baseten.add_log(current.id, "liveness probe failed")
    h.create(
        {
            "modelName": "my-llm",
            "mode": "Observe",
            "sourceDeploymentName": "src",
            "environment": {"name": "production"},
        }
    )
    h.run()
    assert h.status()["lastFailure"]["excerpt"] == "liveness probe failed"
    assert h.reasons() == ["DeploymentFailed"]
    h.clock.advance(30)
    h.run()
    assert h.reasons() == []
    assert len(h.baseten.called("get_deployment_logs")) == 1
    assert h.baseten.writes == []
