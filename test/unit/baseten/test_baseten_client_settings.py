"""Spec -> payload and drift detection (docs/contract.md 3.8)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import pytest

from baseten_operator.baseten.models import EnvironmentV1
from baseten_operator.baseten.settings import (
    Change,
    Drift,
    autoscaling_payload,
    detect_drift,
    promotion_payload,
    update_payload,
)

FULL_AUTOSCALING = {
    "minReplicas": 2,
    "maxReplicas": 5,
    "concurrencyTarget": 3,
    "autoscalingWindow": 120,
    "scaleDownDelay": 300,
    "targetUtilizationPercentage": 80,
    "targetInFlightTokens": 40000,
    "maxScaleDownRate": 20,
}
FULL_PROMOTION = {
    "scaleDownPreviousDeployment": False,
    "preserveInstanceType": False,
    "redeployOnPromotion": True,
    "rollingDeploy": True,
    "promotionCleanupStrategy": "DEACTIVATE",
    "rampUpWhilePromoting": True,
    "rampUpDurationSeconds": 300,
    "rollingDeployConfig": {
        "strategy": "REPLICA",
        "maxSurgePercent": 50,
        "maxUnavailablePercent": 10,
        "stabilizationTimeSeconds": 60,
        "replicaOverheadPercent": 10,
    },
}
FULL_SPEC = {"autoscaling": FULL_AUTOSCALING, "promotionSettings": FULL_PROMOTION}
NOW = 1_796_299_200.0  # 2026-12-03T12:00:00Z, the pass's clock


def environment(
    autoscaling: dict[str, Any] | None = None, promotion: dict[str, Any] | None = None
) -> EnvironmentV1:
    return EnvironmentV1.model_validate(
        {"name": "production", "autoscaling_settings": autoscaling, "promotion_settings": promotion}
    )


MATCHING_ENV = environment(
    {
        "min_replica": 2,
        "max_replica": 5,
        "concurrency_target": 3,
        "autoscaling_window": 120,
        "scale_down_delay": 300,
        "target_utilization_percentage": 80,
        "target_in_flight_tokens": 40000,
        "max_scale_down_rate": 20,
    },
    {
        "redeploy_on_promotion": True,
        "rolling_deploy": True,
        "promotion_cleanup_strategy": "DEACTIVATE",
        "ramp_up_while_promoting": True,
        "ramp_up_duration_seconds": 300,
        "rolling_deploy_config": {
            "rolling_deploy_strategy": "REPLICA",
            "max_surge_percent": 50,
            "max_unavailable_percent": 10,
            "stabilization_time_seconds": 60,
            "replica_overhead_percent": 10,
        },
    },
)


def test_autoscaling_payload_maps_every_field() -> None:
    assert autoscaling_payload(FULL_AUTOSCALING) == {
        "min_replica": 2,
        "max_replica": 5,
        "concurrency_target": 3,
        "autoscaling_window": 120,
        "scale_down_delay": 300,
        "target_utilization_percentage": 80,
        "target_in_flight_tokens": 40000,
        "max_scale_down_rate": 20,
    }


def test_autoscaling_payload_carries_only_set_fields() -> None:
    assert autoscaling_payload({"minReplicas": 0, "maxReplicas": None}) == {"min_replica": 0}
    assert autoscaling_payload({}) == {}


def test_promotion_payload_maps_every_environment_field_and_drops_promote_flags() -> None:
    assert promotion_payload(FULL_PROMOTION) == {
        "redeploy_on_promotion": True,
        "rolling_deploy": True,
        "promotion_cleanup_strategy": "DEACTIVATE",
        "ramp_up_while_promoting": True,
        "ramp_up_duration_seconds": 300,
        "rolling_deploy_config": {
            "rolling_deploy_strategy": "REPLICA",
            "max_surge_percent": 50,
            "max_unavailable_percent": 10,
            "stabilization_time_seconds": 60,
            "replica_overhead_percent": 10,
        },
    }


def test_promotion_payload_partial() -> None:
    assert promotion_payload({"rollingDeploy": False, "rollingDeployConfig": {}}) == {
        "rolling_deploy": False
    }
    assert promotion_payload({"rollingDeployConfig": {"maxSurgePercent": 0}}) == {
        "rolling_deploy_config": {"max_surge_percent": 0}
    }
    assert promotion_payload({"scaleDownPreviousDeployment": True}) == {}


def test_no_drift_when_everything_matches() -> None:
    drift = detect_drift(FULL_SPEC, MATCHING_ENV, NOW)
    assert drift == Drift()
    assert not drift
    assert update_payload(FULL_SPEC, drift) == {}


def test_every_field_drifts_in_the_documented_order() -> None:
    drift = detect_drift(FULL_SPEC, environment({}, {}), NOW)
    assert [c.field for c in drift.autoscaling] == [
        "minReplicas",
        "maxReplicas",
        "concurrencyTarget",
        "autoscalingWindow",
        "scaleDownDelay",
        "targetUtilization",
        "targetInFlightTokens",
        "maxScaleDownRate",
    ]
    assert [c.field for c in drift.promotion] == [
        "redeployOnPromotion",
        "rollingDeploy",
        "rampUpWhilePromoting",
        "rampUpDurationSeconds",
        "promotionCleanupStrategy",
        "rollingDeployStrategy",
        "maxSurgePercent",
        "maxUnavailablePercent",
        "stabilizationTimeSeconds",
        "replicaOverheadPercent",
    ]
    assert drift
    assert drift.changes == [*drift.autoscaling, *drift.promotion]


def test_missing_actual_values_count_as_zero_false_or_empty() -> None:
    drift = detect_drift(FULL_SPEC, environment(None, None), NOW)
    actual = {c.field: c.actual for c in drift.changes}
    assert actual["minReplicas"] == 0
    assert actual["redeployOnPromotion"] is False
    assert actual["promotionCleanupStrategy"] == ""
    assert actual["rollingDeployStrategy"] is None
    assert actual["stabilizationTimeSeconds"] is None


def test_a_rolling_config_baseten_does_not_have_prints_no_old_value() -> None:
    spec = {"promotionSettings": {"rollingDeployConfig": {"maxSurgePercent": 25}}}
    without = detect_drift(spec, environment(None, {"rolling_deploy_config": None}), NOW)
    assert [str(c) for c in without.changes] == ["maxSurgePercent →25"]
    field_missing = detect_drift(spec, environment(None, {"rolling_deploy_config": {}}), NOW)
    assert [str(c) for c in field_missing.changes] == ["maxSurgePercent 0→25"]


def test_drift_names_are_the_go_operators() -> None:
    spec = {"autoscaling": {"targetUtilizationPercentage": 70}}
    drift = detect_drift(spec, environment({"target_utilization_percentage": 80}, None), NOW)
    assert [str(c) for c in drift.changes] == ["targetUtilization 80→70"]


def test_spec_values_equal_to_the_zero_of_a_missing_value_are_not_drift() -> None:
    spec = {
        "autoscaling": {"minReplicas": 0},
        "promotionSettings": {
            "rollingDeploy": False,
            "rollingDeployConfig": {"maxSurgePercent": 0},
        },
    }
    assert not detect_drift(spec, environment(None, {"rolling_deploy_config": {}}), NOW)


def test_only_spec_set_fields_are_compared() -> None:
    spec = {"autoscaling": {"maxReplicas": 5}}
    actual = environment({"min_replica": 9, "max_replica": 5}, {"rolling_deploy": True})
    assert not detect_drift(spec, actual, NOW)
    assert not detect_drift({}, actual, NOW)


def test_promote_time_flags_never_drift() -> None:
    spec = {
        "promotionSettings": {"scaleDownPreviousDeployment": False, "preserveInstanceType": True}
    }
    assert not detect_drift(spec, environment(None, None), NOW)


def test_change_messages() -> None:
    spec = {
        "autoscaling": {"minReplicas": 5},
        "promotionSettings": {
            "rollingDeploy": False,
            "promotionCleanupStrategy": "KEEP",
            "rollingDeployConfig": {"strategy": "REPLICA"},
        },
    }
    actual = environment(
        {"min_replica": 2}, {"rolling_deploy": True, "promotion_cleanup_strategy": "SCALE_TO_ZERO"}
    )
    drift = detect_drift(spec, actual, NOW)
    assert [str(c) for c in drift.autoscaling] == ["minReplicas 2→5"]
    assert [str(c) for c in drift.promotion] == [
        "rollingDeploy true→false",
        "promotionCleanupStrategy SCALE_TO_ZERO→KEEP",
        "rollingDeployStrategy →REPLICA",
    ]
    assert str(Change("redeployOnPromotion", False, True)) == "redeployOnPromotion false→true"


def test_enum_values_from_typed_specs_render_as_their_value() -> None:
    class Strategy(StrEnum):
        KEEP = "KEEP"

    drift = detect_drift(
        {"promotionSettings": {"promotionCleanupStrategy": Strategy.KEEP}},
        environment(None, None),
        NOW,
    )
    assert [str(c) for c in drift.promotion] == ["promotionCleanupStrategy →KEEP"]
    assert not detect_drift(
        {"promotionSettings": {"promotionCleanupStrategy": Strategy.KEEP}},
        environment(None, {"promotion_cleanup_strategy": "KEEP"}),
        NOW,
    )


def test_update_payload_sends_each_drifted_group_whole() -> None:
    # Only maxReplicas drifted, yet the autoscaling group goes with all its spec-set fields;
    # promotion did not drift and is left out.
    actual = MATCHING_ENV.model_copy(deep=True)
    assert actual.autoscaling_settings is not None
    actual.autoscaling_settings.max_replica = 1
    drift = detect_drift(FULL_SPEC, actual, NOW)
    assert [str(c) for c in drift.changes] == ["maxReplicas 1→5"]
    assert update_payload(FULL_SPEC, drift) == {
        "autoscaling_settings": autoscaling_payload(FULL_AUTOSCALING)
    }


def test_update_payload_with_both_groups() -> None:
    drift = detect_drift(FULL_SPEC, environment(None, None), NOW)
    assert update_payload(FULL_SPEC, drift) == {
        "autoscaling_settings": autoscaling_payload(FULL_AUTOSCALING),
        "promotion_settings": promotion_payload(FULL_PROMOTION),
    }


@pytest.mark.parametrize("nested_change", ["maxUnavailablePercent", "stabilizationTimeSeconds"])
def test_rolling_config_drift_sends_the_whole_promotion_group(nested_change: str) -> None:
    spec = {
        "promotionSettings": {
            "rollingDeploy": True,
            "rollingDeployConfig": {nested_change: 30},
        }
    }
    actual = environment(None, {"rolling_deploy": True})
    drift = detect_drift(spec, actual, NOW)
    assert [c.field for c in drift.promotion] == [nested_change]
    assert update_payload(spec, drift) == {
        "promotion_settings": promotion_payload(spec["promotionSettings"])
    }


# --- autoscaling schedules: how they join the drift (baseten/schedules.py diffs them) ------

NIGHTLY = {
    "name": "nightly",
    "cadence": "DAILY",
    "weekdays": ["MONDAY"],
    "startHour": 22,
    "endHour": 6,
    "autoscaling": {"minReplicas": 0, "maxReplicas": 2},
}
NIGHTLY_API = {
    "id": "s-1",
    "name": "nightly",
    "enabled": True,
    "cadence": "DAILY",
    "weekdays": ["MONDAY"],
    "start_hour": 22,
    "end_hour": 6,
    "start_minute": 0,
    "end_minute": 0,
    "autoscaling_settings": {"min_replica": 0, "max_replica": 2},
}


def with_schedules(actual: EnvironmentV1, schedules: Any) -> EnvironmentV1:
    return actual.model_copy(update={"autoscaling_schedules": schedules})


def collection(*schedules: dict[str, Any], applied: str | None = None) -> dict[str, Any]:
    return {
        "timezone": "UTC",
        "schedules": list(schedules),
        "applied_state": {"schedule_id": applied, "autoscaling_settings": {"min_replica": 0}},
    }


def test_schedules_join_the_drift_last_and_the_one_payload() -> None:
    spec = {**FULL_SPEC, "autoscalingSchedule": {"timezone": "Europe/Berlin", "schedules": []}}
    actual = with_schedules(environment(None, None), collection(NIGHTLY_API))
    drift = detect_drift(spec, actual, NOW)
    assert [str(c) for c in drift.changes][-2:] == [
        "scheduleTimezone UTC→Europe/Berlin",
        "schedule nightly removed",
    ]
    assert update_payload(spec, drift) == {
        "autoscaling_settings": autoscaling_payload(FULL_AUTOSCALING),
        "promotion_settings": promotion_payload(FULL_PROMOTION),
        "autoscaling_schedule_settings": {
            "timezone": "Europe/Berlin",
            "delete_schedules": ["s-1"],
        },
    }


def test_only_drifted_schedules_make_a_payload() -> None:
    spec = {"autoscalingSchedule": {"timezone": "UTC", "schedules": [NIGHTLY]}}
    in_sync = with_schedules(environment(None, None), collection(NIGHTLY_API))
    assert not detect_drift(spec, in_sync, NOW)
    missing = detect_drift(spec, with_schedules(environment(None, None), None), NOW)
    assert [str(c) for c in missing.changes] == [
        "scheduleTimezone →UTC",
        "schedule nightly added",
    ]
    assert list(update_payload(spec, missing)) == ["autoscaling_schedule_settings"]


def test_a_window_applied_holds_the_baseline_autoscaling() -> None:
    spec = {"autoscaling": {"minReplicas": 2}, "autoscalingSchedule": {"schedules": [NIGHTLY]}}
    held = with_schedules(
        environment({"min_replica": 0}, None), collection(NIGHTLY_API, applied="s-1")
    )
    assert not detect_drift(spec, held, NOW)
    baseline = with_schedules(environment({"min_replica": 0}, None), collection(NIGHTLY_API))
    assert [str(c) for c in detect_drift(spec, baseline, NOW).changes] == ["minReplicas 0→2"]


def test_without_autoscaling_schedule_the_collection_is_never_read() -> None:
    spec = {"autoscaling": {"minReplicas": 2}}
    # A window applies and the collection does not even decode: neither matters.
    unreadable = {"schedules": [{**NIGHTLY_API, "cadence": "WEEKLY"}], "applied_state": None}
    for schedules in (collection(NIGHTLY_API, applied="s-1"), unreadable):
        actual = with_schedules(environment({"min_replica": 0}, None), schedules)
        drift = detect_drift(spec, actual, NOW)
        assert [str(c) for c in drift.changes] == ["minReplicas 0→2"]
        assert drift.unreadable_schedules is None
        assert "autoscaling_schedule_settings" not in update_payload(spec, drift)


def test_a_managed_collection_that_does_not_decode_says_so_and_holds_the_baseline() -> None:
    spec = {"autoscaling": {"minReplicas": 2}, "autoscalingSchedule": {"schedules": [NIGHTLY]}}
    unreadable = {"schedules": [{**NIGHTLY_API, "cadence": "WEEKLY"}], "applied_state": None}
    drift = detect_drift(spec, with_schedules(environment({}, None), unreadable), NOW)
    assert drift.unreadable_schedules is not None
    assert "schedules.0" in str(drift.unreadable_schedules)
    assert not drift  # nothing comparable: neither the schedules nor the held baseline


def test_observe_order_puts_the_desired_value_first() -> None:
    spec = {"autoscaling": {"minReplicas": 2}, "autoscalingSchedule": {"timezone": "UTC"}}
    actual = with_schedules(
        environment({"min_replica": 1}, None),
        {"timezone": "Asia/Tokyo", "schedules": [NIGHTLY_API], "applied_state": None},
    )
    assert [c.desired_first() for c in detect_drift(spec, actual, NOW).changes] == [
        "minReplicas 2→1",
        "scheduleTimezone UTC→Asia/Tokyo",
        "schedule nightly removed",
    ]
