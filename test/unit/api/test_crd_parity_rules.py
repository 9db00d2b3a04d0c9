"""The Go operator's newer fields and rules: spec.team, CPU-only resources, schedules.

Each case goes through the emulator's admission of the generated CRD (as an API server
would judge it) and through the operator's own types, which must agree: an object the API
server would refuse is also one the operator answers with FAILED instead of acting on it.
"""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.api.types import BasetenModelSpec
from testsupport.crd_admission import admit, operator_problems

GPU_IMAGE = "us-docker.pkg.dev/img:v6"


def truss_spec(resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "modelName": "m",
        "environment": {"name": "production"},
        "trussConfig": {"resources": resources, "baseImage": {"image": GPU_IMAGE}},
    }


def schedule_spec(*schedules: dict[str, Any]) -> dict[str, Any]:
    return {
        "modelName": "m",
        "sourceDeploymentName": "s",
        "environment": {
            "name": "production",
            "autoscalingSchedule": {"timezone": "Europe/Paris", "schedules": list(schedules)},
        },
    }


# --- resources -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "resources",
    [
        {"accelerator": "H100:1", "useGpu": True},
        {"accelerator": "L4"},
        {"cpu": "2", "memory": "4Gi", "useGpu": False},
        {"cpu": "500m"},
    ],
    ids=["gpu", "accelerator-alone", "cpu-and-memory", "cpu-alone"],
)
def test_gpu_and_cpu_only_resources_are_admitted(
    openapi_schema: dict[str, Any], resources: dict[str, Any]
) -> None:
    spec = truss_spec(resources)
    assert admit(openapi_schema, spec) == []
    assert operator_problems(spec) is None


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({}, "one of accelerator or cpu must be set"),
        ({"memory": "4Gi"}, "one of accelerator or cpu must be set"),
        ({"cpu": "2", "useGpu": True}, "useGpu requires accelerator"),
    ],
    ids=["empty", "memory-alone", "cpu-with-use-gpu"],
)
def test_resources_without_a_gpu_or_cpu_are_refused(
    openapi_schema: dict[str, Any], resources: dict[str, Any], message: str
) -> None:
    spec = truss_spec(resources)
    assert admit(openapi_schema, spec) == [f'Invalid value: "object": {message}']
    problems = operator_problems(spec)
    assert problems is not None and message in problems


@pytest.mark.parametrize("field", ["accelerator", "cpu", "memory"])
def test_empty_resource_strings_are_refused(openapi_schema: dict[str, Any], field: str) -> None:
    resources = {"accelerator": "H100:1", "cpu": "2", "memory": "4Gi"} | {field: ""}
    spec = truss_spec(resources)
    assert any("at least 1 chars long" in message for message in admit(openapi_schema, spec))
    assert operator_problems(spec) is not None


# --- team ------------------------------------------------------------------------------------

TEAM_IMMUTABLE = 'Invalid value: "object": team is immutable once set'


def test_a_team_may_be_set_on_creation_or_added_later(openapi_schema: dict[str, Any]) -> None:
    without = schedule_spec()
    with_team = {**without, "team": "search"}
    assert admit(openapi_schema, with_team) == []
    assert admit(openapi_schema, with_team, old=without) == []
    assert admit(openapi_schema, with_team, old=with_team) == []


def test_a_team_once_set_cannot_change_or_go(openapi_schema: dict[str, Any]) -> None:
    with_team = {**schedule_spec(), "team": "search"}
    assert admit(openapi_schema, {**with_team, "team": "ranking"}, old=with_team) == [
        TEAM_IMMUTABLE
    ]
    assert admit(openapi_schema, schedule_spec(), old=with_team) == [TEAM_IMMUTABLE]


def test_an_empty_team_is_refused(openapi_schema: dict[str, Any]) -> None:
    spec = {**schedule_spec(), "team": ""}
    assert admit(openapi_schema, spec) != []
    assert operator_problems(spec) is not None


# --- autoscaling schedules ---------------------------------------------------------------------

WINDOW = {"minReplicas": 2, "maxReplicas": 8}
DAILY = {
    "name": "business-hours",
    "cadence": "DAILY",
    "weekdays": ["MONDAY", "FRIDAY"],
    "startHour": 8,
    "endHour": 18,
    "autoscaling": WINDOW,
}
HOURLY = {"name": "top-of-hour", "cadence": "HOURLY", "weekdays": ["SUNDAY"], "endMinute": 10,
          "autoscaling": WINDOW}  # fmt: skip
ONE_TIME = {
    "name": "launch",
    "cadence": "ONE_TIME",
    "startAt": "2026-12-24T08:00:00Z",
    "endAt": "2026-12-26T08:00:00+01:00",
    "autoscaling": {**WINDOW, "maxScaleDownRate": 50, "targetInFlightTokens": 1000},
}


def test_each_cadence_is_admitted_with_its_fields(openapi_schema: dict[str, Any]) -> None:
    spec = schedule_spec(DAILY, HOURLY, ONE_TIME)
    assert admit(openapi_schema, spec) == []
    parsed = BasetenModelSpec.model_validate(spec).environment.autoscaling_schedule
    assert parsed is not None and parsed.schedules is not None
    assert [s.enabled for s in parsed.schedules] == [True, True, True]  # the default
    assert parsed.schedules[1].start_minute == 0  # the default


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ({**DAILY, "weekdays": []}, "weekdays is required for DAILY and HOURLY schedules"),
        ({k: v for k, v in HOURLY.items() if k != "weekdays"},
         "weekdays is required for DAILY and HOURLY schedules"),
        ({k: v for k, v in ONE_TIME.items() if k != "endAt"},
         "startAt and endAt are required for ONE_TIME schedules"),
        ({**DAILY, "startAt": "2026-12-24T08:00:00Z"},
         "startAt and endAt are only valid for ONE_TIME schedules"),
        ({k: v for k, v in DAILY.items() if k != "endHour"},
         "startHour and endHour are required for DAILY schedules"),
        ({**HOURLY, "startHour": 3}, "startHour and endHour are only valid for DAILY schedules"),
        ({**ONE_TIME, "endHour": 3}, "startHour and endHour are only valid for DAILY schedules"),
        ({**DAILY, "autoscaling": {"minReplicas": 9, "maxReplicas": 8}},
         "minReplicas must be less than or equal to maxReplicas"),
    ],
    ids=["daily-no-weekdays", "hourly-no-weekdays", "one-time-no-end", "daily-with-start-at",
         "daily-no-end-hour", "hourly-with-hour", "one-time-with-hour", "min-above-max"],
)  # fmt: skip
def test_cadence_rules_refuse_what_a_cadence_does_not_take(
    openapi_schema: dict[str, Any], schedule: dict[str, Any], message: str
) -> None:
    spec = schedule_spec(schedule)
    assert admit(openapi_schema, spec) == [f'Invalid value: "object": {message}']
    problems = operator_problems(spec)
    assert problems is not None and message in problems


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("startHour", 24),
        ("endMinute", 60),
        ("cadence", "WEEKLY"),
        ("weekdays", ["MONDAY", "MONDAY"]),
        ("weekdays", ["FUNDAY"]),
    ],
)
def test_schedule_field_bounds(openapi_schema: dict[str, Any], path: str, value: Any) -> None:
    spec = schedule_spec({**DAILY, path: value})
    assert admit(openapi_schema, spec) != []


@pytest.mark.parametrize(
    ("field", "value"),
    [("maxScaleDownRate", 51), ("targetUtilizationPercentage", 0), ("targetInFlightTokens", 0)],
)
def test_window_setting_bounds(openapi_schema: dict[str, Any], field: str, value: int) -> None:
    spec = schedule_spec({**DAILY, "autoscaling": {**WINDOW, field: value}})
    assert admit(openapi_schema, spec) != []
    assert operator_problems(spec) is not None


def test_schedules_are_keyed_by_name_and_at_most_ten(openapi_schema: dict[str, Any]) -> None:
    duplicate = schedule_spec(DAILY, {**HOURLY, "name": DAILY["name"]})
    assert any("Duplicate value" in message for message in admit(openapi_schema, duplicate))
    eleven = schedule_spec(*({**HOURLY, "name": f"s{i}"} for i in range(11)))
    assert any("must have at most 10 items" in m for m in admit(openapi_schema, eleven))
    assert operator_problems(eleven) is not None
