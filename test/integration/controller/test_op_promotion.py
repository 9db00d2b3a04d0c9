"""Promotion of CI-built deployments: first promotion, a source change, sibling environments."""

from __future__ import annotations

import time
from typing import Any

import pytest

from testsupport.operator_harness import (
    OperatorHarness,
    is_ready,
    reconcile_spec,
)
from testsupport.polling import wait_for

pytestmark = pytest.mark.integration


def status_of(cr: dict[str, Any]) -> dict[str, Any]:
    return cr.get("status") or {}


def test_full_promotion_reaches_active_and_ready(harness: OperatorHarness, namespace: str) -> None:
    model = harness.sim.seed_model("promo-a")
    harness.sim.seed_deployment(model["id"], "build-1")
    # One replica minimum: the deployment stays ACTIVE (with none it would scale to zero).
    spec = reconcile_spec(
        "promo-a", "build-1", environment={"name": "production", "autoscaling": {"minReplicas": 1}}
    )
    harness.create_model_cr(namespace, "promo-a", spec)

    harness.wait_seen(
        namespace,
        "promo-a",
        lambda cr: status_of(cr).get("candidateDeploymentName", "").startswith("build-1"),
        what="candidate recorded",
    )
    cr = harness.wait_ready(namespace, "promo-a")
    status = cr["status"]
    assert status["deploymentStatus"] == "ACTIVE"
    assert status["modelID"] == model["id"]
    assert status["sourceDeploymentName"] == "build-1"
    assert status["activeDeploymentName"].startswith("build-1")
    assert "candidateDeploymentName" not in status or not status["candidateDeploymentName"]
    assert status["message"].startswith(f"active: {status['activeDeploymentName']} (")
    assert status["message"].endswith(" in production environment")
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert progressing["status"] == "False"
    harness.wait_event(
        namespace, "promo-a", "DeploymentPromoted", contains="Promoted build-1 to production"
    )
    harness.wait_event(namespace, "promo-a", "DeploymentActive", contains="is now active in")
    env = harness.environment(model["id"], "production")
    assert env["current_deployment"]["name"].startswith("build-1")
    promotes = [e for e in harness.writes_for_model(model["id"]) if e["path"].endswith("/promote")]
    assert len(promotes) == 1
    assert not harness.promote_violations(model["id"])

    # Steady state writes nothing: two more passes (each reads the environment) leave the
    # object untouched, so no watch event feeds a hot loop.
    settled = harness.get_cr(namespace, "promo-a")
    assert settled is not None
    versions = len(harness.history(namespace, "promo-a"))
    since = time.time()
    wait_for(lambda: len(harness.calls_for_model(model["id"], since=since)) >= 2, timeout=10.0)
    after = harness.get_cr(namespace, "promo-a")
    assert after is not None
    assert after["metadata"]["resourceVersion"] == settled["metadata"]["resourceVersion"]
    assert len(harness.history(namespace, "promo-a")) == versions


def test_source_change_promotes_again(harness: OperatorHarness, namespace: str) -> None:
    model = harness.sim.seed_model("promo-b")
    harness.sim.seed_deployment(model["id"], "v1")
    harness.create_model_cr(namespace, "promo-b", reconcile_spec("promo-b", "v1"))
    harness.wait_ready(namespace, "promo-b")

    harness.sim.seed_deployment(model["id"], "v2", status="BUILDING")
    harness.patch_spec(namespace, "promo-b", {"sourceDeploymentName": "v2"})
    harness.wait_seen(
        namespace,
        "promo-b",
        lambda cr: "waiting to promote: source deployment v2 is"
        in status_of(cr).get("message", ""),
        what="waiting for the v2 build",
    )
    cr = harness.wait_status(
        namespace,
        "promo-b",
        lambda cr: is_ready(cr) and status_of(cr).get("sourceDeploymentName") == "v2",
        what="v2 active",
    )
    assert cr["status"]["activeDeploymentName"].startswith("v2")
    assert cr["status"]["observedGeneration"] == cr["metadata"]["generation"]
    harness.wait_event(namespace, "promo-b", "DeploymentPromoted", contains="Promoted v2")
    assert harness.environment(model["id"], "production")["current_deployment"]["name"].startswith(
        "v2"
    )
    assert not harness.promote_violations(model["id"])


def test_a_ramping_promotion_is_shown_in_status_and_cleared_after(
    harness: OperatorHarness, namespace: str
) -> None:
    model = harness.sim.seed_model("promo-ramp")
    harness.sim.seed_deployment(model["id"], "r1")
    harness.create_model_cr(namespace, "promo-ramp", reconcile_spec("promo-ramp", "r1"))
    harness.wait_ready(namespace, "promo-ramp")

    harness.sim.seed_deployment(model["id"], "r2")
    # Ten stages of traffic over 600 s (6 s at the simulator's time scale).
    promotion = {"rampUpWhilePromoting": True, "rampUpDurationSeconds": 600}
    harness.patch_spec(
        namespace,
        "promo-ramp",
        {
            "sourceDeploymentName": "r2",
            "environment": {"name": "production", "promotionSettings": promotion},
        },
    )
    ramping = harness.wait_seen(
        namespace,
        "promo-ramp",
        lambda cr: (status_of(cr).get("promotion") or {}).get("phase") == "RAMPING_UP",
        timeout=20.0,
        what="the ramp in status",
    )
    traffic = ramping["status"]["promotion"]["trafficPercent"]
    assert 10 <= traffic <= 100
    assert "% traffic)" in ramping["status"]["message"]
    assert "| promoting: r2" in ramping["status"]["message"]
    cr = harness.wait_status(
        namespace,
        "promo-ramp",
        lambda cr: is_ready(cr) and status_of(cr).get("sourceDeploymentName") == "r2",
        timeout=30.0,
        what="r2 active",
    )
    assert "promotion" not in cr["status"]
    assert (
        cr["status"]["instanceType"]
        == (harness.environment(model["id"], "production")["instance_type"]["name"])
    )


def test_staging_and_production_crs_on_one_model(harness: OperatorHarness, namespace: str) -> None:
    model = harness.sim.seed_model("promo-c")
    harness.sim.seed_deployment(model["id"], "rc-1")
    harness.sim.seed_deployment(model["id"], "stable-1")
    staging = reconcile_spec(
        "promo-c",
        "rc-1",
        environment={"name": "staging", "autoscaling": {"minReplicas": 0, "maxReplicas": 2}},
    )
    production = reconcile_spec(
        "promo-c",
        "stable-1",
        environment={"name": "production", "autoscaling": {"minReplicas": 1, "maxReplicas": 4}},
    )
    harness.create_model_cr(namespace, "promo-c-staging", staging)
    harness.create_model_cr(namespace, "promo-c-production", production)

    staged = harness.wait_ready(namespace, "promo-c-staging")
    produced = harness.wait_ready(namespace, "promo-c-production")
    assert staged["status"]["activeDeploymentName"].startswith("rc-1")
    assert produced["status"]["activeDeploymentName"].startswith("stable-1")
    assert staged["status"]["modelID"] == produced["status"]["modelID"] == model["id"]
    assert "in staging environment" in staged["status"]["message"]
    assert "in production environment" in produced["status"]["message"]
    staging_env = harness.environment(model["id"], "staging")
    production_env = harness.environment(model["id"], "production")
    assert staging_env["autoscaling_settings"]["max_replica"] == 2
    assert production_env["autoscaling_settings"]["min_replica"] == 1
    assert production_env["autoscaling_settings"]["max_replica"] == 4
    assert not harness.promote_violations(model["id"])
