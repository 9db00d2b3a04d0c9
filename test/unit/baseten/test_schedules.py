"""Autoscaling schedules: the spec's collection against Baseten's (baseten/schedules.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from baseten_operator.baseten.schedules import (
    UnreadableSchedules,
    read_schedules,
    schedule_drift,
)

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
WINDOW = {"minReplicas": 2, "maxReplicas": 8}
WINDOW_API = {
    "min_replica": 2,
    "max_replica": 8,
    "autoscaling_window": None,
    "scale_down_delay": None,
    "concurrency_target": None,
    "target_utilization_percentage": None,
    "target_in_flight_tokens": None,
    "max_scale_down_rate": None,
}
DAILY = {
    "name": "business-hours",
    "cadence": "DAILY",
    "weekdays": ["MONDAY", "FRIDAY"],
    "startHour": 8,
    "endHour": 18,
    "startMinute": 0,
    "endMinute": 30,
    "autoscaling": WINDOW,
}
DAILY_API = {
    "id": "s-1",
    "name": "business-hours",
    "enabled": True,
    "cadence": "DAILY",
    "weekdays": ["FRIDAY", "MONDAY"],  # Baseten's order, not the spec's
    "start_hour": 8,
    "end_hour": 18,
    "start_minute": 0,
    "end_minute": 30,
    "autoscaling_settings": WINDOW_API,
}
ONE_TIME = {
    "name": "launch",
    "cadence": "ONE_TIME",
    "startAt": "2026-12-24T08:00:00Z",
    "endAt": "2026-12-26T09:00:00+01:00",
    "autoscaling": WINDOW,
}
ONE_TIME_API = {
    "id": "s-2",
    "name": "launch",
    "enabled": True,
    "cadence": "ONE_TIME",
    "start_at": "2026-12-24T09:00:00+01:00",  # the same instants, other offsets
    "end_at": "2026-12-26T08:00:00Z",
    "autoscaling_settings": WINDOW_API,
}


def drift(
    spec: dict[str, Any], observed: dict[str, Any] | None
) -> tuple[list[str], dict[str, Any]]:
    result = schedule_drift(spec, read_schedules(observed), NOW)
    return [str(change) for change in result.changes], result.request


def observed(*schedules: dict[str, Any], timezone: str | None = "UTC") -> dict[str, Any]:
    return {"timezone": timezone, "schedules": list(schedules), "applied_state": None}


def test_a_collection_that_matches_needs_no_request() -> None:
    spec = {"timezone": "UTC", "schedules": [DAILY, ONE_TIME]}
    assert drift(spec, observed(DAILY_API, ONE_TIME_API)) == ([], {})


def test_missing_schedules_are_created_in_spec_order_with_every_setting() -> None:
    hourly = {"name": "top", "cadence": "HOURLY", "weekdays": ["SUNDAY"], "endMinute": 10,
              "autoscaling": {**WINDOW, "maxScaleDownRate": 20}}  # fmt: skip
    changes, request = drift({"schedules": [DAILY, hourly, ONE_TIME]}, None)
    assert changes == [
        "schedule business-hours added",
        "schedule top added",
        "schedule launch added",
    ]
    assert request == {
        "schedules": [
            {
                "name": "business-hours",
                "enabled": True,
                "cadence": "DAILY",
                "weekdays": ["MONDAY", "FRIDAY"],  # spec order
                "start_hour": 8,
                "end_hour": 18,
                "start_minute": 0,
                "end_minute": 30,
                "autoscaling_settings": WINDOW_API,
            },
            {  # HOURLY: no hours at all (the spec's "unrestricted HOURLY")
                "name": "top",
                "enabled": True,
                "cadence": "HOURLY",
                "weekdays": ["SUNDAY"],
                "start_minute": 0,
                "end_minute": 10,
                "autoscaling_settings": {**WINDOW_API, "max_scale_down_rate": 20},
            },
            {  # ONE_TIME: the read model's shape, times verbatim
                "name": "launch",
                "enabled": True,
                "cadence": "ONE_TIME",
                "start_at": "2026-12-24T08:00:00Z",
                "end_at": "2026-12-26T09:00:00+01:00",
                "autoscaling_settings": WINDOW_API,
            },
        ]
    }


def test_a_changed_schedule_is_replaced_in_place_and_a_foreign_one_deleted() -> None:
    foreign = {**DAILY_API, "id": "s-9", "name": "click-ops"}
    changed = {**DAILY, "autoscaling": {**WINDOW, "concurrencyTarget": 4}}
    changes, request = drift({"schedules": [changed]}, observed(DAILY_API, foreign))
    assert changes == ["schedule business-hours changed", "schedule click-ops removed"]
    assert request["schedules"][0]["id"] == "s-1"
    assert request["schedules"][0]["autoscaling_settings"]["concurrency_target"] == 4
    assert request["delete_schedules"] == ["s-9"]


@pytest.mark.parametrize(
    ("spec_change", "observed_change"),
    [
        ({"enabled": False}, {}),
        ({}, {"enabled": False}),
        ({"weekdays": ["MONDAY"]}, {}),
        ({"endHour": 19}, {}),
        ({"startMinute": 15}, {}),
        ({"autoscaling": {**WINDOW, "scaleDownDelay": 60}}, {}),  # a value against inherit
        ({}, {"autoscaling_settings": {**WINDOW_API, "scale_down_delay": 60}}),
    ],
)
def test_every_compared_field_counts(
    spec_change: dict[str, Any], observed_change: dict[str, Any]
) -> None:
    changes, _ = drift({"schedules": [DAILY | spec_change]}, observed(DAILY_API | observed_change))
    assert changes == ["schedule business-hours changed"]


def test_what_a_cadence_does_not_use_is_never_drift() -> None:
    hourly_spec = {
        "name": "top",
        "cadence": "HOURLY",
        "weekdays": ["SUNDAY"],
        "autoscaling": WINDOW,
    }
    hourly_api = {"id": "h", "name": "top", "cadence": "HOURLY", "weekdays": ["SUNDAY"],
                  "start_hour": 0, "end_hour": 23, "start_minute": 0, "end_minute": 0,
                  "autoscaling_settings": WINDOW_API}  # fmt: skip
    one_time_api = {**ONE_TIME_API, "weekdays": ["MONDAY"], "start_minute": 5}
    spec = {"schedules": [hourly_spec, ONE_TIME]}
    assert drift(spec, observed(hourly_api, one_time_api)) == ([], {})


def test_a_different_instant_is_drift_and_unparsable_times_compare_raw() -> None:
    later = {**ONE_TIME, "endAt": "2026-12-27T08:00:00Z"}
    assert drift({"schedules": [later]}, observed(ONE_TIME_API))[0] == ["schedule launch changed"]
    odd = {**ONE_TIME, "startAt": "christmas"}
    assert drift({"schedules": [odd]}, observed(ONE_TIME_API | {"start_at": "christmas"}))[0] == []


def test_an_ended_one_time_schedule_is_neither_created_changed_nor_deleted() -> None:
    ended = {**ONE_TIME, "endAt": "2026-12-01T00:00:00Z"}
    assert drift({"schedules": [ended]}, None) == ([], {})
    stale = {**ONE_TIME_API, "end_at": "2026-11-01T00:00:00Z", "autoscaling_settings": None}
    assert drift({"schedules": [ended]}, observed(stale)) == ([], {})


def test_duplicates_are_deleted_once_before_anything_else() -> None:
    duplicate = {**DAILY_API, "id": "s-1b"}
    changes, request = drift({"schedules": []}, observed(DAILY_API, duplicate))
    assert changes == [
        "schedule business-hours duplicate removed",
        "schedule business-hours removed",
    ]
    assert request == {"delete_schedules": ["s-1b", "s-1"]}


def test_the_timezone_is_sent_whenever_the_spec_sets_it_and_reported_when_it_differs() -> None:
    changes, request = drift(
        {"timezone": "Europe/Paris", "schedules": [DAILY]}, observed(DAILY_API)
    )
    assert changes == ["scheduleTimezone UTC→Europe/Paris"]
    assert request == {"timezone": "Europe/Paris"}
    changes, request = drift({"timezone": "UTC", "schedules": [{**DAILY, "endHour": 20}]},
                             observed(DAILY_API))  # fmt: skip
    assert changes == ["schedule business-hours changed"]
    assert request["timezone"] == "UTC"
    assert drift({"timezone": "UTC"}, None)[0] == ["scheduleTimezone →UTC"]


def test_no_spec_schedules_delete_every_schedule_and_none_keep_the_zone() -> None:
    changes, request = drift({"schedules": []}, observed(DAILY_API, timezone="UTC"))
    assert changes == ["schedule business-hours removed"]
    assert "timezone" not in request


def test_an_unknown_cadence_makes_the_collection_unreadable() -> None:
    with pytest.raises(UnreadableSchedules, match="cadence"):
        read_schedules(observed({**DAILY_API, "cadence": "WEEKLY"}))


def test_the_schedule_in_force_is_named_by_the_applied_state() -> None:
    schedules = read_schedules(observed(DAILY_API) | {"applied_state": {"schedule_id": "s-1"}})
    assert schedules.window_applied
    assert schedules.schedule_in_force is not None
    assert schedules.schedule_in_force.name == "business-hours"
    baseline = read_schedules(observed(DAILY_API) | {"applied_state": {"schedule_id": None}})
    assert not baseline.window_applied and baseline.schedule_in_force is None
