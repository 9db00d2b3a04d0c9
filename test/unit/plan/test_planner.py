"""The planner runs the real pass: modes, the finalizer, blockers, backoff, exit codes."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from baseten_operator.api.constants import FINALIZER
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import DeploymentV1, EnvironmentV1, ModelV1, SecretV1
from baseten_operator.controller.basetenmodel.orphans import OrphanVerdict
from baseten_operator.plan.actions import (
    Activate,
    CancelPromotion,
    CreateEnvironment,
    Deactivate,
    DeleteModel,
    DeleteOrphan,
    DeleteSecret,
    Promote,
    Push,
    Retry,
    ScaleInOrphan,
    ScheduleChange,
    SettingChange,
    UpdateEnvironment,
    UpsertSecret,
)
from baseten_operator.plan.command import exit_code
from baseten_operator.plan.inputs import ConfigMaps
from baseten_operator.plan.planner import ModelPlan, Planner
from baseten_operator.plan.render import SCHEMA_PATH, to_json, to_table
from baseten_operator.plan.world import RecordedEvent, RecordingBaseten
from baseten_operator.runtime.clock import FakeClock, format_rfc3339
from baseten_operator.truss.naming import deployment_name


class Baseten:
    """Reads of one model `m1` with deployments v1 (current of production) and v2."""

    def __init__(self, v2_status: str = "ACTIVE") -> None:
        self.v1 = DeploymentV1(id="d1", name="v1", status="ACTIVE", active_replica_count=1)
        self.v2 = DeploymentV1(id="d2", name="v2", status=v2_status)
        self.base_url = "http://unused"

    def find_model(self, name: str) -> ModelV1 | None:
        return ModelV1(id="m1", name=name) if name == "llama" else None

    def get_environment(self, model_id: str, env_name: str) -> EnvironmentV1:
        if env_name != "production":
            raise BasetenAPIError(404, "no such environment")
        return EnvironmentV1(name=env_name, current_deployment=self.v1)

    def find_deployment(self, model_id: str, name: str) -> DeploymentV1 | None:
        return {"v1": self.v1, "v2": self.v2}.get(name)

    def get_deployment(self, model_id: str, deployment_id: str) -> DeploymentV1:
        return {"d1": self.v1, "d2": self.v2}[deployment_id]


def cr(mode: str = "Reconcile", source: str = "v2", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "models.baseten.com/v1alpha1",
        "kind": "BasetenModel",
        "metadata": {"name": "m", "namespace": "ns"},
        "spec": {
            "modelName": "llama",
            "sourceDeploymentName": source,
            "environment": {"name": "production"},
            "mode": mode,
        },
        "status": status,
    }


def plan(obj: dict[str, Any], baseten: Baseten | None = None, **kwargs: Any) -> ModelPlan:
    clock = FakeClock()
    planner = Planner(RecordingBaseten(baseten or Baseten()), ConfigMaps(), clock)  # type: ignore[arg-type]
    (result,) = planner.plan([obj], **kwargs)
    return result


def test_a_new_cr_is_planned_as_if_its_finalizer_were_there() -> None:
    obj = cr()
    result = plan(obj)
    assert [a.type for a in result.actions] == ["promote"]
    assert FINALIZER not in (obj["metadata"].get("finalizers") or [])  # the input is untouched


def test_a_forward_fix_is_planned_as_a_cancel_of_the_own_promotion_then_the_promote() -> None:
    baseten = Baseten()
    bad = DeploymentV1(id="d9", name="bad", status="ACTIVE")
    baseten.get_environment = lambda model_id, env_name: EnvironmentV1(  # type: ignore[method-assign]
        name=env_name, current_deployment=baseten.v1, candidate_deployment=bad
    )
    obj = cr(modelID="m1", candidateDeploymentID="d9", candidateDeploymentName="bad")
    result = plan(obj, baseten)
    assert result.actions == [
        CancelPromotion("production", "bad", "d9"),
        Promote("production", "v1", "v2", "d2", True, True),
    ]
    # Someone else's promotion (not recorded as the CR's candidate) is waited for instead.
    assert plan(cr(modelID="m1"), baseten).actions == []


@pytest.mark.parametrize(
    ("mode", "note"),
    [
        ("Observe", "Observe mode: the operator reads Baseten and reports, it never writes"),
        ("Pause", "Pause mode: reconciliation is paused, the operator calls nothing"),
    ],
)
def test_observe_and_pause_show_no_actions_and_why(mode: str, note: str) -> None:
    result = plan(cr(mode=mode))
    assert result.actions == [] and result.notes == [note]
    assert f"  no actions: {note}" in to_table([result])


def test_an_invalid_spec_is_a_blocker_naming_the_field() -> None:
    obj = cr()
    del obj["spec"]["sourceDeploymentName"]
    result = plan(obj)
    assert result.actions == []
    (blocker,) = result.blockers
    assert blocker.startswith("invalid spec: ")


def test_a_missing_model_is_a_blocker() -> None:
    obj = cr()
    obj["spec"]["modelName"] = "ghost"
    result = plan(obj)
    assert result.actions == [] and any("ghost" in b for b in result.blockers)


def test_a_retry_backing_off_waits_and_a_due_one_retries() -> None:
    clock = FakeClock()
    failing = Baseten(v2_status="DEPLOY_FAILED")
    started = format_rfc3339(clock.now() - 60)
    later = format_rfc3339(clock.now() + 600)
    waiting = plan(
        cr(
            sourceDeploymentName="v2",
            firstDeploymentFailureTime=started,
            nextRetryTime=later,
            deploymentRetryCount=1,
        ),
        failing,
    )
    assert waiting.actions == [] and waiting.notes == [f"waiting: next retry at {later}"]
    due = plan(cr(sourceDeploymentName="v2", firstDeploymentFailureTime=started), failing)
    assert due.actions == [Retry("v2", "d2")]


def test_a_push_backing_off_waits_and_a_due_one_pushes() -> None:
    clock = FakeClock()
    truss = {
        "resources": {"accelerator": "L4"},
        "baseImage": {"image": "registry.example.com/vllm:0.16.0"},
        "dockerServer": {
            "startCommand": "serve",
            "readinessEndpoint": "/health",
            "livenessEndpoint": "/health",
            "predictEndpoint": "/predict",
            "serverPort": 8000,
        },
    }
    name = deployment_name(truss, "")

    def failed_push(next_retry: float) -> dict[str, Any]:
        obj = cr(
            modelID="m1",
            sourceDeploymentName=name,
            trussPushStatus="TRUSS_PUSH_FAILED",
            trussPushFailureCount=2,
            trussPushLastError="truss push failed: quota",
            trussPushNextRetryTime=format_rfc3339(next_retry),
        )
        del obj["spec"]["sourceDeploymentName"]
        obj["spec"]["trussConfig"] = truss
        return obj

    later = clock.now() + 600
    waiting = plan(failed_push(later))
    assert waiting.actions == [] and waiting.blockers == []
    assert waiting.notes == [f"waiting: next retry at {format_rfc3339(later)}"]
    assert waiting.status["message"] == (
        f"truss push failed for {name} (attempt 2): truss push failed: quota; "
        f"next retry at {format_rfc3339(later)}"
    )
    due = plan(failed_push(clock.now() - 1))
    assert due.actions == [Push(name, "llama", False)]


def test_a_push_waiting_for_secrets_shows_the_wait_and_no_push() -> None:
    truss = {
        "resources": {"accelerator": "L4"},
        "baseImage": {"image": "vllm:1"},
        "secrets": {"hf_token": "", "wandb": ""},
    }
    obj = cr(modelID="m1")
    del obj["spec"]["sourceDeploymentName"]
    obj["spec"]["trussConfig"] = truss
    baseten = Baseten()
    baseten.list_secrets = lambda: [SecretV1(id="s1", name="wandb")]  # type: ignore[attr-defined]
    waiting = plan(obj, baseten)
    assert waiting.actions == [] and waiting.blockers == []
    assert waiting.notes == ["waiting for secrets: hf_token"]
    assert waiting.status == {
        "deploymentStatus": "PENDING",
        "message": "waiting for secrets: hf_token",
    }
    assert "  no actions: waiting for secrets: hf_token" in to_table([waiting])
    baseten.list_secrets = lambda: [  # type: ignore[attr-defined]
        SecretV1(id="s1", name="wandb"),
        SecretV1(id="s2", name="hf_token"),
    ]
    assert plan(obj, baseten).actions == [Push(deployment_name(truss, ""), "llama", False)]


def test_a_stopped_build_is_a_blocker() -> None:
    result = plan(cr(), Baseten(v2_status="BUILD_STOPPED"))
    assert result.actions == []
    assert result.status["deploymentStatus"] == "BUILD_STOPPED"
    assert result.blockers == [result.status["message"]]


def test_destroy_with_guardrails_blocked_by_a_serving_environment() -> None:
    obj = cr(source="v1")
    obj["spec"]["deletionPolicy"] = "DeleteWithGuardrails"

    class Serving(Baseten):
        def list_environments(self, model_id: str) -> list[EnvironmentV1]:
            return [EnvironmentV1(name="production", current_deployment=self.v1)]

    result = plan(obj, Serving(), destroy=True)
    assert result.actions == []
    assert result.status["deploymentStatus"] == "DELETE_BLOCKED"
    assert result.blockers == [result.status["message"]]


def test_schedule_drift_is_planned_as_the_one_update_the_pass_would_send() -> None:
    class Scheduled(Baseten):
        def get_environment(self, model_id: str, env_name: str) -> EnvironmentV1:
            return EnvironmentV1(
                name=env_name,
                current_deployment=self.v1,
                autoscaling_settings={"min_replica": 1},
                autoscaling_schedules={
                    "timezone": "UTC",
                    "schedules": [
                        {
                            "id": "s-9",
                            "name": "from-the-ui",
                            "cadence": "HOURLY",
                            "weekdays": ["MONDAY"],
                            "start_minute": 0,
                            "end_minute": 30,
                        }
                    ],
                    "applied_state": None,
                },
            )

    obj = cr(source="v1")
    obj["spec"]["environment"] |= {
        "autoscaling": {"minReplicas": 2},
        "autoscalingSchedule": {"timezone": "Europe/Berlin"},
    }
    result = plan(obj, Scheduled())
    (update,) = result.actions
    assert update == UpdateEnvironment(
        "production",
        [
            SettingChange("minReplicas", 1, 2),
            SettingChange("scheduleTimezone", "UTC", "Europe/Berlin"),
        ],
        {"min_replica": 2},
        None,
        schedules=[ScheduleChange("from-the-ui", "removed")],
        autoscaling_schedule_settings={"timezone": "Europe/Berlin", "delete_schedules": ["s-9"]},
    )
    assert update.describe() == (
        "update environment production: minReplicas 1→2, scheduleTimezone UTC→Europe/Berlin, "
        "schedule from-the-ui removed"
    )


def test_the_newer_settings_are_planned_in_their_groups_update() -> None:
    class Drifted(Baseten):
        def get_environment(self, model_id: str, env_name: str) -> EnvironmentV1:
            return EnvironmentV1(
                name=env_name,
                current_deployment=self.v1,
                autoscaling_settings={"min_replica": 1, "max_scale_down_rate": 50},
                promotion_settings={"rolling_deploy_config": {"replica_overhead_percent": 0}},
            )

    obj = cr(source="v1")
    obj["spec"]["environment"] |= {
        "autoscaling": {"targetInFlightTokens": 40000, "maxScaleDownRate": 20},
        "promotionSettings": {"rollingDeployConfig": {"replicaOverheadPercent": 10}},
    }
    (update,) = plan(obj, Drifted()).actions
    assert update == UpdateEnvironment(
        "production",
        [
            SettingChange("targetInFlightTokens", 0, 40000),
            SettingChange("maxScaleDownRate", 50, 20),
            SettingChange("replicaOverheadPercent", 0, 10),
        ],
        {"target_in_flight_tokens": 40000, "max_scale_down_rate": 20},
        {"rolling_deploy_config": {"replica_overhead_percent": 10}},
    )
    assert update.describe() == (
        "update environment production: targetInFlightTokens 0→40000, maxScaleDownRate 50→20, "
        "replicaOverheadPercent 0→10"
    )


def test_exit_codes() -> None:
    quiet = ModelPlan("ns", "a", "m", "p", "Reconcile")
    busy = ModelPlan("ns", "b", "m", "p", "Reconcile", actions=[Retry("v", "d")])
    broken = ModelPlan("ns", "c", "m", "p", "Reconcile", error="boom")
    assert exit_code([quiet], detailed=True) == 0
    assert exit_code([quiet, busy], detailed=True) == 2
    assert exit_code([quiet, busy], detailed=False) == 0
    assert exit_code([busy, broken], detailed=True) == 1


def test_the_json_of_every_action_type_validates_against_the_shipped_schema() -> None:
    every = ModelPlan(
        "ns",
        "m",
        "llama",
        "production",
        "Reconcile",
        actions=[
            CreateEnvironment("production", {"min_replica": 1}, None),
            UpdateEnvironment(
                "production",
                [
                    SettingChange("minReplicas", 1, 2),
                    SettingChange("scheduleTimezone", None, "UTC"),
                ],
                {"min_replica": 2},
                None,
                schedules=[ScheduleChange("overnight", "added")],
                autoscaling_schedule_settings={"timezone": "UTC", "schedules": []},
            ),
            Push("depl-x-1234abcd", "llama", True),
            Promote("production", None, "v2", "d2", True, True),
            CancelPromotion("production", "bad", "d9"),
            Retry("v2", "d2"),
            Activate("v1", "d1", True),
            Deactivate("v1", "d1"),
            ScaleInOrphan("old", "d3", {"min_replica": 0}),
            DeleteOrphan("old", "d3"),
            DeleteModel("llama", "m1", "DeleteWithGuardrails", "clear"),
            UpsertSecret("hf_token", None),
            DeleteSecret("hf_token", "search"),
        ],
        blockers=["something"],
        orphans=[
            OrphanVerdict("old", "d3", True, True, "scale in (minReplicas 1→0); delete: stale")
        ],
        events=[RecordedEvent("Normal", "DeploymentPromoted", "promoted")],
        status={"deploymentStatus": "PROMOTING", "message": "promoting"},
        source={"deployment": "v2", "exists": True},
    )
    document = json.loads(to_json([every, ModelPlan("ns", "q", "llama", "staging", "Observe")]))
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    assert document["changes"] is True
    assert [a["type"] for a in document["items"][0]["actions"]] == [
        "create-environment",
        "update-environment",
        "push",
        "promote",
        "cancel-promotion",
        "retry",
        "activate",
        "deactivate",
        "scale-in-orphan",
        "delete-orphan",
        "delete-model",
        "upsert-secret",
        "delete-secret",
    ]
    table = to_table([every])
    assert (
        "  2. update environment production: minReplicas 1→2, scheduleTimezone →UTC, "
        "schedule overnight added"
    ) in table
    assert "  4. promote in production: (none) → v2" in table
    assert "  5. cancel promotion in production of bad" in table
    assert "    old: scale in (minReplicas 1→0); delete: stale" in table
    assert "  12. upsert secret hf_token (value not shown)" in table
    assert "  13. delete secret hf_token in team search" in table
    assert table.endswith("Plan: 13 actions on 1 of 1 BasetenModels, 1 blocked.\n")
