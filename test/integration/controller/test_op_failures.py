"""Failing deployments retried, and Baseten answering 5xx and 429 for a while."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.api.constants import BASETENMODELS
from baseten_operator.controller.basetenmodel.status import StatusWriter
from baseten_operator.controller.shared.status import StaleRead
from baseten_operator.runtime.clock import RealClock
from baseten_operator.sim.baseten.engine import LifecycleDurations
from baseten_operator.sim.baseten.errors import SimError
from testsupport.operator_harness import (
    OperatorHarness,
    is_ready,
    reconcile_spec,
)
from testsupport.polling import wait_for

pytestmark = pytest.mark.integration

# Builds take 1 s here (100 simulated seconds x 0.01): long enough to fail one on purpose.
HARNESS_OPTIONS = {"sim_durations": LifecycleDurations(build=100.0)}


def status_of(cr: dict[str, Any]) -> dict[str, Any]:
    return cr.get("status") or {}


def test_failed_candidate_is_retried_then_active(harness: OperatorHarness, namespace: str) -> None:
    model = harness.sim.seed_model("fail-a")
    harness.sim.seed_deployment(model["id"], "f1")
    spec = reconcile_spec(
        "fail-a",
        "f1",
        environment={
            "name": "production",
            "autoscaling": {"minReplicas": 1},  # stays ACTIVE, never scales to zero
            "promotionSettings": {"redeployOnPromotion": True},
        },
    )
    harness.create_model_cr(namespace, "fail-a", spec)

    # Redeploy on promotion: the candidate is a fresh copy that builds. Break its build.
    def building_candidate() -> dict[str, Any] | None:
        try:
            env = harness.environment(model["id"], "production")
        except SimError:  # the environment is not created yet
            return None
        candidate = env.get("candidate_deployment")
        return candidate if candidate and candidate["status"] == "BUILDING" else None

    candidate = wait_for(building_candidate, timeout=10.0)
    harness.sim.fail_deployment(candidate["id"], "BUILD_FAILED")

    retried = harness.wait_event(namespace, "fail-a", "DeploymentRetried", timeout=15.0)
    assert retried == f"Retried deployment {candidate['name']} (was BUILD_FAILED, attempt 1)"
    harness.wait_seen(
        namespace,
        "fail-a",
        lambda cr: status_of(cr).get("deploymentStatus") == "BUILD_FAILED"
        and status_of(cr).get("firstDeploymentFailureTime") is not None,
        what="the failure recorded",
    )
    cr = harness.wait_status(namespace, "fail-a", is_ready, timeout=20.0)
    status = cr["status"]
    assert status["deploymentStatus"] == "ACTIVE"
    assert status["activeDeploymentName"].startswith("f1.")
    # Reaching ACTIVE clears the retry bookkeeping.
    for field in ("firstDeploymentFailureTime", "deploymentRetryCount", "nextRetryTime"):
        assert not status.get(field), field
    retries = [e for e in harness.writes_for_model(model["id"]) if e["path"].endswith("/retry")]
    assert [e["path"].split("/")[-2] for e in retries] == [candidate["id"]]
    assert not harness.promote_violations(model["id"])


def test_failed_source_is_retried_before_promotion(
    harness: OperatorHarness, namespace: str
) -> None:
    model = harness.sim.seed_model("fail-b")
    source = harness.sim.seed_deployment(model["id"], "s1", status="DEPLOY_FAILED")
    harness.create_model_cr(namespace, "fail-b", reconcile_spec("fail-b", "s1"))

    retried = harness.wait_event(namespace, "fail-b", "DeploymentRetried", timeout=15.0)
    assert retried == "Retried deployment s1 (was DEPLOY_FAILED, attempt 1)"
    cr = harness.wait_status(namespace, "fail-b", is_ready, timeout=20.0)
    assert cr["status"]["activeDeploymentName"] == "s1"
    promotes = [e for e in harness.writes_for_model(model["id"]) if e["path"].endswith("/promote")]
    assert [e["body"]["deployment_id"] for e in promotes] == [source["id"]]


def test_baseten_5xx_and_429_for_a_while(harness: OperatorHarness, namespace: str) -> None:
    names = [f"flaky-{i}" for i in range(4)]
    sources: dict[str, str] = {}
    for name in names:
        model = harness.sim.seed_model(name)
        harness.sim.seed_deployment(model["id"], f"{name}-v1")
        sources[name] = model["id"]
    harness.sim.inject_fault("*", "5xx", count=12, status=500)
    harness.sim.inject_fault("*", "429", count=6, retry_after=1)
    for name in names:
        spec = reconcile_spec(
            name,
            f"{name}-v1",
            environment={"name": "production", "autoscaling": {"minReplicas": 1}},
        )
        harness.create_model_cr(namespace, name, spec)

    for name in names:
        cr = harness.wait_status(namespace, name, is_ready, timeout=40.0)
        assert cr["status"]["activeDeploymentName"] == f"{name}-v1"
        assert cr["status"]["modelID"] == sources[name]
        env = harness.environment(sources[name], "production")
        assert env["current_deployment"]["name"] == f"{name}-v1"
        assert env["autoscaling_settings"]["min_replica"] == 1
        assert not harness.promote_violations(sources[name])
    answered = [r.status for r in harness.requests.seen() if r.status in (500, 429)]
    assert answered.count(500) == 12 and answered.count(429) == 6


def test_an_unchanged_intent_write_still_proves_the_version_it_read(
    harness: OperatorHarness, namespace: str
) -> None:
    """docs/contract.md section 11: the status written before an irreversible call is checked
    against the resourceVersion the pass read even when it repeats the stored status; the
    API server answers a current one as a no-op and a stale one with 409."""
    # Observe, steady on what it serves: the operator leaves it be, and its status is one a
    # pass about to make a call renders the same (not stalled, nothing under way).
    model = harness.sim.seed_model("held")
    serving = harness.sim.seed_deployment(model["id"], "h1")
    harness.sim.seed_environment(model["id"], "production", current_deployment_id=serving["id"])
    harness.create_model_cr(namespace, "held", reconcile_spec("held", "h1", mode="Observe"))
    read = harness.wait_status(
        namespace, "held", lambda cr: status_of(cr).get("deploymentStatus") == "ACTIVE"
    )
    version = read["metadata"]["resourceVersion"]

    StatusWriter(harness.kube, read, RealClock()).write_intent()
    after = harness.get_cr(namespace, "held")
    assert after is not None and after["metadata"]["resourceVersion"] == version  # a no-op

    labels = {"metadata": {"labels": {"touched": "by-someone-else"}}}
    harness.kube.patch(BASETENMODELS, "held", labels, namespace)
    with pytest.raises(StaleRead):
        StatusWriter(harness.kube, read, RealClock()).write_intent()
