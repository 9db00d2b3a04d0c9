"""Section 3 step 8: autoscaling schedules, their drift and the one PATCH."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.controller.basetenmodel import telemetry
from baseten_operator.controller.shared.endings import ReconcileError

STEADY = "active: src (3 replicas, min:1 max:5) in production environment"
WINDOW_API = {
    "min_replica": 0,
    "max_replica": 2,
    "autoscaling_window": None,
    "scale_down_delay": None,
    "concurrency_target": None,
    "target_utilization_percentage": None,
    "target_in_flight_tokens": None,
    "max_scale_down_rate": None,
}
OVERNIGHT = {
    "name": "overnight",
    "cadence": "DAILY",
    "weekdays": ["MONDAY", "TUESDAY"],
    "startHour": 22,
    "endHour": 6,
    "autoscaling": {"minReplicas": 0, "maxReplicas": 2},
}
OVERNIGHT_API = {
    "id": "s-1",
    "name": "overnight",
    "enabled": True,
    "cadence": "DAILY",
    "weekdays": ["TUESDAY", "MONDAY"],
    "start_hour": 22,
    "end_hour": 6,
    "start_minute": 0,
    "end_minute": 0,
    "autoscaling_settings": WINDOW_API,
}
OVERNIGHT_UPSERT = {
    "name": "overnight",
    "enabled": True,
    "cadence": "DAILY",
    "weekdays": ["MONDAY", "TUESDAY"],
    "start_hour": 22,
    "end_hour": 6,
    "start_minute": 0,
    "end_minute": 0,
    "autoscaling_settings": WINDOW_API,
}
FOREIGN_API = {**OVERNIGHT_API, "id": "s-9", "name": "added-in-the-ui"}


def spec(**environment: Any) -> dict[str, Any]:
    return {
        "modelName": "my-llm",
        "sourceDeploymentName": "src",
        "environment": {"name": "production", **environment},
    }


def collection(
    *schedules: dict[str, Any],
    applied: str | None = None,
    applied_settings: dict[str, Any] | None = None,
    timezone: str = "UTC",
) -> dict[str, Any]:
    return {
        "timezone": timezone,
        "schedules": list(schedules),
        "applied_state": {
            "schedule_id": applied,
            "autoscaling_settings": applied_settings or {"min_replica": 1, "max_replica": 5},
        },
    }


UNREADABLE = {"schedules": [{**OVERNIGHT_API, "cadence": "WEEKLY"}], "applied_state": None}


def patches(h) -> list[tuple[Any, ...]]:
    return h.baseten.called("update_environment")


def test_a_missing_schedule_is_created_in_one_patch(h) -> None:
    counter = telemetry.DRIFT_CORRECTIONS.labels(group="schedules")
    before = counter._value.get()
    h.steady_world(schedules=collection())
    h.create(spec(autoscalingSchedule={"schedules": [OVERNIGHT]}))
    result = h.run()
    assert patches(h) == [
        ("m1", "production", None, None, {"schedules": [OVERNIGHT_UPSERT]}),
    ]
    assert h.event("AutoscalingScheduleUpdated") == (
        "Normal",
        "updating autoscaling schedules: schedule overnight added",
    )
    assert h.reasons() == ["AutoscalingScheduleUpdated"]
    assert h.word() == "PENDING"
    assert h.message() == f"{STEADY} | updating settings: schedule overnight added"
    assert result.requeue_after == h.timing.settings_applied
    assert counter._value.get() == before + 1


def test_a_replace_and_a_delete_go_in_the_same_patch(h) -> None:
    changed = {**OVERNIGHT, "autoscaling": {"minReplicas": 1, "maxReplicas": 3}}
    h.steady_world(schedules=collection(OVERNIGHT_API, FOREIGN_API))
    h.create(spec(autoscalingSchedule={"schedules": [changed]}))
    h.run()
    [(_, _, _, _, request)] = patches(h)
    assert request["delete_schedules"] == ["s-9"]
    assert [(s["id"], s["autoscaling_settings"]["min_replica"]) for s in request["schedules"]] == [
        ("s-1", 1)
    ]
    assert h.event("AutoscalingScheduleUpdated") == (
        "Normal",
        "updating autoscaling schedules: 2 changes",
    )
    assert h.message() == f"{STEADY} | updating settings: 2 changes"


def test_every_drifted_group_goes_in_one_patch_and_the_changes_are_counted_over_all(h) -> None:
    h.steady_world(schedules=collection(OVERNIGHT_API))
    h.create(
        spec(
            autoscaling={"minReplicas": 2},
            promotionSettings={"rollingDeploy": True},
            autoscalingSchedule={"timezone": "Europe/Berlin", "schedules": [OVERNIGHT]},
        )
    )
    h.run()
    assert patches(h) == [
        (
            "m1",
            "production",
            {"min_replica": 2},
            {"rolling_deploy": True},
            {"timezone": "Europe/Berlin"},
        )
    ]
    assert h.reasons() == [
        "AutoscalingUpdated",
        "PromotionSettingsUpdated",
        "AutoscalingScheduleUpdated",
    ]
    assert h.event("AutoscalingScheduleUpdated")[1] == (
        "updating autoscaling schedules: scheduleTimezone UTC→Europe/Berlin"
    )
    assert h.message() == f"{STEADY} | updating settings: 3 changes"


def test_schedules_in_sync_are_not_patched(h) -> None:
    h.steady_world(schedules=collection(OVERNIGHT_API))
    h.create(spec(autoscalingSchedule={"timezone": "UTC", "schedules": [OVERNIGHT]}))
    assert h.run().requeue_after == h.steady_period()
    assert patches(h) == []
    assert (h.word(), h.message()) == ("ACTIVE", STEADY)


def test_without_autoscaling_schedule_the_collection_is_left_alone(h) -> None:
    h.steady_world(schedules=collection(FOREIGN_API))
    h.create(spec())
    h.run()
    assert patches(h) == []
    assert h.word() == "ACTIVE"


def test_a_window_of_the_spec_holds_the_baseline_autoscaling(h) -> None:
    h.steady_world(
        schedules=collection(
            OVERNIGHT_API, applied="s-1", applied_settings={"min_replica": 0, "max_replica": 2}
        )
    )
    h.create(spec(autoscaling={"minReplicas": 4}, autoscalingSchedule={"schedules": [OVERNIGHT]}))
    h.run()
    assert patches(h) == []
    assert h.word() == "ACTIVE"
    assert h.message() == (
        "active: src (3 replicas, min:0 max:2, schedule: overnight) in production environment"
    )


def test_an_unmanaged_window_does_not_hold_the_baseline(h) -> None:
    h.steady_world(schedules=collection(FOREIGN_API, applied="s-9"))
    h.create(spec(autoscaling={"minReplicas": 4}))
    h.run()
    assert patches(h) == [("m1", "production", {"min_replica": 4}, None, None)]


def test_an_unmanaged_collection_that_does_not_decode_is_ignored(h) -> None:
    h.steady_world(schedules=UNREADABLE)
    h.create(spec(autoscaling={"minReplicas": 4}))
    h.run()
    assert patches(h) == [("m1", "production", {"min_replica": 4}, None, None)]
    assert h.reasons() == ["AutoscalingUpdated"]
    assert h.message() == f"{STEADY} | updating settings: minReplicas 1→4"


def test_a_managed_collection_that_does_not_decode_fails_and_writes_nothing(h) -> None:
    h.steady_world(schedules=UNREADABLE)
    h.create(
        spec(
            autoscaling={"minReplicas": 4},
            promotionSettings={"rollingDeploy": True},
            autoscalingSchedule={"schedules": [OVERNIGHT]},
        )
    )
    with pytest.raises(ReconcileError):
        h.run()
    assert h.baseten.writes == []
    assert h.word() == "FAILED"
    assert h.message().startswith("failed to read autoscaling schedules for production: ")
    event_type, text = h.event("AutoscalingScheduleUpdateFailed")
    assert event_type == "Warning"
    assert text.startswith("Failed to read autoscaling schedules for production: ")
    assert "cadence" in text
    assert h.reasons() == ["AutoscalingScheduleUpdateFailed"]


def test_a_failed_patch_of_the_schedules_alone_names_them(h) -> None:
    h.steady_world(schedules=collection())
    h.create(spec(autoscalingSchedule={"schedules": [OVERNIGHT]}))
    h.baseten.fail("update_environment", BasetenAPIError(500, "boom"))
    with pytest.raises(ReconcileError):
        h.run()
    assert h.word() == "FAILED"
    assert h.message() == (
        f"{STEADY} | failed to update autoscaling schedules for production: HTTP 500: boom"
    )
    assert h.event("AutoscalingScheduleUpdateFailed") == (
        "Warning",
        "Failed to update autoscaling schedules for production: HTTP 500: boom",
    )


def test_a_failed_patch_of_several_groups_names_the_settings_and_every_group(h) -> None:
    h.steady_world(schedules=collection())
    h.create(spec(autoscaling={"minReplicas": 4}, autoscalingSchedule={"schedules": [OVERNIGHT]}))
    h.baseten.fail("update_environment", BasetenAPIError(500, "boom"))
    with pytest.raises(ReconcileError):
        h.run()
    assert h.message() == f"{STEADY} | failed to update settings for production: HTTP 500: boom"
    assert h.reasons() == ["AutoscalingUpdateFailed", "AutoscalingScheduleUpdateFailed"]
    assert h.event("AutoscalingScheduleUpdateFailed")[1] == (
        "Failed to update autoscaling schedules for production: HTTP 500: boom"
    )


def test_an_ended_one_time_window_is_judged_by_the_pass_clock(h, iso_time) -> None:
    end = h.clock.now() + 3600
    launch = {
        "name": "launch",
        "cadence": "ONE_TIME",
        "startAt": iso_time(end - 7200),
        "endAt": iso_time(end),
        "autoscaling": {"minReplicas": 2, "maxReplicas": 8},
    }
    h.steady_world(schedules=collection())
    h.create(spec(autoscalingSchedule={"schedules": [launch]}))
    h.run()
    assert patches(h)[0][4]["schedules"][0]["name"] == "launch"
    h.clock.advance(3600)  # the window has ended: creating it now would be pointless
    h.run()
    assert len(patches(h)) == 1
    assert h.word() == "ACTIVE"


def test_a_new_environment_gets_its_schedules_on_the_next_pass(h) -> None:
    # CreateEnvironmentRequestV1 takes no schedules: the drift correction creates them.
    h.baseten.add_model()
    h.baseten.add_deployment(name="src", active_replica_count=1)
    h.create(spec(autoscalingSchedule={"schedules": [OVERNIGHT]}))
    h.run()
    assert h.baseten.called("create_environment") == [("m1", "production", None, None)]
    h.run()
    assert patches(h) == [("m1", "production", None, None, {"schedules": [OVERNIGHT_UPSERT]})]
    assert h.message() == "updating settings: schedule overnight added"


def test_the_steady_message_names_any_window_baseten_applies(h) -> None:
    # Shown whatever the spec manages: it says what the deployment runs on now.
    h.steady_world(
        status="SCALED_TO_ZERO",
        schedules=collection(
            FOREIGN_API, applied="s-9", applied_settings={"min_replica": 0, "max_replica": 2}
        ),
    )
    h.create(spec())
    h.run()
    assert h.message() == (
        "active: src (3 replicas, min:0 max:2, schedule: added-in-the-ui, SCALED_TO_ZERO) "
        "in production environment"
    )


def test_the_steady_message_shows_the_baseline_outside_a_window_or_when_unreadable(h) -> None:
    h.steady_world(schedules=collection(OVERNIGHT_API))
    h.create(spec())
    h.run()
    assert h.message() == STEADY
    h.baseten.environments[("m1", "production")].autoscaling_schedules = UNREADABLE
    h.run()
    assert h.message() == STEADY
    assert h.writes == 0
