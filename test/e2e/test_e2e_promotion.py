"""Promotion of a CI-built deployment, seen through kubectl: wait, get (columns), events."""

from __future__ import annotations

import pytest

from testsupport.e2e.harness import Stack, basetenmodel, status_of

pytestmark = pytest.mark.e2e

PRINTER_COLUMNS = [
    "NAME",
    "MODEL",
    "ENVIRONMENT",
    "ACTIVE_DEPLOYMENT",
    "REPLICAS",
    "STATUS",
    "MODE",
    "PAUSED",
    "SOURCE_DEPLOYMENT",
    "CANDIDATE_DEPLOYMENT",
    "ANALYSIS",
    "AGE",
]


def test_promotion_reaches_ready_with_columns_and_events(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-promo")
    model_id, _ = stack.sim.seed_model_with_deployment("e2e-promo", "build-1")
    stack.kubectl.apply(
        basetenmodel(
            "promo",
            namespace,
            {
                "modelName": "e2e-promo",
                "sourceDeploymentName": "build-1",
                "environment": {
                    "name": "production",
                    "autoscaling": {"minReplicas": 1, "maxReplicas": 3},
                },
            },
        )
    )

    stack.kubectl.run("wait", "-n", namespace, "--for=condition=Ready", "bm/promo", "--timeout=60s")

    status = status_of(stack.get_bm(namespace, "promo"))
    active = status["activeDeploymentName"]
    assert status["deploymentStatus"] == "ACTIVE"
    assert status["modelID"] == model_id
    assert active.startswith("build-1")
    assert status["message"] == (
        f"active: {active} (1 replicas, min:1 max:3) in production environment"
    )
    env = stack.sim.environment(model_id, "production")
    assert env["current_deployment"]["name"] == active

    rows = stack.kubectl.table("bm", "-n", namespace)
    assert list(rows[0]) == PRINTER_COLUMNS
    assert rows == [
        {
            "NAME": "promo",
            "MODEL": "e2e-promo",
            "ENVIRONMENT": "production",
            "ACTIVE_DEPLOYMENT": active,
            "REPLICAS": "1",
            "STATUS": "ACTIVE",
            "MODE": "Reconcile",
            "PAUSED": "",
            "SOURCE_DEPLOYMENT": "build-1",
            "CANDIDATE_DEPLOYMENT": "",
            "ANALYSIS": "",
            "AGE": rows[0]["AGE"],
        }
    ]
    wide = stack.kubectl.run("get", "bm", "promo", "-n", namespace, "-o", "wide").stdout
    assert "MESSAGE" in wide.splitlines()[0]
    assert status["message"] in wide

    reasons = {e["reason"]: e["message"] for e in stack.kubectl.events(namespace, "promo")}
    assert reasons["EnvironmentCreated"] == (
        "Created environment production with autoscaling settings"
    )
    assert reasons["DeploymentPromoted"] == "Promoted build-1 to production environment"
    assert reasons["DeploymentActive"] == f"Deployment {active} is now active in production"
