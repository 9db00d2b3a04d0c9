"""Section 8, fail closed: an orphan only when Baseten says so, never because a field is missing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from baseten_operator.baseten.models import DeploymentV1, EnvironmentV1
from baseten_operator.runtime.controller import Result

OLD = datetime(2026, 1, 1, tzinfo=UTC) - timedelta(days=100)
STEADY = "active: src (3 replicas, min:1 max:5) in production environment"
CLEANUP = {
    "intervalMinutes": 10,
    "scaleToZero": True,
    "delete": True,
    "deleteAfterDays": 7,
    "minToKeep": 0,
}
EXPLICIT = {
    "status": "INACTIVE",
    "active_replica_count": 0,
    "is_production": False,
    "is_development": False,
    "environment": None,
    "autoscaling_settings": {"min_replica": 1},
}


def leftover(h, name: str, **members: Any) -> DeploymentV1:
    """A deployment as Baseten answered it: EXPLICIT with members overridden or dropped."""
    body = {"id": f"id-{name}", "name": name, "model_id": "m1", "created_at": OLD.isoformat()}
    body.update({k: v for k, v in {**EXPLICIT, **members}.items() if v is not ...})
    deployment = DeploymentV1.model_validate(body)
    h.baseten.deployments["m1"].append(deployment)
    return deployment


def world(h) -> None:
    h.steady_world()
    h.create(orphanDeploymentCleanup=CLEANUP)


def cleaned(h) -> set[str]:
    scaled = {args[1] for args in h.baseten.called("update_deployment_autoscaling")}
    deleted = {args[1] for args in h.baseten.called("delete_deployment")}
    return scaled | deleted


def test_an_explicitly_unattached_leftover_is_cleaned(h) -> None:
    world(h)
    leftover(h, "old")
    h.run()
    assert cleaned(h) == {"id-old"}


@pytest.mark.parametrize("missing", ["environment", "is_production", "is_development"])
def test_a_deployment_missing_a_member_that_says_it_is_unattached_is_kept(h, missing) -> None:
    world(h)
    leftover(h, "old", **{missing: ...})
    h.run()
    assert cleaned(h) == set()
    assert h.status()["lastCleanupTime"]  # the pass ran; it just found no orphan


def test_a_deployment_attached_to_an_environment_is_never_an_orphan(h) -> None:
    world(h)
    leftover(h, "old", environment="staging")
    h.run()
    assert cleaned(h) == set()


def test_an_environment_without_current_deployment_stops_cleanup_for_the_pass(h) -> None:
    world(h)
    leftover(h, "old")
    h.baseten.environments[("m1", "staging")] = EnvironmentV1.model_validate(
        {"name": "staging", "model_id": "m1", "autoscaling_settings": {"min_replica": 0}}
    )
    h.run()
    assert cleaned(h) == set()
    assert "lastCleanupTime" not in h.status()  # tried again next pass
    h.baseten.environments[("m1", "staging")] = EnvironmentV1.model_validate(
        {"name": "staging", "model_id": "m1", "current_deployment": None}
    )
    h.clock.advance(600)
    h.run()
    assert cleaned(h) == {"id-old"}


def test_a_skipped_cleanup_says_why_in_the_steady_status_and_requeues_as_steady(h) -> None:
    world(h)
    leftover(h, "old")
    h.baseten.environments[("m1", "staging")] = EnvironmentV1.model_validate(
        {"name": "staging", "model_id": "m1", "autoscaling_settings": {"min_replica": 0}}
    )
    assert h.run() == Result(requeue_after=h.steady_period())
    assert h.word() == "ACTIVE"
    assert h.message() == (
        f"{STEADY} | orphan cleanup skipped: what environment staging serves is unknown "
        "(Baseten answered without current_deployment)"
    )
    assert h.events == []
    # The next steady pass tries again, gets the same answer and has nothing new to write.
    h.clock.advance(h.steady_period())
    assert h.run() == Result(requeue_after=h.steady_period())
    assert h.writes == 0
    assert cleaned(h) == set()
    # Once Baseten's answer is complete, the cleanup runs and the message is steady again.
    h.baseten.environments[("m1", "staging")] = EnvironmentV1.model_validate(
        {"name": "staging", "model_id": "m1", "current_deployment": None}
    )
    h.clock.advance(h.steady_period())
    h.run()
    assert cleaned(h) == {"id-old"}
    assert h.message() == STEADY
