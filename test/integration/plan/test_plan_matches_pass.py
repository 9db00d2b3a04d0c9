"""Each situation: what `plan` prints is exactly what the next real pass then writes,
and `plan` itself only read (GETs, and nothing in the simulator's audit log)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from plan_world import PlanWorld, expected_writes, made_writes, only_gets

pytestmark = pytest.mark.integration


def spec(model: str, source: str, env: str = "production", **extra: Any) -> dict[str, Any]:
    return {
        "modelName": model,
        "sourceDeploymentName": source,
        "environment": {"name": env},
        **extra,
    }


def plan_then_pass(world: PlanWorld, namespace: str, name: str, model_id: str) -> dict[str, Any]:
    """Plan the live CR, run the next pass, and hold one against the other."""
    code, document, seen = world.plan(
        "--cluster", "--kubeconfig", str(world.kubeconfig), "-n", namespace, "--detailed-exitcode"
    )
    assert only_gets(seen), seen
    (item,) = document["items"]
    writes = world.next_pass(namespace, name)
    assert expected_writes([item], model_id) == made_writes(writes)
    assert code == (2 if item["actions"] else 0)
    return item


def seeded_model(
    world: PlanWorld,
    name: str,
    *sources: str,
    env: str = "production",
    current: str | None = None,
    **env_settings: Any,
) -> tuple[str, dict[str, str]]:
    model_id = world.sim.seed_model(name)["id"]
    ids = {s: world.sim.seed_deployment(model_id, s)["id"] for s in sources}
    if current is not None:
        world.sim.seed_environment(
            model_id, env, current_deployment_id=ids[current], **env_settings
        )
    return model_id, ids


def test_new_environment(world: PlanWorld, namespace: str) -> None:
    model_id, _ = seeded_model(world, f"{namespace}-m", "v1")
    autoscaling = {"minReplicas": 1, "maxReplicas": 3}
    world.create_cr(
        namespace,
        "m",
        spec(
            f"{namespace}-m", "v1", environment={"name": "production", "autoscaling": autoscaling}
        ),
    )
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action == {
        "type": "create-environment",
        "environment": "production",
        "autoscalingSettings": {"min_replica": 1, "max_replica": 3},
        "promotionSettings": None,
    }


def steady(world: PlanWorld, namespace: str, name: str, cr_spec: dict[str, Any]) -> None:
    """Create the CR and let real passes take it where the test starts from."""
    world.create_cr(namespace, name, cr_spec)
    world.next_pass(namespace, name)


def test_autoscaling_drift(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(
        world, model, "v1", current="v1", autoscaling_settings={"min_replica": 1, "max_replica": 2}
    )
    desired = {"name": "production", "autoscaling": {"minReplicas": 1, "maxReplicas": 2}}
    steady(world, namespace, "m", spec(model, "v1", environment=desired))
    world.sim.ui_update_environment(model_id, "production", autoscaling_settings={"max_replica": 5})
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action["type"] == "update-environment"
    assert action["changes"] == [{"field": "maxReplicas", "old": 5, "new": 2}]


def test_promotion_settings_drift(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(
        world, model, "v1", current="v1", promotion_settings={"redeploy_on_promotion": False}
    )
    desired = {
        "name": "production",
        "promotionSettings": {"redeployOnPromotion": True, "rampUpDurationSeconds": 60},
    }
    world.create_cr(namespace, "m", spec(model, "v1", environment=desired))
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action["type"] == "update-environment"
    assert action["changes"] == [
        {"field": "redeployOnPromotion", "old": False, "new": True},
        {"field": "rampUpDurationSeconds", "old": 600, "new": 60},
    ]


def test_new_source_is_promoted(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, ids = seeded_model(world, model, "v1", "v2", current="v1")
    promotion = {"scaleDownPreviousDeployment": False}
    world.create_cr(
        namespace,
        "m",
        spec(model, "v2", environment={"name": "production", "promotionSettings": promotion}),
    )
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action == {
        "type": "promote",
        "environment": "production",
        "current": "v1",
        "deployment": "v2",
        "deploymentId": ids["v2"],
        "scaleDownPreviousDeployment": False,
        "preserveEnvInstanceType": True,
    }


def test_steady_state_is_no_changes(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(world, model, "v1", current="v1")
    steady(world, namespace, "m", spec(model, "v1"))
    item = plan_then_pass(world, namespace, "m", model_id)
    assert item["actions"] == [] and item["blockers"] == []
    code, table = world.plan_table(
        "--cluster", "--kubeconfig", str(world.kubeconfig), "-n", namespace
    )
    assert code == 0
    assert "  no changes" in table and "Plan: no changes (1 BasetenModels)." in table


def test_inactive_current_is_reactivated(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, ids = seeded_model(world, model, "v1", current="v1")
    steady(world, namespace, "m", spec(model, "v1"))
    world.deactivate(ids["v1"])
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action == {
        "type": "activate",
        "deployment": "v1",
        "deploymentId": ids["v1"],
        "reactivate": True,
    }


def test_inactive_source_is_activated(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, ids = seeded_model(world, model, "v1", current="v1")
    ids["v2"] = world.sim.seed_deployment(model_id, "v2", status="INACTIVE")["id"]
    world.create_cr(namespace, "m", spec(model, "v2"))
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action == {
        "type": "activate",
        "deployment": "v2",
        "deploymentId": ids["v2"],
        "reactivate": False,
    }


def failed_candidate(world: PlanWorld, namespace: str) -> tuple[str, str]:
    """A CR whose promotion of v2 started, and whose candidate then failed to deploy."""
    model = f"{namespace}-m"
    model_id, _ = seeded_model(world, model, "v1", "v2", current="v1")
    world.create_cr(namespace, "m", spec(model, "v2"))
    world.next_pass(namespace, "m")  # promotes
    candidate = world.get_cr(namespace, "m")["status"]["candidateDeploymentID"]
    world.sim.fail_deployment(candidate)
    return model_id, candidate


def test_failed_candidate_with_retries_left_is_retried(world: PlanWorld, namespace: str) -> None:
    model_id, candidate = failed_candidate(world, namespace)
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action["type"] == "retry" and action["deploymentId"] == candidate


def test_failed_candidate_with_retries_exhausted_is_blocked(
    world: PlanWorld, namespace: str
) -> None:
    model_id, _ = failed_candidate(world, namespace)
    three_hours_ago = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3 * 3600))
    world.set_status(namespace, "m", firstDeploymentFailureTime=three_hours_ago)
    item = plan_then_pass(world, namespace, "m", model_id)
    assert item["actions"] == []
    (blocker,) = item["blockers"]
    assert "retries exhausted" in blocker or "2h0m0s" in blocker, blocker


def test_source_not_found_is_a_blocker(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(world, model, "v1", current="v1")
    world.create_cr(namespace, "m", spec(model, "nope"))
    item = plan_then_pass(world, namespace, "m", model_id)
    assert item["actions"] == []
    assert any("nope" in b for b in item["blockers"]), item


def test_observe_shows_no_actions_and_why(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(world, model, "v1", "v2", current="v1")
    world.create_cr(namespace, "m", spec(model, "v2", mode="Observe"))
    item = plan_then_pass(world, namespace, "m", model_id)
    assert item["actions"] == []
    assert item["notes"] == [
        "Observe mode: the operator reads Baseten and reports, it never writes"
    ]
