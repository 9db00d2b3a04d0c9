"""Observe: a read-only secondary shows Baseten's state and its drift, and never writes."""

from __future__ import annotations

import json
import re

import pytest

from testsupport.e2e.harness import (
    Stack,
    basetenmodel,
)
from testsupport.polling import wait_for

pytestmark = pytest.mark.e2e


def test_observe_reports_drift_without_writing(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-observe")
    model_id, deployment_id = stack.sim.seed_model_with_deployment("e2e-observe", "build-1")
    # The primary region promoted build-1 and bob raised min replicas in the UI.
    stack.sim.control(
        "seed_environment",
        model_id=model_id,
        name="production",
        current_deployment_id=deployment_id,
        autoscaling_settings={"min_replica": 1, "max_replica": 5},
    )
    stack.sim.ui_autoscaling(model_id, "bob@example.com", min_replica=2)
    stack.kubectl.apply(
        basetenmodel(
            "observe",
            namespace,
            {
                "modelName": "e2e-observe",
                "mode": "Observe",
                "sourceDeploymentName": "build-1",
                "environment": {
                    "name": "production",
                    "autoscaling": {"minReplicas": 1, "maxReplicas": 5},
                },
            },
        )
    )

    observed = stack.wait_status(
        namespace, "observe", lambda s: "drift:" in s.get("message", ""), what="drift reported"
    )
    status = observed["status"]
    assert status["deploymentStatus"] == "ACTIVE"
    assert status["message"].startswith("active: build-1 (")
    assert re.search(
        r"min:2 max:5\) in production environment \| drift: minReplicas 1→2; changed by "
        r"bob@example\.com via UI at [0-9T:-]+Z; awaiting reconciliation$",
        status["message"],
    ), status["message"]
    assert status["modelID"] == model_id
    assert stack.sim.writes_for_model(model_id) == []
    settings = stack.sim.environment(model_id, "production")["autoscaling_settings"]
    assert settings["min_replica"] == 2

    # Failover: flipping the region to Reconcile makes the next pass act.
    stack.kubectl.run(
        "patch", "bm", "observe", "-n", namespace, "--type=merge",
        "-p", json.dumps({"spec": {"mode": "Reconcile"}}),
    )  # fmt: skip
    wait_for(
        lambda: stack.sim.environment(model_id, "production")["autoscaling_settings"]["min_replica"]
        == 1,
        timeout=30.0,
        describe=lambda: str(stack.sim.environment(model_id, "production")),
    )
    stack.wait_event(namespace, "observe", "AutoscalingUpdated", contains="minReplicas 2→1")
