"""Every kind of response the simulator gives, validated against Baseten's OpenAPI schemas."""

from __future__ import annotations

import jsonschema
import pytest
import requests

from baseten_operator.baseten.models import EnvironmentV1
from baseten_operator.baseten.settings import detect_drift, update_payload
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten import BasetenSimulator

pytestmark = pytest.mark.integration


def test_every_response_kind_matches_the_spec(
    sim: BasetenSimulator, http: requests.Session, clock: FakeClock, validate
) -> None:
    v1 = sim.api_url
    model = sim.seed_model("llama")
    mid = model["id"]
    validate(model, "ModelV1")
    old = sim.seed_deployment(mid, "v1", autoscaling_settings={"min_replica": 1}, labels={"a": 1})
    building = sim.seed_deployment(mid, "v2", status="BUILDING")
    validate(building, "DeploymentV1")
    assert building["autoscaling_settings"] is None
    sim.seed_environment(
        mid,
        "production",
        current_deployment_id=old["id"],
        promotion_settings={"ramp_up_while_promoting": True, "rolling_deploy": True},
    )

    def ok(response: requests.Response, component: str) -> dict:
        assert response.status_code == 200, response.text
        body = response.json()
        validate(body, component)
        return body

    ok(http.get(f"{v1}/models"), "ModelsV1")
    ok(http.get(f"{v1}/models", params={"name": "llama"}), "ModelsV1")
    ok(http.get(f"{v1}/models/{mid}"), "ModelV1")
    ok(http.get(f"{v1}/models/{mid}/deployments"), "DeploymentsV1")
    ok(http.get(f"{v1}/models/{mid}/deployments/{old['id']}"), "DeploymentV1")
    dep_url = f"{v1}/models/{mid}/deployments/{building['id']}"
    ok(
        http.patch(f"{dep_url}/autoscaling_settings", json={"max_replica": 3}),
        "UpdateAutoscalingSettingsResponseV1",
    )
    ok(http.post(f"{dep_url}/retry"), "RetryDeploymentResponseV1")
    ok(http.get(f"{v1}/models/{mid}/environments"), "EnvironmentsV1")
    ok(
        http.post(
            f"{v1}/models/{mid}/environments",
            json={
                "name": "staging",
                "autoscaling_settings": {"min_replica": 1, "max_replica": 2},
                "promotion_settings": {
                    "promotion_cleanup_strategy": "DEACTIVATE",
                    "rolling_deploy_config": {"max_surge_percent": 50},
                },
            },
        ),
        "EnvironmentV1",
    )
    ok(
        http.patch(
            f"{v1}/models/{mid}/environments/staging",
            json={"autoscaling_settings": {"max_replica": 4}},
        ),
        "UpdateEnvironmentResponseV1",
    )
    clock.advance(60)  # v2 is ACTIVE now; promote it with a ramp-up
    promoted = ok(
        http.post(
            f"{v1}/models/{mid}/environments/production/promote",
            json={"deployment_id": building["id"]},
        ),
        "DeploymentV1",
    )
    clock.advance(1)
    env = ok(http.get(f"{v1}/models/{mid}/environments/production"), "EnvironmentV1")
    assert env["candidate_deployment"]["id"] == promoted["id"]
    assert env["in_progress_promotion"]["status"] == "RAMPING_UP"
    ok(
        http.post(
            f"{v1}/models/{mid}/environments/staging/promote", json={"deployment_id": old["id"]}
        ),
        "DeploymentV1",
    )
    copy = ok(http.get(f"{v1}/models/{mid}/environments/staging"), "EnvironmentV1")
    assert copy["candidate_deployment"]["name"].startswith("v1.")
    ok(http.post(f"{dep_url}/deactivate"), "DeactivateResponseV1")
    ok(http.post(f"{dep_url}/activate"), "ActivateResponseV1")
    spare = sim.seed_deployment(mid, "spare")
    ok(http.delete(f"{v1}/models/{mid}/deployments/{spare['id']}"), "DeploymentTombstoneV1")
    dev = sim.seed_environment(mid, "dev")
    validate(dev, "EnvironmentV1")
    ok(http.delete(f"{v1}/models/{mid}/environments/dev"), "EnvironmentTombstoneV1")
    ok(http.delete(f"{v1}/models/{mid}"), "ModelTombstoneV1")


def test_validator_catches_a_wrong_shape(validate) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validate({"models": [{"id": "x"}]}, "ModelsV1")
    with pytest.raises(AssertionError):
        validate({"success": True, "surprise": 1}, "ActivateResponseV1")


def test_autoscaling_schedules_match_the_spec(
    sim: BasetenSimulator, http: requests.Session, clock: FakeClock, validate
) -> None:
    """A PATCH in the spec's request shape (DAILY and HOURLY upserts), plus the ONE_TIME
    schedules its read models show; the environment read back with its schedules and the
    window in force."""
    mid = sim.seed_model("llama")["id"]
    dep = sim.seed_deployment(mid, "v1", autoscaling_settings={"min_replica": 1})
    sim.seed_environment(mid, "production", current_deployment_id=dep["id"])
    env_url = f"{sim.api_url}/models/{mid}/environments/production"
    inherit = dict.fromkeys(
        (
            "autoscaling_window",
            "scale_down_delay",
            "concurrency_target",
            "target_utilization_percentage",
            "target_in_flight_tokens",
            "max_scale_down_rate",
        )
    )
    recurring = {
        "timezone": "America/Los_Angeles",
        "schedules": [
            {
                "name": "evenings",  # 2026-01-01T00:00Z is Wednesday 16:00 in Los Angeles
                "enabled": True,
                "cadence": "DAILY",
                "weekdays": ["WEDNESDAY"],
                "start_hour": 15,
                "start_minute": 30,
                "end_hour": 18,
                "end_minute": 0,
                "autoscaling_settings": {"min_replica": 2, "max_replica": 4, **inherit},
            },
            {
                "name": "every-hour",
                "enabled": False,
                "cadence": "HOURLY",
                "weekdays": ["MONDAY"],
                "start_minute": 0,
                "end_minute": 10,
                "autoscaling_settings": {"min_replica": 1, "max_replica": 3, **inherit},
            },
        ],
    }
    request = {"autoscaling_schedule_settings": recurring}
    validate(request, "UpdateEnvironmentRequestV1")

    answer = http.patch(env_url, json=request)
    assert answer.status_code == 200, answer.text
    validate(answer.json(), "UpdateEnvironmentResponseV1")
    one_time = {
        "name": "launch",
        "enabled": True,
        "cadence": "ONE_TIME",
        "start_at": "2026-01-02T00:00:00Z",
        "end_at": "2026-01-02T06:00:00+00:00",
        "autoscaling_settings": {"min_replica": 6, "max_replica": 8, **inherit},
    }
    answer = http.patch(env_url, json={"autoscaling_schedule_settings": {"schedules": [one_time]}})
    assert answer.status_code == 200, answer.text
    clock.advance(60)

    env = http.get(env_url).json()
    validate(env, "EnvironmentV1")
    schedules = env["autoscaling_schedules"]
    validate(schedules, "EnvironmentAutoscalingSchedulesV1")
    evenings, every_hour, launch = schedules["schedules"]
    validate(evenings, "AutoscalingScheduleV1")
    validate(every_hour, "AutoscalingScheduleV1")
    validate(launch, "OneTimeAutoscalingScheduleV1")
    state = schedules["applied_state"]
    validate(state, "AutoscalingScheduleStateV1")
    assert state["schedule_id"] == evenings["id"]
    assert (
        state["autoscaling_settings"]["min_replica"],
        state["autoscaling_settings"]["max_replica"],
    ) == (2, 4)
    validate(http.get(f"{sim.api_url}/models/{mid}/environments").json(), "EnvironmentsV1")

    clock.advance(24 * 3600)  # Thursday 16:01 in Los Angeles: launch, 00:00Z to 06:00Z
    state = http.get(env_url).json()["autoscaling_schedules"]["applied_state"]
    assert state["schedule_id"] == launch["id"]

    refused = http.patch(
        env_url,
        json={"autoscaling_schedule_settings": {"schedules": [{**one_time, "end_at": None}]}},
    )
    assert refused.status_code == 400
    assert set(refused.json()) == {"code", "message", "details"}
    assert "start_at and end_at are required for ONE_TIME schedules" in refused.json()["message"]


def test_promotion_signals_match_the_spec(
    sim: BasetenSimulator, http: requests.Session, clock: FakeClock, validate
) -> None:
    """cancel_promotion answers CancelPromotionResponseV1 (CANCELED at once, RAMPING_DOWN
    for a ramping promotion, whose environment then shows the ramp-down); the rolling
    promotions' signals answer SignalPromotionResponseV1."""
    mid = sim.seed_model("llama")["id"]
    good = sim.seed_deployment(mid, "good", autoscaling_settings={"min_replica": 1})
    bad = sim.seed_deployment(mid, "bad", autoscaling_settings={"min_replica": 1})
    sim.seed_environment(mid, "staging", current_deployment_id=good["id"])
    sim.seed_environment(
        mid,
        "production",
        current_deployment_id=good["id"],
        promotion_settings={
            "rolling_deploy": True,
            "ramp_up_while_promoting": True,
            "ramp_up_duration_seconds": 100,
        },
    )
    env_url = f"{sim.api_url}/models/{mid}/environments"

    def post(env: str, signal: str, component: str) -> dict:
        response = http.post(f"{env_url}/{env}/{signal}", json={})
        assert response.status_code == 200, response.text
        body = response.json()
        validate(body, component)
        return body

    http.post(f"{env_url}/staging/promote", json={"deployment_id": bad["id"]})
    assert post("staging", "cancel_promotion", "CancelPromotionResponseV1")["status"] == "CANCELED"

    http.post(f"{env_url}/production/promote", json={"deployment_id": bad["id"]})
    clock.advance(25)
    for signal in ("pause_promotion", "resume_promotion"):
        assert post("production", signal, "SignalPromotionResponseV1") == {"success": True}
    assert post("production", "cancel_promotion", "CancelPromotionResponseV1")["status"] == (
        "RAMPING_DOWN"
    )
    env = http.get(f"{env_url}/production").json()
    validate(env, "EnvironmentV1")
    assert env["in_progress_promotion"]["status"] == "RAMPING_DOWN"
    assert env["current_deployment"]["name"] == "good"
    post("production", "force_roll_forward_promotion", "SignalPromotionResponseV1")
    assert http.get(f"{env_url}/production").json()["current_deployment"]["name"] == "bad"
    http.post(f"{env_url}/production/promote", json={"deployment_id": good["id"]})
    post("production", "force_cancel_promotion", "SignalPromotionResponseV1")
    refused = http.post(f"{env_url}/production/cancel_promotion", json={})
    assert refused.status_code == 400
    audited = [e["endpoint"] for e in sim.audit_log() if "promotion" in e["endpoint"]]
    assert audited == [
        "cancel_promotion",
        "pause_promotion",
        "resume_promotion",
        "cancel_promotion",
        "force_roll_forward_promotion",
        "force_cancel_promotion",
        "cancel_promotion",
    ]


def test_the_newer_environment_settings_round_trip_as_the_spec_says(
    sim: BasetenSimulator, http: requests.Session, clock: FakeClock, validate
) -> None:
    # The operator's own PATCH body for them, validated as the request Baseten's spec takes.
    spec_env = {
        "autoscaling": {"targetInFlightTokens": 40000, "maxScaleDownRate": 20},
        "promotionSettings": {"rollingDeployConfig": {"replicaOverheadPercent": 10}},
    }
    mid = sim.seed_model("llama")["id"]
    seeded = EnvironmentV1.model_validate(sim.seed_environment(mid, "production"))
    body = update_payload(spec_env, detect_drift(spec_env, seeded, 0.0))
    assert body == {
        "autoscaling_settings": {"target_in_flight_tokens": 40000, "max_scale_down_rate": 20},
        "promotion_settings": {"rolling_deploy_config": {"replica_overhead_percent": 10}},
    }
    validate(body, "UpdateEnvironmentRequestV1")
    url = f"{sim.api_url}/models/{mid}/environments/production"
    response = http.patch(url, json=body)
    assert response.status_code == 200, response.text
    validate(response.json(), "UpdateEnvironmentResponseV1")
    clock.advance(60)  # Baseten applies settings asynchronously
    env = http.get(url).json()
    validate(env, "EnvironmentV1")
    assert not detect_drift(spec_env, EnvironmentV1.model_validate(env), 0.0)
    # The spec's bound on the rate (1..50) is the simulator's too.
    too_fast = {"autoscaling_settings": {"max_scale_down_rate": 51}}
    with pytest.raises(jsonschema.ValidationError):
        validate(too_fast, "UpdateEnvironmentRequestV1")
    assert http.patch(url, json=too_fast).status_code == 400


def test_metrics_audit_logs_and_logs_match_the_spec(
    sim: BasetenSimulator, http: requests.Session, clock: FakeClock, validate
) -> None:
    """The observability endpoints' answers, with every kind of entry the simulator writes
    in the audit log (one union member of AuditLogEntryV1.event_data each)."""
    v1 = sim.api_url
    mid = sim.seed_model("llama")["id"]
    good = sim.seed_deployment(mid, "good", autoscaling_settings={"min_replica": 1})["id"]
    bad = sim.seed_deployment(mid, "bad", autoscaling_settings={"min_replica": 1})["id"]
    rolling = {"rolling_deploy": True, "rolling_deploy_config": {"stabilization_time_seconds": 60}}
    sim.seed_environment(mid, "production", current_deployment_id=good, promotion_settings=rolling)
    for dep in (good, bad):
        sim.set_traffic_profile(dep, 20, share_5xx=0.05, share_4xx=0.05)
    model_url = f"{v1}/models/{mid}"

    def ok(response: requests.Response, component: str) -> dict:
        assert response.status_code == 200, response.text
        body = response.json()
        validate(body, component)
        return body

    # Every event the audit log records, through the API (and the lifecycle: a push).
    ok(http.post(f"{model_url}/environments", json={"name": "staging"}), "EnvironmentV1")
    schedules = {"schedules": [], "timezone": "UTC"}
    http.patch(
        f"{model_url}/environments/staging",
        json={
            "autoscaling_settings": {"max_replica": 2},
            "autoscaling_schedule_settings": schedules,
        },
    )
    http.patch(f"{model_url}/deployments/{bad}/autoscaling_settings", json={"max_replica": 2})
    http.post(f"{model_url}/environments/production/promote", json={"deployment_id": bad})
    clock.advance(30)
    for signal in ("pause_promotion", "resume_promotion", "force_roll_forward_promotion"):
        ok(http.post(f"{model_url}/environments/production/{signal}"), "SignalPromotionResponseV1")
    http.post(f"{model_url}/deployments/{good}/deactivate")
    http.post(f"{model_url}/deployments/{good}/activate")
    pushed = sim.engine.create_pushed_deployment(mid, "pushed", files={}, truss_config={})["id"]
    sim.fail_deployment(pushed, "BUILD_FAILED", reason="the build ran out of disk")
    http.post(f"{model_url}/deployments/{pushed}/retry")
    spare = sim.seed_deployment(mid, "spare")["id"]
    http.delete(f"{model_url}/deployments/{spare}")
    http.delete(f"{model_url}/environments/staging")
    clock.advance(60)

    page = ok(http.get(f"{model_url}/audit_logs", params={"limit": 200}), "ListAuditLogsResponseV1")
    assert {e["event_type"] for e in page["items"]} == {
        "ENVIRONMENT_CREATED",
        "ENVIRONMENT_UPDATED",
        "ENVIRONMENT_DELETED",
        "MODEL_DEPLOYMENT_AUTOSCALING_SETTINGS_CHANGED",
        "MODEL_DEPLOYMENT_PROMOTED",
        "MODEL_PROMOTION_CONTROL_ACTION",
        "MODEL_DEPLOYMENT_DEACTIVATED",
        "MODEL_DEPLOYMENT_ACTIVATED",
        "MODEL_DEPLOYED",
        "MODEL_DEPLOYMENT_RETRIED",
        "MODEL_DEPLOYMENT_DELETED",
    }
    ok(
        http.get(
            f"{model_url}/audit_logs",
            params={"limit": 2, "event_type_groups": ["PROMOTED", "ENVIRONMENT_SETTINGS"]},
        ),
        "ListAuditLogsResponseV1",
    )

    dep_url = f"{model_url}/deployments/{bad}"
    for params in (
        {},
        {"mode": "SUMMARY"},
        {"mode": "SERIES", "start_epoch_millis": int(clock.now() * 1000) - 90_000},
    ):
        answer = ok(http.get(f"{dep_url}/metrics", params=params), "GetModelMetricsResponseV1")
        requests_total = answer["metric_descriptors"][1]
        assert requests_total["name"] == "baseten_inference_requests_total"
        codes = {labels["status_code"] for labels in requests_total["label_sets"]}
        assert codes == {"200", "400", "500"}

    logs = ok(http.get(f"{model_url}/deployments/{pushed}/logs"), "GetLogsResponseV1")
    assert logs["logs"][-1]["message"] == "Model loaded; the deployment is ACTIVE"  # retried
    errors = ok(
        http.get(f"{model_url}/deployments/{pushed}/logs", params={"min_level": "ERROR"}),
        "GetLogsResponseV1",
    )
    assert [line["message"] for line in errors["logs"]] == ["the build ran out of disk"]
