"""Autoscaling schedules owned by the spec, on a clock pinned to a known instant: which window
Baseten holds in force depends on the hour, the weekday and the schedule's time zone, never
on the machine's."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from baseten_operator.runtime.clock import format_rfc3339
from testsupport.clocks import PinnedClock
from testsupport.operator_harness import OperatorHarness, is_ready, reconcile_spec
from testsupport.polling import wait_for

pytestmark = pytest.mark.integration

# Sunday 03:00 in Europe/Berlin: the UI's HOURLY Sunday window below is open too, but the
# spec's ONE_TIME window was created first, so it is the one in force.
CLOCK = PinnedClock(datetime.fromisoformat("2026-12-06T02:00:00+00:00").timestamp())
HARNESS_OPTIONS = {"clock": CLOCK}


def message(cr: dict[str, Any]) -> str:
    return str((cr.get("status") or {}).get("message", ""))


def test_autoscaling_schedules_are_owned_and_their_window_holds_the_baseline(
    harness: OperatorHarness, namespace: str
) -> None:
    model = harness.sim.seed_model("sched-r")
    harness.sim.seed_deployment(model["id"], "s1")
    launch = {
        "name": "launch",
        "cadence": "ONE_TIME",
        "startAt": format_rfc3339(CLOCK.now() - 3600),
        "endAt": format_rfc3339(CLOCK.now() + 3 * 3600),
        "autoscaling": {"minReplicas": 2, "maxReplicas": 6},
    }
    environment = {
        "name": "production",
        "autoscaling": {"minReplicas": 1, "maxReplicas": 3},
        "autoscalingSchedule": {"timezone": "Europe/Berlin", "schedules": [launch]},
    }
    harness.create_model_cr(
        namespace, "sched-r", reconcile_spec("sched-r", "s1", environment=environment)
    )
    # The environment is created without schedules (its create request takes none); the
    # next pass creates them, and the window, open now, is what the steady message shows.
    harness.wait_event(
        namespace, "sched-r", "AutoscalingScheduleUpdated", contains="2 changes", timeout=20.0
    )
    ready = harness.wait_status(
        namespace,
        "sched-r",
        lambda cr: is_ready(cr) and "min:2 max:6, schedule: launch)" in message(cr),
    )
    assert message(ready).endswith(" in production environment")
    baseten = harness.environment(model["id"], "production")["autoscaling_schedules"]
    assert baseten["timezone"] == "Europe/Berlin"
    assert [s["name"] for s in baseten["schedules"]] == ["launch"]
    created_at = CLOCK.now()  # the simulator's audit log is on this clock

    # In the UI: the baseline's max and a schedule of its own. The window holds the
    # baseline, so the one PATCH that follows deletes the UI's schedule and nothing else.
    extra = {
        "name": "from-the-ui",
        "enabled": True,
        "cadence": "HOURLY",
        "weekdays": ["SUNDAY"],
        "start_minute": 0,
        "end_minute": 30,
        "autoscaling_settings": {
            "min_replica": 1,
            "max_replica": 1,
            "autoscaling_window": None,
            "scale_down_delay": None,
            "concurrency_target": None,
            "target_utilization_percentage": None,
            "target_in_flight_tokens": None,
            "max_scale_down_rate": None,
        },
    }
    harness.sim.ui_update_environment(
        model["id"],
        "production",
        {"max_replica": 9},
        autoscaling_schedule_settings={"schedules": [extra]},
    )
    harness.wait_event(
        namespace,
        "sched-r",
        "AutoscalingScheduleUpdated",
        contains="schedule from-the-ui removed",
        timeout=20.0,
    )
    wait_for(
        lambda: len(
            harness.environment(model["id"], "production")["autoscaling_schedules"]["schedules"]
        )
        == 1,
        timeout=10.0,
    )
    patches = [
        e["body"]
        for e in harness.writes_for_model(model["id"], since=created_at)
        if e["method"] == "PATCH"
    ]
    assert len(patches) == 1
    assert list(patches[0]) == ["autoscaling_schedule_settings"]
    assert patches[0]["autoscaling_schedule_settings"]["timezone"] == "Europe/Berlin"
    assert len(patches[0]["autoscaling_schedule_settings"]["delete_schedules"]) == 1
    assert harness.event_count(namespace, "sched-r", "AutoscalingUpdated") == 0
    assert (
        harness.environment(model["id"], "production")["autoscaling_settings"]["max_replica"] == 9
    )
