"""Autoscaling schedules in the simulator, on a fake clock: editing an environment's schedules
(PATCH through the REST routes, in process), the UI's immediate edits, validation, and which
window `applied_state` reports at a given moment in the schedule's timezone."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten import BasetenSimulator, LifecycleDurations, rest
from baseten_operator.sim.baseten.errors import SimError
from baseten_operator.sim.baseten.records import SCHEDULE_OVERRIDES

D = LifecycleDurations()
LA = "America/Los_Angeles"


def overrides(minimum: int, maximum: int, **others: Any) -> dict[str, Any]:
    """All eight overrides, as an upsert sends them: null where the environment's applies."""
    return {
        **dict.fromkeys(SCHEDULE_OVERRIDES),
        "min_replica": minimum,
        "max_replica": maximum,
        **others,
    }


def schedule(name: str, cadence: str, settings: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "enabled": True,
        "cadence": cadence,
        "autoscaling_settings": settings,
        **fields,
    }


def daily(name: str, weekdays: list[str], start: str, end: str, **extra: Any) -> dict[str, Any]:
    """A DAILY schedule from `start` to `end` ("HH:MM"), 3 to 5 replicas."""
    start_hour, start_minute = (int(part) for part in start.split(":"))
    end_hour, end_minute = (int(part) for part in end.split(":"))
    window = {
        "start_hour": start_hour,
        "start_minute": start_minute,
        "end_hour": end_hour,
        "end_minute": end_minute,
    }
    return schedule(name, "DAILY", overrides(3, 5), **{"weekdays": weekdays, **window, **extra})


def hourly(name: str, start_minute: int, end_minute: int, **extra: Any) -> dict[str, Any]:
    """An HOURLY schedule on weekdays, 2 to 4 replicas."""
    weekdays = ["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY"]
    window = {"start_minute": start_minute, "end_minute": end_minute}
    return schedule(name, "HOURLY", overrides(2, 4), **{"weekdays": weekdays, **window, **extra})


def one_time(name: str, start_at: str, end_at: str, **extra: Any) -> dict[str, Any]:
    """A ONE_TIME schedule, 8 to 10 replicas."""
    window = {"start_at": start_at, "end_at": end_at}
    return schedule(name, "ONE_TIME", overrides(8, 10), **{**window, **extra})


@pytest.fixture
def sim(clock: FakeClock) -> BasetenSimulator:
    """In process, never started: the REST routes and control methods are called directly."""
    return BasetenSimulator("key", clock=clock)


@pytest.fixture
def model_id(sim: BasetenSimulator) -> str:
    """A model whose production environment serves an ACTIVE deployment (min 1, max 2)."""
    model = sim.seed_model("llama")["id"]
    dep = sim.seed_deployment(
        model, "v1", autoscaling_settings={"min_replica": 1, "max_replica": 2}
    )
    sim.seed_environment(model, "production", current_deployment_id=dep["id"])
    return str(model)


def patch(sim: BasetenSimulator, model_id: str, body: dict[str, Any]) -> dict:
    """PATCH /v1/models/{id}/environments/production, as the REST API routes it."""
    path = f"/v1/models/{model_id}/environments/production"
    return dict(rest.call(sim.engine, rest.match_route("PATCH", path), "", body))


def schedules_of(sim: BasetenSimulator, model_id: str) -> dict:
    return dict(sim.engine.get_environment(model_id, "production")["autoscaling_schedules"])


def edit_ui(sim: BasetenSimulator, model_id: str, **settings: Any) -> dict:
    env = sim.ui_update_environment(model_id, "production", autoscaling_schedule_settings=settings)
    return dict(env["autoscaling_schedules"])


# ---- editing the collection ----------------------------------------------------------


def test_an_environment_without_schedules_reports_none(
    sim: BasetenSimulator, model_id: str
) -> None:
    assert sim.engine.get_environment(model_id, "production")["autoscaling_schedules"] is None


def test_a_patch_creates_schedules_asynchronously_in_order_with_ids(
    sim: BasetenSimulator, clock: FakeClock, model_id: str
) -> None:
    answer = patch(
        sim,
        model_id,
        {
            "autoscaling_schedule_settings": {
                "timezone": LA,
                "schedules": [
                    daily("business", ["MONDAY"], "09:00", "17:00"),
                    hourly("peaks", 0, 15),
                ],
            }
        },
    )
    assert answer["status"] == "ACCEPTED"
    assert answer["environment"]["autoscaling_schedules"] is None  # not applied yet
    clock.advance(D.environment_update)
    collection = schedules_of(sim, model_id)
    assert collection["timezone"] == LA
    assert [s["name"] for s in collection["schedules"]] == ["business", "peaks"]
    ids = [s["id"] for s in collection["schedules"]]
    assert all(ids) and len(set(ids)) == 2
    business, peaks = collection["schedules"]
    assert business == {
        "id": ids[0],
        "name": "business",
        "enabled": True,
        "cadence": "DAILY",
        "weekdays": ["MONDAY"],
        "start_hour": 9,
        "start_minute": 0,
        "end_hour": 17,
        "end_minute": 0,
        "autoscaling_settings": overrides(3, 5),
    }
    assert "start_hour" not in peaks and "end_hour" not in peaks  # every hour


def test_upserts_replace_by_id_in_place_create_without_and_deletes_remove(
    sim: BasetenSimulator, model_id: str
) -> None:
    first = edit_ui(
        sim,
        model_id,
        timezone=LA,
        schedules=[
            daily("a", ["MONDAY"], "09:00", "10:00"),
            daily("b", ["TUESDAY"], "09:00", "10:00"),
            daily("c", ["FRIDAY"], "09:00", "10:00"),
        ],
    )
    a, b, c = (s["id"] for s in first["schedules"])
    second = edit_ui(
        sim,
        model_id,
        schedules=[
            daily("a-later", ["MONDAY"], "11:00", "12:00", id=a),
            daily("d", ["SUNDAY"], "01:00", "02:00"),
        ],
        delete_schedules=[b],
    )
    assert second["timezone"] == LA  # left out: kept
    assert [(s["id"], s["name"]) for s in second["schedules"][:2]] == [(a, "a-later"), (c, "c")]
    assert second["schedules"][0]["start_hour"] == 11
    assert second["schedules"][2]["name"] == "d" and second["schedules"][2]["id"] not in (a, b, c)


def test_the_first_schedules_without_a_timezone_get_utc(
    sim: BasetenSimulator, model_id: str
) -> None:
    collection = edit_ui(sim, model_id, schedules=[hourly("h", 0, 30)])
    assert collection["timezone"] == "UTC"


def test_a_null_timezone_goes_only_with_the_last_schedule(
    sim: BasetenSimulator, model_id: str
) -> None:
    (only,) = edit_ui(sim, model_id, timezone=LA, schedules=[hourly("h", 0, 30)])["schedules"]
    with pytest.raises(SimError) as refused:
        edit_ui(sim, model_id, timezone=None)
    assert (refused.value.status, refused.value.message) == (
        400,
        "timezone may be null only when every autoscaling schedule is deleted",
    )
    emptied = sim.ui_update_environment(
        model_id,
        "production",
        autoscaling_schedule_settings={"timezone": None, "delete_schedules": [only["id"]]},
    )
    assert emptied["autoscaling_schedules"] is None  # as if it never had any


def test_resending_what_is_stored_is_unchanged(
    sim: BasetenSimulator, clock: FakeClock, model_id: str
) -> None:
    (stored,) = edit_ui(sim, model_id, timezone=LA, schedules=[hourly("h", 0, 30)])["schedules"]
    same = {"timezone": LA, "schedules": [hourly("h", 0, 30, id=stored["id"])]}
    assert patch(sim, model_id, {"autoscaling_schedule_settings": same})["status"] == "UNCHANGED"
    changed = {"schedules": [hourly("h", 0, 45, id=stored["id"])]}
    assert patch(sim, model_id, {"autoscaling_schedule_settings": changed})["status"] == "ACCEPTED"


def test_one_patch_applies_every_settings_group_together(
    sim: BasetenSimulator, clock: FakeClock, model_id: str
) -> None:
    patch(
        sim,
        model_id,
        {
            "autoscaling_settings": {"max_replica": 3},
            "promotion_settings": {"ramp_up_while_promoting": True},
            "autoscaling_schedule_settings": {"schedules": [hourly("h", 0, 30)]},
        },
    )
    before = sim.engine.get_environment(model_id, "production")
    assert before["autoscaling_settings"]["max_replica"] == 2
    assert before["autoscaling_schedules"] is None
    clock.advance(D.environment_update)
    after = sim.engine.get_environment(model_id, "production")
    assert after["autoscaling_settings"]["max_replica"] == 3
    assert after["promotion_settings"]["ramp_up_while_promoting"] is True
    assert [s["name"] for s in after["autoscaling_schedules"]["schedules"]] == ["h"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"schedules": [hourly("x", 0, 30, id="nope")]},
            "has no autoscaling schedule with id 'nope'",
        ),
        ({"delete_schedules": ["nope"]}, "has no autoscaling schedule with id 'nope'"),
        (
            {"schedules": [hourly("x", 0, 30, id="ID"), hourly("y", 0, 30, id="ID")]},
            "'ID' is sent twice",
        ),
        (
            {"schedules": [hourly("x", 0, 30, id="ID")], "delete_schedules": ["ID"]},
            "both replaced and deleted",
        ),
    ],
)
def test_edits_naming_schedules_wrongly_are_refused(
    sim: BasetenSimulator, model_id: str, settings: dict, message: str
) -> None:
    (stored,) = edit_ui(sim, model_id, schedules=[hourly("h", 0, 30)])["schedules"]
    body = _replace_marker(settings, "ID", stored["id"])
    with pytest.raises(SimError) as refused:
        patch(sim, model_id, {"autoscaling_schedule_settings": body})
    assert refused.value.status == 400
    assert message.replace("ID", stored["id"]) in refused.value.message


def _replace_marker(value: Any, marker: str, replacement: str) -> Any:
    if isinstance(value, dict):
        return {k: _replace_marker(v, marker, replacement) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_marker(v, marker, replacement) for v in value]
    return replacement if value == marker else value


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        (daily("d", [], "09:00", "10:00"), "weekdays are required for DAILY and HOURLY schedules"),
        (daily("d", ["MONDAY", "MONDAY"], "09:00", "10:00"), "weekdays must not repeat"),
        (
            daily("d", ["MONDAY"], "09:00", "10:00", start_hour=None),
            "start_hour and end_hour are required for DAILY schedules",
        ),
        (daily("d", ["MONDAY"], "09:30", "09:30"), "the window is empty: it ends when it starts"),
        (
            daily("d", ["MONDAY"], "09:00", "10:00", end_minute=None),
            "start_minute and end_minute are required",
        ),
        (
            daily("d", ["MONDAY"], "09:00", "10:00", start_at="2026-01-02T00:00:00Z"),
            "start_at and end_at are only valid for ONE_TIME",
        ),
        (hourly("h", 0, 30, start_hour=9), "takes both start_hour and end_hour, or neither"),
        (hourly("h", 0, 30, start_hour=9, end_hour=9), "start_hour and end_hour must differ"),
        (hourly("h", 15, 15), "the window is empty"),
        (
            one_time("o", "2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z"),
            "start_at must be before end_at",
        ),
        (
            one_time("o", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", weekdays=["MONDAY"]),
            "not weekdays, hours or minutes",
        ),
        (
            {**one_time("o", "2026-01-02T00:00:00Z", "x"), "end_at": None},
            "start_at and end_at are required for ONE_TIME",
        ),
        (one_time("o", "2026-01-02T00:00:00", "2026-01-03T00:00:00Z"), "timezone info"),
        (daily("d", ["FUNDAY"], "09:00", "10:00"), "weekdays.0"),
        (daily("d", ["MONDAY"], "24:00", "10:00"), "start_hour"),
        ({**hourly("h", 0, 30), "cadence": "WEEKLY"}, "cadence"),
        (
            {**hourly("h", 0, 30), "autoscaling_settings": overrides(5, 3)},
            "min_replica must be less than or equal to max_replica",
        ),
        (
            {**hourly("h", 0, 30), "autoscaling_settings": overrides(1, 3, max_scale_down_rate=51)},
            "max_scale_down_rate",
        ),
        (
            {**hourly("h", 0, 30), "autoscaling_settings": {"min_replica": 1, "max_replica": 2}},
            "autoscaling_window: Field required",
        ),
        ({**hourly("h", 0, 30), "priority": 1}, "priority: Extra inputs are not permitted"),
    ],
)
def test_schedules_of_the_wrong_shape_are_refused_with_the_reason(
    sim: BasetenSimulator, model_id: str, schedule: dict, problem: str
) -> None:
    with pytest.raises(SimError) as refused:
        patch(sim, model_id, {"autoscaling_schedule_settings": {"schedules": [schedule]}})
    assert refused.value.status == 400
    assert refused.value.message.startswith(
        "Invalid request body: autoscaling_schedule_settings.schedules.0"
    )
    assert problem in refused.value.message
    assert sim.engine.get_environment(model_id, "production")["autoscaling_schedules"] is None


def test_the_token_target_takes_any_integer_as_baseten_s_spec_says(
    sim: BasetenSimulator, clock: FakeClock, model_id: str
) -> None:
    """The official spec bounds max_scale_down_rate (1..50) and not target_in_flight_tokens:
    the simulator must not refuse what Baseten takes (the CRD's minimum of 1 is the
    operator's own, docs/contract.md section 1)."""
    settings = overrides(1, 2, target_in_flight_tokens=0)
    patch(
        sim,
        model_id,
        {
            "autoscaling_settings": {"target_in_flight_tokens": 0},
            "autoscaling_schedule_settings": {
                "schedules": [
                    schedule(
                        "s",
                        "ONE_TIME",
                        settings,
                        start_at="2030-01-01T00:00:00Z",
                        end_at="2030-01-02T00:00:00Z",
                    )
                ]
            },
        },
    )
    clock.advance(D.environment_update)
    environment = sim.engine.get_environment(model_id, "production")
    assert environment["autoscaling_settings"]["target_in_flight_tokens"] == 0
    [stored] = environment["autoscaling_schedules"]["schedules"]
    assert stored["autoscaling_settings"]["target_in_flight_tokens"] == 0


def test_an_unknown_timezone_is_refused(sim: BasetenSimulator, model_id: str) -> None:
    with pytest.raises(SimError) as refused:
        patch(sim, model_id, {"autoscaling_schedule_settings": {"timezone": "Mars/Olympus"}})
    assert refused.value.status == 400
    assert "unknown timezone 'Mars/Olympus'" in refused.value.message


# ---- the window in force ---------------------------------------------------------------


def at(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def applied_at(sim: BasetenSimulator, clock: FakeClock, model_id: str, iso: str) -> str | None:
    """The name of the schedule in force at `iso` (None: the baseline)."""
    clock.advance(at(iso) - clock.now())
    collection = schedules_of(sim, model_id)
    schedule_id = collection["applied_state"]["schedule_id"]
    names = {s["id"]: s["name"] for s in collection["schedules"]}
    return names[schedule_id] if schedule_id is not None else None


def test_a_daily_window_in_the_schedules_timezone(
    sim: BasetenSimulator, clock: FakeClock, model_id: str
) -> None:
    # 2026-01-05 is a Monday; Los Angeles is UTC-8 in January.
    edit_ui(sim, model_id, timezone=LA, schedules=[daily("business", ["MONDAY"], "09:00", "17:00")])
    assert applied_at(sim, clock, model_id, "2026-01-05T16:59:59+00:00") is None
    assert applied_at(sim, clock, model_id, "2026-01-05T17:00:00+00:00") == "business"
    assert applied_at(sim, clock, model_id, "2026-01-06T00:59:59+00:00") == "business"
    assert applied_at(sim, clock, model_id, "2026-01-06T01:00:00+00:00") is None  # end excluded
    assert applied_at(sim, clock, model_id, "2026-01-06T17:30:00+00:00") is None  # a Tuesday


def test_a_daily_window_follows_daylight_saving_time(
    sim: BasetenSimulator, clock: FakeClock, model_id: str
) -> None:
    # New York moves to UTC-4 on 2026-03-08: 09:00 local is 14:00Z before, 13:00Z after.
    edit_ui(
        sim,
        model_id,
        timezone="America/New_York",
        schedules=[daily("morning", ["FRIDAY", "MONDAY"], "09:00", "10:00")],
    )
    assert applied_at(sim, clock, model_id, "2026-03-06T13:30:00+00:00") is None
    assert applied_at(sim, clock, model_id, "2026-03-06T14:30:00+00:00") == "morning"
    assert applied_at(sim, clock, model_id, "2026-03-09T13:30:00+00:00") == "morning"
    assert applied_at(sim, clock, model_id, "2026-03-09T14:30:00+00:00") is None


def test_a_window_past_midnight_belongs_to_the_day_it_starts(
    sim: BasetenSimulator, clock: FakeClock, model_id: str
) -> None:
    edit_ui(sim, model_id, timezone="UTC", schedules=[daily("night", ["FRIDAY"], "22:00", "06:00")])
    assert applied_at(sim, clock, model_id, "2026-01-09T23:00:00+00:00") == "night"  # Friday
    assert applied_at(sim, clock, model_id, "2026-01-10T05:59:00+00:00") == "night"  # Saturday
    assert applied_at(sim, clock, model_id, "2026-01-10T22:30:00+00:00") is None


def test_hourly_windows_every_hour_or_within_the_hours_given(
    sim: BasetenSimulator, clock: FakeClock, model_id: str
) -> None:
    edit_ui(
        sim,
        model_id,
        timezone="UTC",
        schedules=[
            hourly("office", 0, 20, start_hour=9, end_hour=17),
            hourly("turn", 50, 10),
        ],
    )
    # 2026-01-05 is a Monday.
    assert applied_at(sim, clock, model_id, "2026-01-05T09:10:00+00:00") == "office"
    assert applied_at(sim, clock, model_id, "2026-01-05T16:19:00+00:00") == "office"
    assert applied_at(sim, clock, model_id, "2026-01-05T17:05:00+00:00") == "turn"  # past 17
    assert applied_at(sim, clock, model_id, "2026-01-05T17:30:00+00:00") is None
    assert applied_at(sim, clock, model_id, "2026-01-05T17:55:00+00:00") == "turn"
    assert applied_at(sim, clock, model_id, "2026-01-05T18:05:00+00:00") == "turn"  # wraps
    assert applied_at(sim, clock, model_id, "2026-01-10T18:05:00+00:00") is None  # Saturday


def test_a_one_time_window_from_start_to_end_excluded(
    sim: BasetenSimulator, clock: FakeClock, model_id: str
) -> None:
    edit_ui(
        sim,
        model_id,
        timezone=LA,
        schedules=[one_time("launch", "2026-01-02T10:00:00-08:00", "2026-01-02T12:00:00-08:00")],
    )
    (launch,) = schedules_of(sim, model_id)["schedules"]
    assert (launch["start_at"], launch["end_at"]) == (
        "2026-01-02T18:00:00.000000Z",
        "2026-01-02T20:00:00.000000Z",
    )
    assert "weekdays" not in launch
    assert applied_at(sim, clock, model_id, "2026-01-02T17:59:59+00:00") is None
    assert applied_at(sim, clock, model_id, "2026-01-02T18:00:00+00:00") == "launch"
    assert applied_at(sim, clock, model_id, "2026-01-02T20:00:00+00:00") is None


def test_disabled_schedules_never_apply_and_the_first_created_wins(
    sim: BasetenSimulator, clock: FakeClock, model_id: str
) -> None:
    edit_ui(
        sim,
        model_id,
        timezone="UTC",
        schedules=[
            hourly("off", 0, 59, enabled=False),
            hourly("first", 0, 30),
            hourly("second", 0, 45),
        ],
    )
    assert applied_at(sim, clock, model_id, "2026-01-05T10:10:00+00:00") == "first"
    assert applied_at(sim, clock, model_id, "2026-01-05T10:40:00+00:00") == "second"


def test_applied_state_is_the_deployments_settings_with_the_schedules_overrides(
    sim: BasetenSimulator, clock: FakeClock, model_id: str
) -> None:
    edit_ui(
        sim,
        model_id,
        timezone="UTC",
        schedules=[
            {
                **hourly("h", 0, 30),
                "autoscaling_settings": overrides(4, 6, scale_down_delay=120),
            }
        ],
    )
    clock.advance(at("2026-01-05T10:00:00+00:00") - clock.now())
    state = schedules_of(sim, model_id)["applied_state"]
    settings = state["autoscaling_settings"]
    assert (settings["min_replica"], settings["max_replica"], settings["scale_down_delay"]) == (
        4,
        6,
        120,
    )
    assert settings["concurrency_target"] == 1  # not overridden: the deployment's own
    clock.advance(30 * 60)
    baseline = schedules_of(sim, model_id)["applied_state"]
    assert baseline["schedule_id"] is None
    assert (
        baseline["autoscaling_settings"]["min_replica"],
        baseline["autoscaling_settings"]["max_replica"],
    ) == (1, 2)


def test_no_applied_state_without_a_serving_deployment(sim: BasetenSimulator) -> None:
    model = sim.seed_model("empty")["id"]
    env = sim.seed_environment(
        model,
        "staging",
        autoscaling_schedule_settings={"timezone": LA, "schedules": [hourly("h", 0, 30)]},
    )
    assert env["autoscaling_schedules"]["applied_state"] is None
    assert [s["name"] for s in env["autoscaling_schedules"]["schedules"]] == ["h"]


def test_the_ui_edits_schedules_at_once_for_the_operator_to_find(
    sim: BasetenSimulator, model_id: str
) -> None:
    env = sim.ui_update_environment(
        model_id,
        "production",
        autoscaling_schedule_settings={"timezone": LA, "schedules": [hourly("h", 0, 30)]},
    )
    assert [s["name"] for s in env["autoscaling_schedules"]["schedules"]] == ["h"]
    assert schedules_of(sim, model_id) == env["autoscaling_schedules"]
