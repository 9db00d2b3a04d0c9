"""Drift in Reconcile and Observe, Pause and resume, reactivation after Baseten's TTL."""

from __future__ import annotations

import re
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


def message(cr: dict[str, Any]) -> str:
    return str((cr.get("status") or {}).get("message", ""))


def test_ui_drift_is_reverted_in_reconcile(harness: OperatorHarness, namespace: str) -> None:
    model = harness.sim.seed_model("drift-r")
    harness.sim.seed_deployment(model["id"], "d1")
    spec = reconcile_spec(
        "drift-r",
        "d1",
        environment={"name": "production", "autoscaling": {"minReplicas": 1, "maxReplicas": 3}},
    )
    harness.create_model_cr(namespace, "drift-r", spec)
    harness.wait_ready(namespace, "drift-r")

    harness.sim.ui_update_environment(model["id"], "production", {"max_replica": 7})
    text = harness.wait_event(namespace, "drift-r", "AutoscalingUpdated", timeout=20.0)
    assert text == "updating autoscaling: maxReplicas 7→3"
    harness.wait_seen(
        namespace,
        "drift-r",
        lambda cr: "| updating settings: maxReplicas 7→3" in message(cr),
        what="settings update reported",
    )
    wait_for(
        lambda: harness.environment(model["id"], "production")["autoscaling_settings"][
            "max_replica"
        ]
        == 3,
        timeout=10.0,
    )
    harness.wait_status(
        namespace, "drift-r", lambda cr: is_ready(cr) and "min:1 max:3" in message(cr)
    )
    patches = [e for e in harness.writes_for_model(model["id"]) if e["method"] == "PATCH"]
    desired = {"autoscaling_settings": {"min_replica": 1, "max_replica": 3}}
    # Exactly one: the operator's own status write must not trigger a pass that re-sends
    # the PATCH before Baseten applied it.
    assert [p["body"] for p in patches] == [desired]
    assert harness.event_count(namespace, "drift-r", "AutoscalingUpdated") == 1


def test_observe_reports_drift_and_never_writes(harness: OperatorHarness, namespace: str) -> None:
    model = harness.sim.seed_model("drift-o")
    current = harness.sim.seed_deployment(model["id"], "o1")
    harness.sim.seed_environment(
        model["id"],
        "production",
        current_deployment_id=current["id"],
        autoscaling_settings={"min_replica": 2, "max_replica": 5},
    )
    started = time.time()
    spec = reconcile_spec(
        "drift-o",
        "o1",
        mode="Observe",
        environment={"name": "production", "autoscaling": {"minReplicas": 5, "maxReplicas": 5}},
    )
    harness.create_model_cr(namespace, "drift-o", spec)

    cr = harness.wait_status(
        namespace, "drift-o", lambda cr: "awaiting reconciliation" in message(cr)
    )
    assert message(cr).startswith("active: o1 (")
    # The simulator seeded the environment: its audit log may or may not name a maker.
    assert re.search(
        r" in production environment \| drift: minReplicas 5→2; changed by [^;]+; "
        r"awaiting reconciliation$",
        message(cr),
    ), message(cr)
    assert cr["status"]["modelID"] == model["id"]
    # A second observe pass (30 s scaled) still writes nothing.
    wait_for(lambda: len(harness.calls_for_model(model["id"], since=started)) >= 2, timeout=10.0)
    assert harness.writes_for_model(model["id"]) == []
    assert (
        harness.environment(model["id"], "production")["autoscaling_settings"]["min_replica"] == 2
    )

    # Flipping to Reconcile makes the next pass act: the drift is reverted.
    harness.patch_spec(namespace, "drift-o", {"mode": "Reconcile"})
    harness.wait_event(namespace, "drift-o", "AutoscalingUpdated", contains="minReplicas 2→5")
    wait_for(
        lambda: harness.environment(model["id"], "production")["autoscaling_settings"][
            "min_replica"
        ]
        == 5,
        timeout=10.0,
    )


def test_pause_makes_no_baseten_call_and_resume_acts(
    harness: OperatorHarness, namespace: str
) -> None:
    model = harness.sim.seed_model("pause-a")
    harness.sim.seed_deployment(model["id"], "p1")
    harness.sim.seed_deployment(model["id"], "p2")
    spec = reconcile_spec(
        "pause-a",
        "p1",
        environment={"name": "production", "autoscaling": {"maxReplicas": 2}},
    )
    harness.create_model_cr(namespace, "pause-a", spec)
    ready = harness.wait_ready(namespace, "pause-a")
    steady = message(ready)

    harness.patch_spec(namespace, "pause-a", {"mode": "Pause"})
    paused = harness.wait_status(
        namespace, "pause-a", lambda cr: cr["status"]["deploymentStatus"] == "PAUSED"
    )
    assert message(paused) == f"reconciliation paused | last status: {steady}"
    harness.wait_event(
        namespace, "pause-a", "ReconciliationPaused", contains="Reconciliation paused for pause-a"
    )
    paused_at = time.time()
    passes_when_paused = harness.reconcile_count()
    # While paused, a source change and drift made in the UI: the operator must not touch them.
    harness.patch_spec(namespace, "pause-a", {"sourceDeploymentName": "p2"})
    harness.sim.ui_update_environment(model["id"], "production", {"max_replica": 9})
    # Two more passes: the one the spec change caused and the steady requeue scheduled
    # before the pause (3 s scaled). Neither may call Baseten.
    harness.wait_status(
        namespace,
        "pause-a",
        lambda cr: cr["status"].get("observedGeneration") == cr["metadata"]["generation"],
    )
    wait_for(lambda: harness.reconcile_count() >= passes_when_paused + 2, timeout=8.0)
    assert harness.calls_for_model(model["id"], since=paused_at) == []
    paused_again = harness.get_cr(namespace, "pause-a")
    assert paused_again is not None
    assert message(paused_again) == f"reconciliation paused | last status: {steady}"
    assert harness.event_messages(namespace, "pause-a", "ReconciliationPaused") == [
        "Reconciliation paused for pause-a"
    ]

    harness.patch_spec(namespace, "pause-a", {"mode": "Reconcile"})
    resumed = harness.wait_status(
        namespace,
        "pause-a",
        lambda cr: is_ready(cr) and cr["status"].get("sourceDeploymentName") == "p2",
    )
    assert resumed["status"]["activeDeploymentName"].startswith("p2")
    harness.wait_event(namespace, "pause-a", "AutoscalingUpdated", contains="maxReplicas 9→2")


def test_reactivation_after_ttl_deactivation(harness: OperatorHarness, namespace: str) -> None:
    model = harness.sim.seed_model("ttl-a")
    harness.sim.seed_deployment(model["id"], "t1")
    harness.create_model_cr(namespace, "ttl-a", reconcile_spec("ttl-a", "t1"))
    ready = harness.wait_ready(namespace, "ttl-a")
    active = harness.deployment(model["id"], ready["status"]["activeDeploymentName"])
    assert active is not None

    harness.sim.deactivate(active["id"])
    harness.wait_event(namespace, "ttl-a", "DeploymentReactivated", timeout=20.0)
    harness.wait_seen(
        namespace,
        "ttl-a",
        lambda cr: (cr.get("status") or {}).get("deploymentStatus") == "ACTIVATING"
        and message(cr)
        == f"reactivating inactive deployment {active['name']} in production environment",
    )
    harness.wait_status(namespace, "ttl-a", is_ready, timeout=15.0)
    activations = [
        e for e in harness.writes_for_model(model["id"]) if e["path"].endswith("/activate")
    ]
    assert len(activations) == 1
