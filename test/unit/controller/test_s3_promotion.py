"""Section 3 steps 9 to 14: current, candidate, double-promote guard, source, promote."""

from __future__ import annotations

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.runtime.controller import Result

AP = "active: old (3 replicas) | "


def world(h, *, source_status: str | None = "ACTIVE", candidate=None):
    """Model m1, production serving `old`, and the spec's source `src` in `source_status`."""
    h.baseten.add_model()
    old = h.baseten.add_deployment(name="old", active_replica_count=3, environment="production")
    source = None
    if source_status is not None:
        source = h.baseten.add_deployment(name="src", status=source_status)
    h.baseten.add_environment(current=old, candidate=candidate, autoscaling={"min_replica": 1})
    return old, source


# --- step 10: current matches ---------------------------------------------------------------


def test_steady_state(h) -> None:
    h.steady_world()
    h.create()
    assert h.run().requeue_after == h.steady_period()
    assert h.word() == "ACTIVE"
    assert h.message() == "active: src (3 replicas, min:1 max:5) in production environment"
    assert h.status()["activeDeploymentName"] == "src"
    assert h.status()["activeReplicaCount"] == 3
    assert h.baseten.writes == []


def test_steady_state_scaled_to_zero_names_the_status(h) -> None:
    h.steady_world(
        status="SCALED_TO_ZERO", replicas=0, autoscaling={"min_replica": 0, "max_replica": 5}
    )
    h.create()
    h.run()
    assert h.word() == "SCALED_TO_ZERO"
    assert h.message() == (
        "active: src (0 replicas, min:0 max:5, SCALED_TO_ZERO) in production environment"
    )


def test_steady_state_without_autoscaling_omits_min_max(h) -> None:
    h.baseten.add_model()
    current = h.baseten.add_deployment(name="src", active_replica_count=2)
    h.baseten.add_environment(current=current)
    h.create()
    h.run()
    assert h.message() == "active: src (2 replicas) in production environment"


def test_promoted_copy_matches_by_prefix(h) -> None:
    h.steady_world(name="src.1775156532")
    h.create()
    h.run()
    assert h.word() == "ACTIVE"
    assert h.message().startswith("active: src.1775156532 (3 replicas")


def test_other_names_sharing_a_prefix_do_not_match(h) -> None:
    h.steady_world(name="src-v2")
    h.baseten.add_deployment(name="src", status="BUILDING")
    h.create()
    h.run()
    assert h.message() == (
        "active: src-v2 (3 replicas) | waiting to promote: source deployment src is BUILDING"
    )


def test_candidate_becoming_current_emits_deployment_active_and_clears_candidate(h) -> None:
    h.steady_world()
    h.create(status={"candidateDeploymentID": "d9", "candidateDeploymentName": "src"})
    h.run()
    assert h.event("DeploymentActive") == ("Normal", "Deployment src is now active in production")
    assert "candidateDeploymentID" not in h.status()
    assert "candidateDeploymentName" not in h.status()
    h.run()
    assert h.events == []


def test_inactive_current_is_reactivated(h) -> None:
    current = h.steady_world(status="INACTIVE", replicas=0)
    h.create()
    assert h.run().requeue_after == 30
    assert h.baseten.called("activate_deployment") == [("m1", current.id)]
    assert h.word() == "ACTIVATING"
    assert h.message() == "reactivating inactive deployment src in production environment"
    assert h.reasons() == ["DeploymentReactivated"]


def test_reactivation_failure(h) -> None:
    h.steady_world(status="INACTIVE", replicas=0)
    h.create()
    h.baseten.fail("activate_deployment", BasetenAPIError(429, "slow down"))
    assert h.run().requeue_after == 30
    assert h.word() == "FAILED"
    assert h.message() == (
        "failed to reactivate deployment src in production environment: HTTP 429: slow down"
    )


# --- step 11: candidate matches -------------------------------------------------------------


def test_candidate_in_progress(h) -> None:
    h.baseten.add_model()
    candidate = h.baseten.add_deployment(name="src", status="BUILDING", id="c1")
    world_old = h.baseten.add_deployment(name="old", active_replica_count=3)
    h.baseten.add_environment(current=world_old, candidate=candidate)
    h.create()
    assert h.run().requeue_after == 30
    assert h.word() == "PROMOTING"
    assert h.message() == f"{AP}promoting: src (BUILDING, 0 replicas)"
    assert h.status()["candidateDeploymentName"] == "src"
    assert h.status()["candidateDeploymentID"] == "c1"
    assert h.baseten.writes == []


def test_candidate_build_stopped_is_never_retried_but_looked_at_every_steady_period(h) -> None:
    h.baseten.add_model()
    candidate = h.baseten.add_deployment(name="src", status="BUILD_STOPPED")
    h.baseten.add_environment(candidate=candidate)
    h.create()
    assert h.run() == Result(requeue_after=h.steady_period())
    assert h.word() == "BUILD_STOPPED"
    assert h.message() == "candidate src failed: BUILD_STOPPED"
    assert h.event("PromotionFailed") == (
        "Warning",
        "Candidate deployment src failed with status BUILD_STOPPED",
    )
    assert h.baseten.called("retry_deployment") == []
    # Still stopped a steady period later: nothing new to say or write, still no retry.
    h.clock.advance(h.steady_period())
    assert h.run() == Result(requeue_after=h.steady_period())
    assert (h.writes, h.events) == (0, [])
    assert h.baseten.writes == []
    # Someone restarts the build in the Baseten UI: the next look sees it.
    restarted = candidate.model_copy(update={"status": "BUILDING"})
    h.baseten.deployments["m1"] = [restarted]
    h.baseten.add_environment(candidate=restarted)
    assert h.run() == Result(requeue_after=h.timing.poll)
    assert h.word() == "PROMOTING"
    assert h.message() == "promoting: src (BUILDING, 0 replicas)"


# --- step 12: double-promote guard -----------------------------------------------------------


def test_foreign_candidate_blocks_promotion(h) -> None:
    other = None
    h.baseten.add_model()
    other = h.baseten.add_deployment(name="theirs", status="DEPLOYING", active_replica_count=1)
    old = h.baseten.add_deployment(name="old", active_replica_count=3)
    h.baseten.add_deployment(name="src")
    h.baseten.add_environment(current=old, candidate=other)
    h.create()
    assert h.run().requeue_after == 30
    assert h.word() == "PROMOTING"
    assert h.message() == (
        f"{AP}promoting: theirs (DEPLOYING, 1 replicas) — waiting for completion before "
        "promoting src"
    )
    assert h.event("PromotionBlocked") == (
        "Warning",
        "Waiting for existing promotion to complete (candidate: theirs)",
    )
    assert h.baseten.called("promote") == []


def test_recorded_candidate_still_building_blocks(h) -> None:
    world(h)
    h.baseten.add_deployment(name="src.123", status="BUILDING", id="c7")
    h.create(status={"modelID": "m1", "candidateDeploymentID": "c7"})
    assert h.run().requeue_after == 30
    assert h.message() == (
        f"{AP}waiting for existing promotion to complete (candidate: src.123, status: BUILDING)"
    )
    assert h.event("PromotionBlocked")[1] == (
        "Waiting for existing promotion to complete (candidate: src.123)"
    )
    assert h.baseten.called("promote") == []


def test_stale_recorded_candidate_is_cleared(h) -> None:
    world(h)
    h.create(
        status={"modelID": "m1", "candidateDeploymentID": "gone", "candidateDeploymentName": "x"}
    )
    h.run()
    # cleared, then the source was promoted and recorded as the new candidate
    assert h.status()["candidateDeploymentID"] != "gone"
    assert len(h.baseten.called("promote")) == 1


def test_recorded_candidate_of_another_source_is_stale(h) -> None:
    world(h)
    h.baseten.add_deployment(name="previous-src", status="BUILDING", id="c7")
    h.create(status={"modelID": "m1", "candidateDeploymentID": "c7"})
    h.run()
    assert len(h.baseten.called("promote")) == 1


# --- step 13: source validation -----------------------------------------------------------------


def test_source_not_found(h) -> None:
    world(h, source_status=None)
    h.create()
    with pytest.raises(Exception, match="source deployment src not found"):
        h.run()
    assert h.word() == "FAILED"
    assert h.message() == f"{AP}unable to promote: source deployment src not found"
    assert h.event("SourceDeploymentNotFound") == (
        "Warning",
        'Source deployment "src" not found for model "my-llm"',
    )


@pytest.mark.parametrize(
    "error",
    [
        BasetenAPIError(500, "boom"),
        BasetenAPIError(414, "URI too long"),
        BasetenAPIError(0, "timeout on GET /v1/models/{model_id}/deployments"),
    ],
)
def test_a_failed_source_lookup_says_so_without_claiming_absence(h, error) -> None:
    world(h)
    h.create()
    h.baseten.fail("find_deployment", error)
    assert h.run().requeue_after == 30
    assert h.word() == "PENDING"
    assert h.message() == f"{AP}unable to check deployment src: {error}"
    assert h.events == []
    assert h.baseten.called("promote") == []


@pytest.mark.parametrize(
    "status", ["BUILDING", "DEPLOYING", "LOADING_MODEL", "WAKING_UP", "UPDATING", "DEACTIVATING"]
)
def test_source_in_progress_waits(h, status: str) -> None:
    world(h, source_status=status)
    h.create()
    assert h.run().requeue_after == 30
    assert h.word() == status
    assert h.message() == f"{AP}waiting to promote: source deployment src is {status}"


@pytest.mark.parametrize("status", ["UNHEALTHY", "SOMETHING_NEW"])
def test_source_other_status_waits(h, status: str) -> None:
    world(h, source_status=status)
    h.create()
    assert h.run().requeue_after == 30
    assert h.word() == status
    assert h.message() == f"{AP}waiting to promote: source deployment src has status {status}"


def test_source_build_stopped_is_never_retried_but_looked_at_every_steady_period(h) -> None:
    _, source = world(h, source_status="BUILD_STOPPED")
    assert source is not None
    h.create()
    assert h.run() == Result(requeue_after=h.steady_period())
    assert h.word() == "BUILD_STOPPED"
    assert h.message() == f"{AP}waiting to promote: source deployment src has status BUILD_STOPPED"
    assert h.baseten.writes == []
    # Someone restarts the build in the Baseten UI: the next look sees it.
    h.baseten.deployments["m1"][1] = source.model_copy(update={"status": "BUILDING"})
    h.clock.advance(h.steady_period())
    assert h.run() == Result(requeue_after=h.timing.poll)
    assert h.message() == f"{AP}waiting to promote: source deployment src is BUILDING"


def test_inactive_source_is_activated(h) -> None:
    _, source = world(h, source_status="INACTIVE")
    h.create()
    assert h.run().requeue_after == 30
    assert h.baseten.called("activate_deployment") == [("m1", source.id)]
    assert h.word() == "ACTIVATING"
    assert h.message() == f"{AP}waiting to promote: source deployment src is ACTIVATING"


def test_inactive_source_activation_failure(h) -> None:
    world(h, source_status="INACTIVE")
    h.create()
    h.baseten.fail("activate_deployment", BasetenAPIError(500, "boom"))
    assert h.run().requeue_after == 30
    assert h.word() == "FAILED"
    assert h.message() == (
        f"{AP}unable to promote: failed to activate source deployment src: HTTP 500: boom"
    )


# --- step 14: promote --------------------------------------------------------------------


@pytest.mark.parametrize("status", ["ACTIVE", "SCALED_TO_ZERO"])
def test_promote(h, status: str) -> None:
    _, source = world(h, source_status=status)
    h.create()
    assert h.run().requeue_after == 30
    assert h.baseten.called("promote") == [("m1", "production", source.id, True, True)]
    assert h.word() == "PROMOTING"
    assert h.message() == f"{AP}promoted src to production (BUILDING)"
    assert h.event("DeploymentPromoted") == ("Normal", "Promoted src to production environment")
    status_ = h.status()
    assert status_["sourceDeploymentID"] == source.id
    assert status_["sourceDeploymentName"] == "src"
    assert status_["candidateDeploymentID"] == source.id
    assert status_["candidateDeploymentName"] == "src"
    # the intent (PROMOTING_DEPLOYMENT) was written before the call, then the outcome
    assert [w["deploymentStatus"] for w in h.kube.status_writes] == [
        "PROMOTING_DEPLOYMENT",
        "PROMOTING",
    ]
    assert h.kube.status_writes[0]["message"] == f"{AP}promoting src to production"


def test_promote_passes_promote_time_flags(h) -> None:
    world(h)
    h.create(
        environment={
            "name": "production",
            "promotionSettings": {
                "scaleDownPreviousDeployment": False,
                "preserveInstanceType": False,
            },
        }
    )
    h.run()
    assert h.baseten.called("promote")[0][3:] == (False, False)


def test_promote_records_the_returned_copy_as_candidate(h) -> None:
    world(h)
    h.baseten.promote_result = h.baseten.add_deployment(name="src.99", status="BUILDING", id="copy")
    h.create()
    h.run()
    assert h.status()["candidateDeploymentID"] == "copy"
    assert h.status()["candidateDeploymentName"] == "src.99"


def test_promote_failure(h) -> None:
    world(h)
    h.create()
    h.baseten.fail("promote", BasetenAPIError(409, "promotion in progress"))
    with pytest.raises(Exception, match="promotion of 'src' to production failed"):
        h.run()
    assert h.word() == "FAILED"
    assert h.message() == (
        f"{AP}promotion of 'src' to production failed: HTTP 409: promotion in progress"
    )
    assert h.event("PromotionFailed") == (
        "Warning",
        "Failed to promote src to production: HTTP 409: promotion in progress",
    )


def test_promotion_without_current_has_no_prefix(h) -> None:
    h.baseten.add_model()
    h.baseten.add_deployment(name="src")
    h.baseten.add_environment()
    h.create()
    h.run()
    assert h.message() == "promoted src to production (BUILDING)"


def test_full_lifecycle_to_active(h) -> None:
    _, source = world(h)
    h.create()
    h.run()
    env = h.baseten.environments[("m1", "production")]
    env.candidate_deployment = source.model_copy(update={"status": "DEPLOYING"})
    h.run()
    assert h.message() == f"{AP}promoting: src (DEPLOYING, 0 replicas)"
    env.candidate_deployment = None
    env.current_deployment = source.model_copy(update={"active_replica_count": 2})
    h.run()
    assert h.word() == "ACTIVE"
    assert h.message() == "active: src (2 replicas, min:1 max:0) in production environment"
    assert h.reasons() == ["DeploymentActive"]
    assert len(h.baseten.called("promote")) == 1
