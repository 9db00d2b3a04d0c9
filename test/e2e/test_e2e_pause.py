"""Pause: `kubectl patch` to mode Pause stops every Baseten call; resuming reverts the drift."""

from __future__ import annotations

import json
from typing import Any

import pytest

from testsupport.e2e.harness import (
    Stack,
    status_of,
)
from testsupport.polling import wait_for

pytestmark = pytest.mark.e2e


def test_pause_leaves_drift_alone_until_resumed(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-pause")
    model_id, ready = stack.promoted_model(
        namespace, "pause", autoscaling={"minReplicas": 1, "maxReplicas": 3}
    )
    steady_message = ready["status"]["message"]

    _patch_spec(stack, namespace, {"mode": "Pause"})
    paused = stack.wait_status(
        namespace, "pause", lambda s: s.get("deploymentStatus") == "PAUSED", what="PAUSED"
    )
    assert paused["status"]["message"] == f"reconciliation paused | last status: {steady_message}"
    event = stack.wait_event(namespace, "pause", "ReconciliationPaused")
    assert event["message"] == "Reconciliation paused for pause"
    row = stack.kubectl.table("bm", "pause", "-n", namespace)[0]
    assert (row["STATUS"], row["MODE"]) == ("PAUSED", "Pause")

    writes_before = stack.sim.writes_for_model(model_id)
    stack.sim.control(
        "ui_update_environment",
        model_id=model_id,
        env="production",
        autoscaling_settings={"min_replica": 2},
    )
    # A spec change while paused makes the operator look at the object again: once it has
    # observed the new generation, it has decided, and it must have left Baseten alone.
    changed = _patch_spec(stack, namespace, {"environment": {"autoscaling": {"maxReplicas": 4}}})
    generation = changed["metadata"]["generation"]
    stack.wait_status(
        namespace,
        "pause",
        lambda s: s.get("observedGeneration") == generation,
        what=f"generation {generation} observed while paused",
    )
    settings = stack.sim.environment(model_id, "production")["autoscaling_settings"]
    assert (settings["min_replica"], settings["max_replica"]) == (2, 3)
    assert stack.sim.writes_for_model(model_id) == writes_before
    assert status_of(stack.get_bm(namespace, "pause"))["deploymentStatus"] == "PAUSED"

    _patch_spec(stack, namespace, {"mode": "Reconcile"})
    wait_for(
        lambda: _settings_are(stack, model_id, min_replica=1, max_replica=4),
        timeout=30.0,
        describe=lambda: str(stack.sim.environment(model_id, "production")),
    )
    stack.wait_event(namespace, "pause", "AutoscalingUpdated", contains="2 changes")
    resumed = stack.wait_status(
        namespace,
        "pause",
        lambda s: s.get("deploymentStatus") == "ACTIVE" and "min:1 max:4" in s.get("message", ""),
        what="active again with the spec's settings",
    )
    assert not resumed["status"]["message"].startswith("reconciliation paused")


def _patch_spec(stack: Stack, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    done = stack.kubectl.run(
        "patch",
        "bm",
        "pause",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": spec}),
        "-o",
        "json",
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _settings_are(stack: Stack, model_id: str, **expected: int) -> bool:
    settings = stack.sim.environment(model_id, "production")["autoscaling_settings"]
    return all(settings.get(k) == v for k, v in expected.items())
