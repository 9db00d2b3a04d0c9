"""Section 6: Observe mode never writes to Baseten."""

from __future__ import annotations

import pytest

from baseten_operator.baseten.errors import BasetenAPIError

STEADY = "active: src (3 replicas, min:1 max:5) in production environment"


@pytest.fixture
def o(h):
    yield h
    assert h.baseten.writes == []
    assert h.pusher.launched == []


def observe_spec(**extra) -> dict:
    return {
        "modelName": "my-llm",
        "mode": "Observe",
        "sourceDeploymentName": "src",
        "environment": {"name": "production", **extra},
    }


def test_steady(o) -> None:
    o.steady_world()
    o.create(observe_spec())
    assert o.run().requeue_after == 30
    assert o.word() == "ACTIVE"
    assert o.message() == STEADY


def test_drift_reported_desired_first(o) -> None:
    o.steady_world(autoscaling={"min_replica": 5, "max_replica": 5})
    o.create(observe_spec(autoscaling={"minReplicas": 2, "maxReplicas": 6}))
    o.run()
    assert o.message() == (
        "active: src (3 replicas, min:5 max:5) in production environment | drift: minReplicas "
        "2→5, maxReplicas 6→5; changed by an unknown actor; awaiting reconciliation"
    )


OVERNIGHT = {
    "name": "overnight",
    "cadence": "DAILY",
    "weekdays": ["MONDAY"],
    "startHour": 22,
    "endHour": 6,
    "autoscaling": {"minReplicas": 0, "maxReplicas": 2},
}


def schedules(*items: dict, applied: str | None = None, timezone: str = "UTC") -> dict:
    return {
        "timezone": timezone,
        "schedules": list(items),
        "applied_state": {
            "schedule_id": applied,
            "autoscaling_settings": {"min_replica": 0, "max_replica": 2},
        },
    }


def test_schedule_drift_joins_the_drift_report(o) -> None:
    o.steady_world(autoscaling={"min_replica": 5, "max_replica": 5}, schedules=schedules())
    o.create(
        observe_spec(
            autoscaling={"minReplicas": 2},
            autoscalingSchedule={"timezone": "Europe/Berlin", "schedules": [OVERNIGHT]},
        )
    )
    o.run()
    assert o.word() == "ACTIVE"
    assert o.message() == (
        "active: src (3 replicas, min:5 max:5) in production environment | drift: minReplicas "
        "2→5, scheduleTimezone Europe/Berlin→UTC, schedule overnight added; changed by an "
        "unknown actor; awaiting reconciliation"
    )


def test_a_window_of_the_spec_holds_the_baseline_in_observe_too(o) -> None:
    window = {
        "id": "s-1",
        "name": "overnight",
        "enabled": True,
        "cadence": "DAILY",
        "weekdays": ["MONDAY"],
        "start_hour": 22,
        "end_hour": 6,
        "start_minute": 0,
        "end_minute": 0,
        "autoscaling_settings": {"min_replica": 0, "max_replica": 2},
    }
    o.steady_world(schedules=schedules(window, applied="s-1"))
    o.create(
        observe_spec(autoscaling={"minReplicas": 4}, autoscalingSchedule={"schedules": [OVERNIGHT]})
    )
    o.run()
    assert o.message() == (
        "active: src (3 replicas, min:0 max:2, schedule: overnight) in production environment"
    )


def test_a_managed_collection_that_does_not_decode_is_reported_unreadable(o) -> None:
    unreadable = {"schedules": [{"id": "s-1", "cadence": "WEEKLY"}], "applied_state": None}
    o.steady_world(autoscaling={"min_replica": 5, "max_replica": 5}, schedules=unreadable)
    o.create(
        observe_spec(
            autoscaling={"minReplicas": 2},
            promotionSettings={"rollingDeploy": True},
            autoscalingSchedule={"schedules": [OVERNIGHT]},
        )
    )
    o.run()
    assert o.word() == "ACTIVE"
    # Whether a window holds the baseline is unknown: its drift is not claimed either.
    assert o.message() == (
        "active: src (3 replicas, min:5 max:5) in production environment | drift: "
        "rollingDeploy true→false, autoscaling schedules unreadable; changed by an unknown "
        "actor; awaiting reconciliation"
    )
    assert o.events == []


def test_failing_current_awaits_reconciliation(o) -> None:
    o.steady_world(status="DEPLOY_FAILED")
    o.create(observe_spec())
    o.run()
    assert o.word() == "DEPLOY_FAILED"
    assert o.message() == (
        "active: src (3 replicas, min:1 max:5, DEPLOY_FAILED) in production environment"
        "; awaiting reconciliation"
    )


def test_candidate_matches(o) -> None:
    o.baseten.add_model()
    old = o.baseten.add_deployment(name="old", active_replica_count=3)
    cand = o.baseten.add_deployment(name="src", status="LOADING_MODEL", active_replica_count=1)
    o.baseten.add_environment(current=old, candidate=cand)
    o.create(observe_spec())
    o.run()
    assert o.word() == "LOADING_MODEL"
    assert o.message() == "active: old (3 replicas) | promoting: src (LOADING_MODEL, 1 replicas)"


def test_not_yet_promoted(o) -> None:
    o.baseten.add_model()
    old = o.baseten.add_deployment(name="old", active_replica_count=3)
    o.baseten.add_environment(current=old)
    o.create(observe_spec())
    o.run()
    assert o.word() == "PENDING"
    assert o.message() == (
        "active: old (3 replicas) | spec source: src (not yet promoted; awaiting reconciliation)"
    )


def test_no_active_deployment(o) -> None:
    o.baseten.add_model()
    o.baseten.add_environment()
    o.create(observe_spec())
    o.run()
    assert o.message() == (
        "no active deployment | spec source: src (not yet promoted; awaiting reconciliation)"
    )


def test_model_not_found(o) -> None:
    o.create(observe_spec())
    assert o.run().requeue_after == 30
    assert o.word() == "FAILED"
    assert o.message() == 'model "my-llm" not found in Baseten; observe mode does not create'


def test_lookup_error(o) -> None:
    o.create(observe_spec())
    o.baseten.fail("find_model", BasetenAPIError(0, "connection refused"))
    assert o.run().requeue_after == 30
    assert o.message() == "unable to check model my-llm: connection refused"


def test_environment_missing(o) -> None:
    o.baseten.add_model()
    o.create(observe_spec())
    o.run()
    assert o.message() == 'environment "production" does not exist; observe mode does not create'


def test_truss_source_name_computed_without_push(o) -> None:
    o.baseten.add_model()
    o.baseten.add_environment()
    o.configmaps.add("setup", {"s.sh": "echo"})
    spec = observe_spec()
    del spec["sourceDeploymentName"]
    spec["trussConfig"] = {
        "resources": {"accelerator": "L4"},
        "baseImage": {"image": "vllm:1.0"},
        "setupScript": {"configMapRef": {"name": "setup", "key": "s.sh"}},
    }
    o.create(spec)
    o.run()
    assert o.message().startswith("no active deployment | spec source: depl-vllm-1.0-")


def test_truss_source_error(o) -> None:
    o.baseten.add_model()
    spec = observe_spec()
    del spec["sourceDeploymentName"]
    spec["trussConfig"] = {
        "resources": {"accelerator": "L4"},
        "baseImage": {"image": "vllm:1.0"},
        "setupScript": {"configMapRef": {"name": "setup", "key": "s.sh"}},
    }
    o.create(spec)
    o.run()
    assert o.message() == (
        "failed to compute expected source deployment name: ConfigMap 'setup' not found"
    )


def test_flip_to_reconcile_acts(h) -> None:
    h.baseten.add_model()
    h.baseten.add_deployment(name="src")
    h.baseten.add_environment()
    h.create(observe_spec())
    h.run()
    assert h.baseten.writes == []
    h.edit(lambda obj: obj["spec"].__setitem__("mode", "Reconcile"))
    h.run()
    assert len(h.baseten.called("promote")) == 1


def test_drift_of_the_newer_settings_is_reported_by_their_names(o) -> None:
    o.steady_world(autoscaling={"min_replica": 1, "max_replica": 5, "max_scale_down_rate": 50})
    o.create(
        observe_spec(
            autoscaling={"targetInFlightTokens": 40000, "maxScaleDownRate": 20},
            promotionSettings={"rollingDeployConfig": {"replicaOverheadPercent": 10}},
        )
    )
    o.run()
    assert o.message() == (
        f"{STEADY} | drift: targetInFlightTokens 40000→0, maxScaleDownRate 20→50, "
        "replicaOverheadPercent 10→; changed by an unknown actor; awaiting reconciliation"
    )
