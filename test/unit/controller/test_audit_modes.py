"""Audit: what a production team must be able to rely on, whatever the state of Baseten.

Observe never writes to Baseten, Pause never calls it, and every Baseten 404 on a call
made with a cached model ID invalidates the ID (sections 3.3, 3.15, 6 and 7).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import AutoscalingSettingsV1

TRUSS: dict[str, Any] = {
    "resources": {"accelerator": "L4"},
    "baseImage": {"image": "registry.example.com/team/vllm:0.16.0"},
    "dockerServer": {
        "startCommand": "serve",
        "readinessEndpoint": "/health",
        "livenessEndpoint": "/health",
        "predictEndpoint": "/predict",
        "serverPort": 8000,
    },
}


def inactive_current(h) -> None:
    h.steady_world(status="INACTIVE")


def failed_candidate(h) -> None:
    h.baseten.add_model()
    old = h.baseten.add_deployment(name="old", active_replica_count=2)
    cand = h.baseten.add_deployment(name="src", status="DEPLOY_FAILED")
    h.baseten.add_environment(current=old, candidate=cand)


def inactive_source(h) -> None:
    h.baseten.add_model()
    old = h.baseten.add_deployment(name="old", active_replica_count=2)
    h.baseten.add_deployment(name="src", status="INACTIVE")
    h.baseten.add_environment(current=old)


def failed_source(h) -> None:
    h.baseten.add_model()
    h.baseten.add_deployment(name="src", status="BUILD_FAILED")
    h.baseten.add_environment()


def promotable_source(h) -> None:
    h.baseten.add_model()
    h.baseten.add_deployment(name="src", status="ACTIVE")
    h.baseten.add_environment()


def drifted_environment(h) -> None:
    h.steady_world(autoscaling={"min_replica": 0, "max_replica": 1})


def missing_environment(h) -> None:
    h.baseten.add_model()
    h.baseten.add_deployment(name="src")


def orphans_to_clean(h) -> None:
    h.steady_world()
    h.baseten.add_deployment(
        name="leftover",
        status="INACTIVE",
        autoscaling_settings=AutoscalingSettingsV1(min_replica=2),
    )


WORLDS: dict[str, Callable[[Any], None]] = {
    "inactive current": inactive_current,
    "failed candidate": failed_candidate,
    "inactive source": inactive_source,
    "failed source": failed_source,
    "promotable source": promotable_source,
    "drifted environment": drifted_environment,
    "missing environment": missing_environment,
    "orphans to clean": orphans_to_clean,
}
SPEC_EXTRAS: dict[str, Any] = {
    "deletionPolicy": "Delete",
    "orphanDeploymentCleanup": {"intervalMinutes": 10, "scaleToZero": True, "delete": True},
}


def spec(mode: str, **extra: Any) -> dict[str, Any]:
    return {
        "modelName": "my-llm",
        "mode": mode,
        "sourceDeploymentName": "src",
        "environment": {"name": "production", "autoscaling": {"minReplicas": 1}},
        **SPEC_EXTRAS,
        **extra,
    }


@pytest.mark.parametrize("world", WORLDS)
def test_observe_never_writes_to_baseten(h, world: str) -> None:
    WORLDS[world](h)
    h.create(spec("Observe"))
    for _ in range(3):
        assert h.run().requeue_after == 30
        h.clock.advance(3 * 3600)  # past every retry deadline and cleanup interval
    assert h.baseten.writes == []
    assert h.pusher.launched == []


def test_observe_never_pushes_a_truss_config(h) -> None:
    h.baseten.add_model()
    h.baseten.add_environment()
    h.create(spec("Observe", sourceDeploymentName=None, trussConfig=TRUSS))
    h.edit(lambda o: o["spec"].pop("sourceDeploymentName"))
    h.run()
    assert h.word() == "PENDING"
    assert h.pusher.launched == []
    assert h.baseten.writes == []


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("pause", [{"mode": "Pause"}, {"mode": "Reconcile", "paused": True}])
def test_pause_never_calls_baseten(h, world: str, pause: dict[str, Any]) -> None:
    WORLDS[world](h)
    h.create(spec(**pause), status={"modelID": "m1", "message": "active: src (1 replicas)"})
    assert h.run().requeue_after is None
    h.clock.advance(3 * 3600)
    h.run()
    assert h.baseten.calls == []
    assert h.pusher.launched == []
    assert h.word() == "PAUSED"


@pytest.mark.parametrize("mode", ["Observe", "Pause"])
def test_deleting_an_observer_or_paused_cr_never_touches_the_model(h, mode: str) -> None:
    h.steady_world()
    h.create(spec(mode), status={"modelID": "m1"})
    h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))
    h.run()
    assert h.baseten.calls == []
    assert h.kube.objects == {}  # the finalizer is gone, and with it the object


# --- section 3.15 for the calls the step-15 tests did not cover ------------------------


def cached(h, environment: dict[str, Any]) -> None:
    h.create(
        {"modelName": "my-llm", "sourceDeploymentName": "src", "environment": environment},
        status={"modelID": "m1", "modelIDResolvedTime": "2025-12-01T00:00:00Z"},
    )


@pytest.mark.parametrize(
    ("world", "method"),
    [
        (inactive_current, "activate_deployment"),
        (inactive_source, "activate_deployment"),
        (drifted_environment, "update_environment"),
    ],
)
def test_404_on_activate_or_patch_invalidates_the_cached_model_id(
    h, world: Callable[[Any], None], method: str
) -> None:
    world(h)
    environment: dict[str, Any] = {"name": "production"}
    if world is drifted_environment:
        environment["autoscaling"] = {"minReplicas": 1}
    cached(h, environment)
    h.baseten.fail(method, BasetenAPIError(404, "model not found"))
    assert h.run().requeue_after == 1
    assert h.baseten.called(method)
    assert "modelID" not in h.status()
    assert h.status()["modelIDResolvedTime"] == "2025-12-01T00:00:00Z"
    assert ("Warning", "Invalidating cached model ID m1, will re-resolve") in [
        (t, m) for t, r, m in h.events if r == "ModelNotFound"
    ]


# --- Observe with a cached model ID whose model is gone ----------------------------------


def observer_with_cached_id(h, model_id: str) -> None:
    h.create(
        spec("Observe"), status={"modelID": model_id, "modelIDResolvedTime": "2025-12-01T00:00:00Z"}
    )


def test_observer_drops_a_cached_id_whose_model_was_recreated(h) -> None:
    h.baseten.add_model(model_id="m2")  # recreated under a new ID; m1 is gone
    h.baseten.add_deployment(model_id="m2", name="src", active_replica_count=2)
    h.baseten.add_environment(model_id="m2", current=h.baseten.deployments["m2"][0])
    observer_with_cached_id(h, "m1")
    assert h.run().requeue_after == 1
    assert "modelID" not in h.status()
    assert h.status()["modelIDResolvedTime"] == "2025-12-01T00:00:00Z"
    assert h.event("ModelNotFound") == (
        "Warning",
        "Invalidating cached model ID m1, will re-resolve",
    )
    h.run()
    assert h.status()["modelID"] == "m2"
    assert h.word() == "ACTIVE"
    assert h.baseten.writes == []


def test_observer_reports_a_missing_environment_of_a_live_model(h) -> None:
    h.baseten.add_model()
    observer_with_cached_id(h, "m1")
    assert h.run().requeue_after == 30
    assert h.status()["modelID"] == "m1"
    assert h.message() == 'environment "production" does not exist; observe mode does not create'
    assert h.reasons() == []


def test_observer_keeps_its_cached_id_when_the_check_fails(h) -> None:
    h.baseten.add_model()
    h.baseten.fail("find_model", BasetenAPIError(500, "boom"))
    observer_with_cached_id(h, "m1")
    assert h.run().requeue_after == 30
    assert h.status()["modelID"] == "m1"
