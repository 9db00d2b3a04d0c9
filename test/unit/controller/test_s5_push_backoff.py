"""Section 5: a failed truss push backs off as the Go operator's newest version does.

TRUSS_PUSH_FAILED with trussPushFailureCount, trussPushLastError and trussPushNextRetryTime;
2m doubling to 30m with 0-50% jitter and no deadline; a new name pushes at once; the
deployment-retry fields of section 4 are never touched by a push.
"""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.controller.basetenmodel.status import parse_status
from baseten_operator.truss.naming import deployment_name

SCRIPT = "#!/bin/bash\necho ready\n"
KEY = "default/my-model"
PUSH_FIELDS = ("trussPushFailureCount", "trussPushLastError", "trussPushNextRetryTime")
RETRY_FIELDS = ("firstDeploymentFailureTime", "deploymentRetryCount", "nextRetryTime")


def truss_spec(image: str = "registry.example.com/team/vllm:0.16.0") -> dict[str, Any]:
    return {
        "modelName": "my-llm",
        "trussConfig": {
            "resources": {"accelerator": "L4"},
            "baseImage": {"image": image},
            "dockerServer": {
                "startCommand": "sh -c 'bash /app/data/setup.sh'",
                "readinessEndpoint": "/health",
                "livenessEndpoint": "/health",
                "predictEndpoint": "/v1/completions",
                "serverPort": 8000,
            },
            "setupScript": {"inline": SCRIPT},
        },
        "environment": {"name": "production"},
    }


NAME = deployment_name(truss_spec()["trussConfig"], SCRIPT)


def fail_push(h, error: str = "truss push failed: registry timeout") -> None:
    """The push on record fails; the next pass collects the outcome."""
    name = h.pusher.launched[-1].deployment_name
    h.pusher.finish(KEY, name, error=error)


@pytest.fixture
def pushed(h):
    """A model whose first push has been launched."""
    h.baseten.add_model()
    h.create(truss_spec())
    h.run()
    assert [r.deployment_name for r in h.pusher.launched] == [NAME]
    return h


def test_a_failed_push_is_recorded_and_waited_for(pushed, iso_time) -> None:
    h = pushed
    launched_at = h.status()["trussPushTime"]
    assert launched_at
    fail_push(h)
    result = h.run()
    assert result.requeue_after == 120
    status = h.status()
    assert status["trussPushStatus"] == "TRUSS_PUSH_FAILED"
    assert status["trussPushFailureCount"] == 1
    assert status["trussPushLastError"] == "truss push failed: registry timeout"
    assert status["trussPushNextRetryTime"] == iso_time(h.clock.now() + 120)
    assert "trussPushTime" not in status
    assert not [f for f in RETRY_FIELDS if f in status]
    assert h.word() == "FAILED"
    assert h.message() == (
        f"truss push failed for {NAME} (attempt 1): truss push failed: registry timeout; "
        f"next retry at {iso_time(h.clock.now() + 120)}"
    )
    assert h.event("TrussPushFailed") == (
        "Warning",
        f"Truss push for '{NAME}' failed (attempt 1), retrying in 2m0s: "
        "truss push failed: registry timeout",
    )


def test_passes_within_the_backoff_push_nothing_and_write_nothing(pushed) -> None:
    h = pushed
    fail_push(h)
    h.run()
    for _ in range(5):
        h.clock.advance(20)
        result = h.run()
        assert result.requeue_after is not None and result.requeue_after > 0
        assert h.writes == 0 and h.events == []
    assert len(h.pusher.launched) == 1
    assert result.requeue_after == 20  # at the next retry time, not later


def test_after_the_backoff_it_pushes_again_and_the_count_keeps_growing(pushed) -> None:
    h = pushed
    fail_push(h)
    h.run()
    h.clock.advance(120)
    assert h.run().requeue_after == h.timing.push_poll
    assert [r.deployment_name for r in h.pusher.launched] == [NAME, NAME]
    status = h.status()
    assert status["trussPushStatus"] == "TRUSS_PUSHING"
    assert status["trussPushFailureCount"] == 1  # kept while the retry runs
    fail_push(h, "truss push failed: again")
    assert h.run().requeue_after == 240  # 2m doubled
    assert h.status()["trussPushFailureCount"] == 2
    assert h.status()["trussPushLastError"] == "truss push failed: again"
    assert "(attempt 2), retrying in 4m0s" in h.event("TrussPushFailed")[1]


def test_the_backoff_is_capped_at_30_minutes_with_jitter_and_no_deadline(h, iso_time) -> None:
    h.baseten.add_model()
    h.jitter = 0.5  # U[0,1) = 0.5: a quarter more
    now = h.clock.now()
    h.create(
        truss_spec(),
        status={
            "modelID": "m1",
            "sourceDeploymentName": NAME,
            "trussPushStatus": "TRUSS_PUSHING",
            "trussPushTime": iso_time(now - 60),
            "trussConfigHash": NAME.rsplit("-", 1)[1],
            "trussPushFailureCount": 40,  # hours of failures: still no deadline
            "trussPushLastError": "earlier",
            "trussPushNextRetryTime": iso_time(now - 120),
        },
    )
    h.pusher.finish(KEY, NAME, error="truss push failed: still down")
    assert h.run().requeue_after == 30 * 60 * 1.25
    assert h.status()["trussPushFailureCount"] == 41
    assert "(attempt 41), retrying in 37m30s" in h.event("TrussPushFailed")[1]


def test_a_changed_config_pushes_at_once_and_counts_afresh(pushed) -> None:
    h = pushed
    fail_push(h)
    h.run()
    h.edit(lambda obj: obj.__setitem__("spec", truss_spec("registry.example.com/team/vllm:0.17.0")))
    assert h.run().requeue_after == h.timing.push_poll
    new_name = h.pusher.launched[-1].deployment_name
    assert new_name.startswith("depl-vllm-0.17.0-")
    status = h.status()
    assert status["trussPushStatus"] == "TRUSS_PUSHING"
    assert status["sourceDeploymentName"] == new_name
    assert not [f for f in PUSH_FIELDS if f in status]
    fail_push(h)
    h.run()
    assert h.status()["trussPushFailureCount"] == 1


def test_success_clears_every_failure_field(pushed) -> None:
    h = pushed
    fail_push(h)
    h.run()
    h.clock.advance(120)
    h.run()
    h.pusher.finish(KEY, NAME, model_id="m1")
    h.baseten.add_deployment(name=NAME, status="BUILDING")
    h.run()
    status = h.status()
    assert status["trussPushStatus"] == "TRUSS_PUSH_DONE"
    assert not [f for f in PUSH_FIELDS if f in status]


def test_a_deployment_found_by_name_clears_the_failure(pushed) -> None:
    # Pushed after all (the failure was the upload's answer, not the build's), or by
    # another operator: the name exists, nothing to retry.
    h = pushed
    fail_push(h)
    h.run()
    h.baseten.add_deployment(name=NAME, status="BUILDING")
    h.run()
    status = h.status()
    assert status["trussPushStatus"] == "TRUSS_PUSH_DONE"
    assert not [f for f in PUSH_FIELDS if f in status]
    assert len(h.pusher.launched) == 1


def test_a_long_error_is_cut_to_512_bytes_on_a_character_boundary(pushed) -> None:
    h = pushed
    error = "é" * 300 + "tail"  # 604 bytes; byte 512 falls inside no character
    fail_push(h, error)
    h.run()
    kept = h.status()["trussPushLastError"]
    assert kept == "é" * 256 + "..."
    error = "x" + "é" * 300  # byte 512 falls inside a character: it is dropped whole
    h.clock.advance(120)
    h.run()
    fail_push(h, error)
    h.run()
    assert h.status()["trussPushLastError"] == "x" + "é" * 255 + "..."


def test_a_go_operator_status_in_backoff_is_kept_after_a_migration(h, iso_time) -> None:
    """The Go operator wrote this status: the backoff it started holds (issue 15 item 4)."""
    h.baseten.add_model()
    now = h.clock.now()
    go_status = {
        "modelID": "m1",
        "sourceDeploymentName": NAME,
        "trussConfigHash": NAME.rsplit("-", 1)[1],
        "trussPushStatus": "TRUSS_PUSH_FAILED",
        "trussPushFailureCount": 3,
        "trussPushLastError": "truss push failed: quota exceeded",
        "trussPushNextRetryTime": iso_time(now + 300),
        "deploymentStatus": "FAILED",
        "message": "from the Go operator",
    }
    assert parse_status(go_status).truss_push_failure_count == 3
    h.create(truss_spec(), status=go_status)
    assert h.run().requeue_after == 300
    assert h.pusher.launched == []
    assert h.message() == (
        f"truss push failed for {NAME} (attempt 3): truss push failed: quota exceeded; "
        f"next retry at {iso_time(now + 300)}"
    )
    stored = h.status()
    for field in (*PUSH_FIELDS, "trussPushStatus"):
        assert stored[field] == go_status[field]
    h.clock.advance(300)
    h.run()
    assert [r.deployment_name for r in h.pusher.launched] == [NAME]
    fail_push(h)
    h.run()
    assert h.status()["trussPushFailureCount"] == 4
