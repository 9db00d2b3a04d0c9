"""Section 3 step 8: the environment, its creation and its drift."""

from __future__ import annotations

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import PromotionSettingsV1, RollingDeployConfigV1

AUTOSCALING = {"minReplicas": 2, "maxReplicas": 20}
STEADY = "active: src (3 replicas, min:1 max:5) in production environment"


def spec(**environment) -> dict:
    return {
        "modelName": "my-llm",
        "sourceDeploymentName": "src",
        "environment": {"name": "production", **environment},
    }


def test_missing_environment_is_created_with_spec_settings(h) -> None:
    h.baseten.add_model()
    h.create(
        spec(
            autoscaling=AUTOSCALING,
            promotionSettings={"rollingDeploy": True, "scaleDownPreviousDeployment": False},
        )
    )
    result = h.run()
    assert result.requeue_after == 10
    assert h.baseten.called("create_environment") == [
        ("m1", "production", {"min_replica": 2, "max_replica": 20}, {"rolling_deploy": True})
    ]
    assert h.word() == "PENDING"
    assert h.message() == "Created environment production"
    assert h.event("EnvironmentCreated") == (
        "Normal",
        "Created environment production with autoscaling settings",
    )


def test_environment_without_settings_is_created_bare(h) -> None:
    h.baseten.add_model()
    h.create()
    h.run()
    assert h.baseten.called("create_environment") == [("m1", "production", None, None)]


def test_environment_create_failure(h) -> None:
    h.baseten.add_model()
    h.create()
    h.baseten.fail("create_environment", BasetenAPIError(400, "nope"))
    with pytest.raises(Exception, match="Failed to create environment 'production'"):
        h.run()
    assert h.word() == "FAILED"
    assert h.message() == "Failed to create environment 'production': HTTP 400: nope"
    assert h.event("EnvironmentCreateFailed") == (
        "Warning",
        "Failed to create environment production: HTTP 400: nope",
    )


def test_environment_get_error(h) -> None:
    h.baseten.add_model()
    h.create()
    h.baseten.fail("get_environment", BasetenAPIError(503, "unavailable"))
    with pytest.raises(Exception, match="unable to check environment"):
        h.run()
    assert h.word() == "FAILED"
    assert h.message() == "unable to check environment production: HTTP 503: unavailable"
    assert h.baseten.writes == []


def test_single_autoscaling_drift(h) -> None:
    h.steady_world(autoscaling={"min_replica": 1, "max_replica": 5})
    h.create(spec(autoscaling={"minReplicas": 2, "maxReplicas": 5}))
    result = h.run()
    assert result.requeue_after == 10
    assert h.baseten.called("update_environment") == [
        ("m1", "production", {"min_replica": 2, "max_replica": 5}, None, None)
    ]
    assert h.event("AutoscalingUpdated") == ("Normal", "updating autoscaling: minReplicas 1→2")
    assert h.word() == "PENDING"
    assert h.message() == f"{STEADY} | updating settings: minReplicas 1→2"


def test_both_groups_drift_in_one_patch(h) -> None:
    h.steady_world(autoscaling={"min_replica": 1, "max_replica": 5})
    h.create(
        spec(
            autoscaling={"minReplicas": 2, "maxReplicas": 6},
            promotionSettings={"rollingDeploy": True, "preserveInstanceType": False},
        )
    )
    h.run()
    assert h.baseten.called("update_environment") == [
        (
            "m1",
            "production",
            {"min_replica": 2, "max_replica": 6},
            {"rolling_deploy": True},
            None,
        )
    ]
    assert h.event("AutoscalingUpdated") == ("Normal", "updating autoscaling: 2 changes")
    assert h.event("PromotionSettingsUpdated") == (
        "Normal",
        "updating promotion settings: rollingDeploy false→true",
    )
    assert h.message() == f"{STEADY} | updating settings: 3 changes"


def test_drift_without_current_deployment_has_no_steady_prefix(h) -> None:
    h.baseten.add_model()
    h.baseten.add_environment(autoscaling={"min_replica": 0})
    h.create(spec(autoscaling={"minReplicas": 1}))
    h.run()
    assert h.message() == "updating settings: minReplicas 0→1"


def test_promote_time_flags_are_never_drift(h) -> None:
    h.steady_world()
    h.create(
        spec(
            promotionSettings={"scaleDownPreviousDeployment": False, "preserveInstanceType": False}
        )
    )
    h.run()
    assert h.baseten.called("update_environment") == []
    assert h.word() == "ACTIVE"


def test_drift_update_failure(h) -> None:
    h.steady_world(autoscaling={"min_replica": 1, "max_replica": 5})
    h.create(spec(autoscaling={"minReplicas": 2}, promotionSettings={"rollingDeploy": True}))
    h.baseten.fail("update_environment", BasetenAPIError(500, "boom"))
    with pytest.raises(Exception, match="failed to update settings"):
        h.run()
    assert h.word() == "FAILED"
    assert h.message() == f"{STEADY} | failed to update settings for production: HTTP 500: boom"
    assert h.event("AutoscalingUpdateFailed") == (
        "Warning",
        "Failed to update autoscaling for production: HTTP 500: boom",
    )
    assert h.event("PromotionSettingsUpdateFailed") == (
        "Warning",
        "Failed to update promotion settings for production: HTTP 500: boom",
    )


def test_drift_counts_in_metrics(h) -> None:
    from baseten_operator.controller.basetenmodel import telemetry

    counter = telemetry.DRIFT_CORRECTIONS.labels(group="autoscaling")
    before = counter._value.get()
    h.steady_world(autoscaling={"min_replica": 1, "max_replica": 5})
    h.create(spec(autoscaling={"minReplicas": 2}))
    h.run()
    assert counter._value.get() == before + 1


# The settings no Go operator managed: drift-reconciled with their groups, named as the CR
# names them.
NEW_AUTOSCALING = {"minReplicas": 1, "targetInFlightTokens": 40000, "maxScaleDownRate": 20}
NEW_ROLLING = {"rollingDeployConfig": {"replicaOverheadPercent": 10}}


def test_new_autoscaling_settings_drift_in_the_autoscaling_patch(h) -> None:
    h.steady_world(
        autoscaling={
            "min_replica": 1,
            "max_replica": 5,
            "target_in_flight_tokens": 30000,
            "max_scale_down_rate": 20,
        }
    )
    h.create(spec(autoscaling=NEW_AUTOSCALING))
    assert h.run().requeue_after == 10
    # The whole group goes, as for the other autoscaling fields.
    assert h.baseten.called("update_environment") == [
        (
            "m1",
            "production",
            {"min_replica": 1, "target_in_flight_tokens": 40000, "max_scale_down_rate": 20},
            None,
            None,
        )
    ]
    assert h.event("AutoscalingUpdated") == (
        "Normal",
        "updating autoscaling: targetInFlightTokens 30000→40000",
    )
    assert h.message() == f"{STEADY} | updating settings: targetInFlightTokens 30000→40000"


def test_a_scale_down_rate_baseten_does_not_report_is_drift(h) -> None:
    # Baseten answers null until one is set: counted as 0, so the spec's value is sent.
    h.steady_world(autoscaling={"min_replica": 1, "max_replica": 5})
    h.create(spec(autoscaling={"maxScaleDownRate": 20}))
    h.run()
    assert h.baseten.called("update_environment")[0][2] == {"max_scale_down_rate": 20}
    assert h.event("AutoscalingUpdated")[1] == "updating autoscaling: maxScaleDownRate 0→20"


def test_replica_overhead_drifts_in_the_promotion_patch(h) -> None:
    h.steady_world()
    h.baseten.environments[("m1", "production")].promotion_settings = PromotionSettingsV1(
        rolling_deploy_config=RollingDeployConfigV1(
            rolling_deploy_strategy="REPLICA", replica_overhead_percent=0
        )
    )
    h.create(spec(promotionSettings=NEW_ROLLING))
    h.run()
    assert h.baseten.called("update_environment") == [
        (
            "m1",
            "production",
            None,
            {"rolling_deploy_config": {"replica_overhead_percent": 10}},
            None,
        )
    ]
    assert h.event("PromotionSettingsUpdated") == (
        "Normal",
        "updating promotion settings: replicaOverheadPercent 0→10",
    )


def test_new_settings_in_sync_are_not_patched(h) -> None:
    h.steady_world(
        autoscaling={"min_replica": 1, "target_in_flight_tokens": 40000, "max_scale_down_rate": 20}
    )
    h.baseten.environments[("m1", "production")].promotion_settings = PromotionSettingsV1(
        rolling_deploy_config=RollingDeployConfigV1(replica_overhead_percent=10)
    )
    h.create(spec(autoscaling=NEW_AUTOSCALING, promotionSettings=NEW_ROLLING))
    assert h.run().requeue_after == h.steady_period()
    assert h.baseten.called("update_environment") == []
    assert h.word() == "ACTIVE"
