"""Deletion guardrails: a serving model is not deleted; once drained, it is."""

from __future__ import annotations

import pytest

from testsupport.e2e.harness import Stack

pytestmark = pytest.mark.e2e

BLOCKED = (
    "deletion blocked: production (min=1, active=1) must be scaled to min_replicas: 0 and idle "
    "before model can be deleted"
)


def test_delete_waits_for_drain_then_deletes_the_model(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-delete")
    model_id, _ = stack.promoted_model(
        namespace,
        "guarded",
        autoscaling={"minReplicas": 1, "maxReplicas": 2},
        deletionPolicy="DeleteWithGuardrails",
    )

    stack.kubectl.run("delete", "bm", "guarded", "-n", namespace, "--wait=false")

    blocked = stack.wait_status(
        namespace,
        "guarded",
        lambda s: s.get("deploymentStatus") == "DELETE_BLOCKED",
        what="DELETE_BLOCKED",
    )
    assert blocked["status"]["message"] == BLOCKED
    assert blocked["metadata"]["deletionTimestamp"]
    event = stack.wait_event(namespace, "guarded", "ModelDeleteBlocked")
    assert (event["type"], event["message"]) == ("Warning", BLOCKED)
    assert stack.sim.api_get(f"/models/{model_id}").status_code == 200

    # Drain: min replicas to 0 in Baseten; the deployment then scales to zero.
    stack.sim.control(
        "ui_update_environment",
        model_id=model_id,
        env="production",
        autoscaling_settings={"min_replica": 0},
    )

    stack.kubectl.run("wait", "-n", namespace, "--for=delete", "bm/guarded", "--timeout=60s")
    assert stack.sim.api_get(f"/models/{model_id}").status_code == 404
    deleted = stack.wait_event(
        namespace, "guarded", "ModelDeleted", contains=f"Deleted Baseten model {model_id}"
    )
    assert deleted["type"] == "Normal"
    deletes = [e for e in stack.sim.writes_for_model(model_id) if e["method"] == "DELETE"]
    assert {e["path"] for e in deletes} == {f"/v1/models/{model_id}"}
    # A pass still holding the pre-deletion object from its cache may try again: 404 is fine.
    assert [e["status"] for e in deletes] == [200] + [404] * (len(deletes) - 1)
