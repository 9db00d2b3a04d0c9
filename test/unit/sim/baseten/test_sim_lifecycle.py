"""The simulator's lifecycle engine, driven by a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten.engine import LifecycleDurations, SimEngine
from baseten_operator.sim.baseten.errors import SimError
from baseten_operator.sim.baseten.records import DEFAULT_AUTOSCALING

D = LifecycleDurations()
PUSH = D.build + D.deploy + D.load_model
# A deployment allowed zero replicas scales to zero after its own scale_down_delay.
SCALE_DOWN_DELAY = DEFAULT_AUTOSCALING["scale_down_delay"]


def push(engine: SimEngine, model_id: str, name: str, **config: Any) -> dict:
    return engine.create_pushed_deployment(
        model_id, name, files={"config.yaml": "x"}, truss_config=config
    )


def status(engine: SimEngine, model_id: str, dep_id: str) -> str:
    return str(engine.get_deployment(model_id, dep_id)["status"])


def active_deployment(engine: SimEngine, model_id: str, name: str, **autoscaling: Any) -> dict:
    return engine.controls.seed_deployment(
        model_id, name, autoscaling_settings={"min_replica": 1, **autoscaling}
    )


def test_push_goes_through_build_deploy_load_to_active(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = push(engine, model_id, "v1")
    assert dep["status"] == "BUILDING"
    assert dep["autoscaling_settings"] is None
    seen = []
    for step in (D.build, D.deploy, D.load_model):
        clock.advance(step - 0.001)
        seen.append(status(engine, model_id, dep["id"]))
        clock.advance(0.001)
    seen.append(status(engine, model_id, dep["id"]))
    assert seen == ["BUILDING", "DEPLOYING", "LOADING_MODEL", "ACTIVE"]
    view = engine.get_deployment(model_id, dep["id"])
    assert view["active_replica_count"] == 1
    assert view["autoscaling_settings"]["min_replica"] == 0


def test_time_scale_shortens_every_step(clock: FakeClock) -> None:
    engine = SimEngine(clock=clock, time_scale=0.01)
    model_id = engine.controls.seed_model("m")["id"]
    dep = push(engine, model_id, "v1")
    clock.advance(PUSH * 0.01)
    assert status(engine, model_id, dep["id"]) == "ACTIVE"


def test_late_reads_apply_every_missed_step(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = push(engine, model_id, "v1")
    clock.advance(PUSH + SCALE_DOWN_DELAY)
    view = engine.get_deployment(model_id, dep["id"])
    assert (view["status"], view["active_replica_count"]) == ("SCALED_TO_ZERO", 0)


def test_zero_replicas_allowed_scales_to_zero_after_the_deployments_own_delay(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = engine.controls.seed_deployment(
        model_id, "v1", autoscaling_settings={"min_replica": 0, "scale_down_delay": 120}
    )
    clock.advance(119.9)
    assert status(engine, model_id, dep["id"]) == "ACTIVE"
    clock.advance(0.1)
    view = engine.get_deployment(model_id, dep["id"])
    assert (view["status"], view["active_replica_count"]) == ("SCALED_TO_ZERO", 0)


def test_the_scale_down_delay_runs_at_the_time_scale(clock: FakeClock) -> None:
    engine = SimEngine(clock=clock, time_scale=0.05)
    model_id = engine.controls.seed_model("m")["id"]
    dep = push(engine, model_id, "v1")
    clock.advance(PUSH * 0.05)
    assert status(engine, model_id, dep["id"]) == "ACTIVE"
    clock.advance(SCALE_DOWN_DELAY * 0.05 - 0.01)  # 45 s, not a fixed 1.5 s
    assert status(engine, model_id, dep["id"]) == "ACTIVE"
    clock.advance(0.01)
    assert status(engine, model_id, dep["id"]) == "SCALED_TO_ZERO"


def test_a_new_scale_down_delay_starts_the_wait_again(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = engine.controls.seed_deployment(model_id, "v1")  # min_replica 0, 900 s delay
    clock.advance(800)
    engine.update_deployment_autoscaling(model_id, dep["id"], {"scale_down_delay": 300})
    clock.advance(299)
    assert status(engine, model_id, dep["id"]) == "ACTIVE"
    clock.advance(1)
    assert status(engine, model_id, dep["id"]) == "SCALED_TO_ZERO"


def test_min_replica_zero_scales_to_zero_and_back(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = active_deployment(engine, model_id, "v1", max_replica=3)
    assert dep["active_replica_count"] == 1
    engine.update_deployment_autoscaling(model_id, dep["id"], {"min_replica": 2})
    assert engine.get_deployment(model_id, dep["id"])["active_replica_count"] == 2
    engine.update_deployment_autoscaling(model_id, dep["id"], {"min_replica": 0})
    clock.advance(SCALE_DOWN_DELAY)
    view = engine.get_deployment(model_id, dep["id"])
    assert (view["status"], view["active_replica_count"]) == ("SCALED_TO_ZERO", 0)
    engine.update_deployment_autoscaling(model_id, dep["id"], {"min_replica": 1})
    assert status(engine, model_id, dep["id"]) == "WAKING_UP"
    clock.advance(D.wake_up)
    assert status(engine, model_id, dep["id"]) == "ACTIVE"


def test_autoscaling_patch_answers_unchanged_and_rejects_min_above_max(
    engine: SimEngine, model_id: str
) -> None:
    dep = active_deployment(engine, model_id, "v1")
    assert engine.update_deployment_autoscaling(model_id, dep["id"], {"min_replica": 1}) == {
        "status": "UNCHANGED",
        "message": "Autoscaling settings are unchanged",
    }
    with pytest.raises(SimError) as err:
        engine.update_deployment_autoscaling(model_id, dep["id"], {"min_replica": 5})
    assert err.value.status == 400


def test_activate_and_deactivate(engine: SimEngine, clock: FakeClock, model_id: str) -> None:
    dep = active_deployment(engine, model_id, "v1")
    assert engine.deactivate(model_id, dep["id"]) == {"success": True}
    assert status(engine, model_id, dep["id"]) == "DEACTIVATING"
    clock.advance(D.deactivate)
    assert status(engine, model_id, dep["id"]) == "INACTIVE"
    assert engine.activate(model_id, dep["id"]) == {"success": True}
    assert status(engine, model_id, dep["id"]) == "DEPLOYING"
    clock.advance(D.activate)
    assert status(engine, model_id, dep["id"]) == "ACTIVE"


def test_activation_with_min_replica_zero_ends_scaled_to_zero(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = engine.controls.seed_deployment(model_id, "v1", status="INACTIVE")
    engine.activate(model_id, dep["id"])
    clock.advance(D.activate)
    assert status(engine, model_id, dep["id"]) == "SCALED_TO_ZERO"


def test_retry_restarts_failed_deployments_only(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = push(engine, model_id, "v1")
    refused = engine.retry(model_id, dep["id"])
    assert refused["retried"] is False
    assert "BUILDING" in refused["reason"]
    engine.controls.fail_deployment(dep["id"], "BUILD_FAILED")
    clock.advance(PUSH)
    assert status(engine, model_id, dep["id"]) == "BUILD_FAILED"  # the old build's steps are gone
    retried = engine.retry(model_id, dep["id"])
    assert (retried["retried"], retried["deployment"]["status"]) == (True, "BUILDING")
    clock.advance(PUSH)
    assert status(engine, model_id, dep["id"]) == "ACTIVE"


def test_promotion_of_unattached_deployment_uses_it_and_inherits_env_autoscaling(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    engine.create_environment(model_id, "production", {"min_replica": 2, "max_replica": 4})
    dep = push(engine, model_id, "v1")
    promoted = engine.promote(model_id, "production", dep["id"])
    assert promoted["id"] == dep["id"]
    env = engine.get_environment(model_id, "production")
    assert env["candidate_deployment"]["id"] == dep["id"]
    assert env["in_progress_promotion"]["status"] == "RELEASING"
    assert env["current_deployment"] is None
    clock.advance(PUSH)
    assert engine.get_environment(model_id, "production")["in_progress_promotion"] is not None
    clock.advance(D.promotion_settle)
    env = engine.get_environment(model_id, "production")
    assert env["candidate_deployment"] is None
    assert env["in_progress_promotion"] is None
    current = env["current_deployment"]
    assert current["id"] == dep["id"]
    assert (current["is_production"], current["environment"]) == (True, "production")
    assert current["autoscaling_settings"]["min_replica"] == 2
    assert current["active_replica_count"] == 2
    assert engine.get_model(model_id)["production_deployment_id"] == dep["id"]


def test_promotion_copies_a_deployment_attached_elsewhere(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = active_deployment(engine, model_id, "v1")
    engine.controls.seed_environment(model_id, "staging", current_deployment_id=dep["id"])
    engine.create_environment(model_id, "production")
    promoted = engine.promote(model_id, "production", dep["id"])
    assert promoted["id"] != dep["id"]
    assert promoted["name"] == f"v1.{int(clock.now())}"
    assert promoted["status"] == "BUILDING"
    assert (
        engine.get_environment(model_id, "production")["candidate_deployment"]["id"]
        == (promoted["id"])
    )
    clock.advance(PUSH + D.promotion_settle)
    env = engine.get_environment(model_id, "production")
    assert env["current_deployment"]["id"] == promoted["id"]
    staging = engine.get_environment(model_id, "staging")
    assert staging["current_deployment"]["id"] == dep["id"]


@pytest.mark.parametrize(
    ("settings", "instance_config"),
    [({"redeploy_on_promotion": True}, {}), ({}, {"resources": {"cpu": "4", "memory": "16Gi"}})],
    ids=["redeploy_on_promotion", "instance_type_differs"],
)
def test_promotion_copies_on_redeploy_or_other_instance_type(
    engine: SimEngine,
    clock: FakeClock,
    model_id: str,
    settings: dict,
    instance_config: dict,
) -> None:
    first = active_deployment(engine, model_id, "v1")
    engine.controls.seed_environment(
        model_id, "production", current_deployment_id=first["id"], promotion_settings=settings
    )
    second = push(engine, model_id, "v2", **instance_config)
    clock.advance(PUSH)
    promoted = engine.promote(model_id, "production", second["id"])
    assert promoted["name"].startswith("v2.")
    assert promoted["instance_type_name"] == first["instance_type_name"]


def test_promotion_keeps_the_deployment_type_when_not_preserving_env_instance_type(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    first = active_deployment(engine, model_id, "v1")
    engine.controls.seed_environment(model_id, "production", current_deployment_id=first["id"])
    big = push(engine, model_id, "v2", resources={"cpu": "4", "memory": "16Gi"})
    clock.advance(PUSH)
    promoted = engine.promote(model_id, "production", big["id"], preserve_env_instance_type=False)
    assert promoted["id"] == big["id"]
    clock.advance(D.promotion_settle)
    env = engine.get_environment(model_id, "production")
    assert env["instance_type"]["name"] == "4x16" == env["current_deployment"]["instance_type_name"]


def test_second_concurrent_promotion_is_rejected(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    engine.create_environment(model_id, "production")
    first = push(engine, model_id, "v1")
    second = push(engine, model_id, "v2")
    engine.promote(model_id, "production", first["id"])
    with pytest.raises(SimError) as err:
        engine.promote(model_id, "production", second["id"])
    assert err.value.status == 409
    clock.advance(PUSH + D.promotion_settle)
    engine.promote(model_id, "production", second["id"])  # accepted once the first completed


def _promote_over(
    engine: SimEngine, clock: FakeClock, model_id: str, strategy: str, **promote: Any
) -> tuple[dict, dict]:
    old = active_deployment(engine, model_id, "v1")
    engine.controls.seed_environment(
        model_id,
        "production",
        current_deployment_id=old["id"],
        promotion_settings={"promotion_cleanup_strategy": strategy},
    )
    new = active_deployment(engine, model_id, "v2")
    engine.promote(model_id, "production", new["id"], **promote)
    clock.advance(D.promotion_settle)
    return old, new


def test_cleanup_scale_to_zero(engine: SimEngine, clock: FakeClock, model_id: str) -> None:
    old, new = _promote_over(engine, clock, model_id, "SCALE_TO_ZERO")
    previous = engine.get_deployment(model_id, old["id"])
    assert previous["autoscaling_settings"]["min_replica"] == 0
    assert (previous["is_production"], previous["environment"]) == (False, None)
    clock.advance(SCALE_DOWN_DELAY)
    previous = engine.get_deployment(model_id, old["id"])
    assert (previous["status"], previous["active_replica_count"]) == ("SCALED_TO_ZERO", 0)
    assert status(engine, model_id, new["id"]) == "ACTIVE"


def test_cleanup_deactivate(engine: SimEngine, clock: FakeClock, model_id: str) -> None:
    old, _ = _promote_over(engine, clock, model_id, "DEACTIVATE")
    assert status(engine, model_id, old["id"]) == "DEACTIVATING"
    clock.advance(D.deactivate)
    assert status(engine, model_id, old["id"]) == "INACTIVE"


@pytest.mark.parametrize(
    ("strategy", "promote"),
    [("KEEP", {}), ("DEACTIVATE", {"scale_down_previous_deployment": False})],
)
def test_cleanup_kept(
    engine: SimEngine, clock: FakeClock, model_id: str, strategy: str, promote: dict
) -> None:
    old, _ = _promote_over(engine, clock, model_id, strategy, **promote)
    clock.advance(SCALE_DOWN_DELAY + D.deactivate)
    previous = engine.get_deployment(model_id, old["id"])
    assert (previous["status"], previous["active_replica_count"]) == ("ACTIVE", 1)


def test_ramp_up_reports_stages(engine: SimEngine, clock: FakeClock, model_id: str) -> None:
    engine.create_environment(
        model_id,
        "production",
        promotion_settings={"ramp_up_while_promoting": True, "ramp_up_duration_seconds": 100},
    )
    dep = active_deployment(engine, model_id, "v1")
    engine.promote(model_id, "production", dep["id"])
    clock.advance(25)
    progress = engine.get_environment(model_id, "production")["in_progress_promotion"]
    assert (progress["status"], progress["percent_traffic_to_new_version"]) == ("RAMPING_UP", 30)
    clock.advance(75)
    progress = engine.get_environment(model_id, "production")["in_progress_promotion"]
    assert progress["status"] == "RAMPING_DOWN"
    clock.advance(D.promotion_settle)
    assert engine.get_environment(model_id, "production")["current_deployment"]["id"] == dep["id"]


def test_failed_candidate_ends_the_promotion(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    engine.create_environment(model_id, "production")
    dep = push(engine, model_id, "v1")
    engine.promote(model_id, "production", dep["id"])
    engine.controls.fail_deployment(dep["id"], "BUILD_STOPPED")
    env = engine.get_environment(model_id, "production")
    assert (env["candidate_deployment"], env["in_progress_promotion"]) == (None, None)
    assert status(engine, model_id, dep["id"]) == "BUILD_STOPPED"


def test_control_completes_and_fails_promotions(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    engine.create_environment(model_id, "production")
    engine.create_environment(
        model_id, "staging", promotion_settings={"redeploy_on_promotion": True}
    )
    dep = push(engine, model_id, "v1")
    engine.promote(model_id, "production", dep["id"])
    env = engine.controls.complete_promotion(model_id, "production")
    assert env["current_deployment"]["id"] == dep["id"]
    assert env["current_deployment"]["status"] == "ACTIVE"
    copy = engine.promote(model_id, "staging", dep["id"])
    env = engine.controls.fail_promotion(model_id, "staging")
    assert env["candidate_deployment"] is None
    assert status(engine, model_id, copy["id"]) == "DEPLOY_FAILED"
    with pytest.raises(SimError):
        engine.controls.complete_promotion(model_id, "staging")


def test_environment_patch_applies_after_a_delay(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = active_deployment(engine, model_id, "v1", max_replica=5)
    engine.controls.seed_environment(model_id, "production", current_deployment_id=dep["id"])
    answer = engine.update_environment(
        model_id,
        "production",
        {"min_replica": 3},
        {"promotion_cleanup_strategy": "KEEP", "rolling_deploy_config": {"max_surge_percent": 50}},
    )
    assert answer["status"] == "ACCEPTED"
    assert answer["environment"]["autoscaling_settings"]["min_replica"] == 1
    clock.advance(D.environment_update - 0.01)
    assert (
        engine.get_environment(model_id, "production")["autoscaling_settings"]["min_replica"] == 1
    )
    clock.advance(0.01)
    env = engine.get_environment(model_id, "production")
    assert env["autoscaling_settings"]["min_replica"] == 3
    assert env["promotion_settings"]["promotion_cleanup_strategy"] == "KEEP"
    assert env["promotion_settings"]["rolling_deploy_config"]["max_surge_percent"] == 50
    assert (
        env["promotion_settings"]["rolling_deploy_config"]["rolling_deploy_strategy"] == "REPLICA"
    )
    assert env["current_deployment"]["active_replica_count"] == 3


def test_ui_update_applies_at_once(engine: SimEngine, model_id: str) -> None:
    engine.create_environment(model_id, "production")
    env = engine.update_environment(
        model_id, "production", {"max_replica": 7}, None, immediately=True
    )["environment"]
    assert env["autoscaling_settings"]["max_replica"] == 7


def test_duplicate_environment_and_deleting_production_are_rejected(
    engine: SimEngine, model_id: str
) -> None:
    engine.create_environment(model_id, "production")
    with pytest.raises(SimError) as err:
        engine.create_environment(model_id, "production")
    assert err.value.status == 400
    with pytest.raises(SimError):
        engine.delete_environment(model_id, "production")


def test_ttl_deactivation_keeps_the_environment_attached(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = active_deployment(engine, model_id, "v1")
    engine.controls.seed_environment(model_id, "production", current_deployment_id=dep["id"])
    engine.controls.deactivate_deployment(dep["id"])
    clock.advance(D.deactivate)
    current = engine.get_environment(model_id, "production")["current_deployment"]
    assert (current["id"], current["status"]) == (dep["id"], "INACTIVE")


def test_delete_model_cascades_and_current_deployment_is_protected(
    engine: SimEngine, model_id: str
) -> None:
    dep = active_deployment(engine, model_id, "v1")
    other = active_deployment(engine, model_id, "v2")
    engine.controls.seed_environment(model_id, "production", current_deployment_id=dep["id"])
    with pytest.raises(SimError):
        engine.delete_deployment(model_id, dep["id"])
    assert engine.delete_deployment(model_id, other["id"])["deleted"] is True
    assert engine.delete_model(model_id) == {"id": model_id, "deleted": True}
    assert engine.list_models() == []
    with pytest.raises(SimError) as err:
        engine.get_deployment(model_id, dep["id"])
    assert err.value.status == 404


def test_list_filters_by_exact_name(engine: SimEngine, model_id: str) -> None:
    engine.controls.seed_model("llama-2")
    active_deployment(engine, model_id, "v1")
    active_deployment(engine, model_id, "v1.1700000000")
    assert [m["name"] for m in engine.list_models("llama")] == ["llama"]
    assert [d["name"] for d in engine.list_deployments(model_id, "v1")] == ["v1"]
    assert len(engine.list_deployments(model_id)) == 2
