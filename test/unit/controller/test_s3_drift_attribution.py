"""Section 3.8: who made a drift, from the model's audit log (Reconcile and Observe)."""

from __future__ import annotations

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.controller.basetenmodel import telemetry

from .conftest import START

STEADY = "active: src (3 replicas, min:1 max:5) in production environment"
ALICE_AT = START - 120  # two minutes before the pass
ALICE = "changed by alice@example.com via UI at 2025-12-31T23:58:00Z"


def spec(mode: str = "Reconcile", **environment) -> dict:
    return {
        "modelName": "my-llm",
        "mode": mode,
        "sourceDeploymentName": "src",
        "environment": {"name": "production", **environment},
    }


def drifted(h, mode: str = "Reconcile") -> None:
    """Baseten's minimum is 3 where the spec says 1."""
    h.steady_world(autoscaling={"min_replica": 3, "max_replica": 5})
    h.create(spec(mode, autoscaling={"minReplicas": 1, "maxReplicas": 5}))


def environment_updated(h, at: float, min_replica: int, before: int | None, **actor) -> None:
    previous = {"min_replica": before} if before is not None else None
    h.baseten.add_audit(
        "ENVIRONMENT_UPDATED",
        at,
        environment_name="production",
        min_replica=min_replica,
        max_replica=5,
        previous_settings=previous,
        **actor,
    )


def corrections(group: str, source: str) -> float:
    return telemetry.DRIFT_CORRECTIONS.labels(group=group, source=source)._value.get()


def test_a_ui_change_is_named_in_the_event_and_the_status(h) -> None:
    drifted(h)
    environment_updated(h, ALICE_AT, 3, 1, email="alice@example.com")
    before = corrections("autoscaling", "UI")
    h.run()
    assert h.baseten.called("update_environment")  # corrected, and then named
    calls = [name for name, _ in h.baseten.calls]
    assert calls.index("update_environment") < calls.index("list_audit_logs")
    assert h.baseten.called("list_audit_logs") == [
        ("m1", ("ENVIRONMENT_SETTINGS", "AUTOSCALING_SETTINGS"), 20)
    ]
    assert h.event("DriftCorrected") == (
        "Normal",
        f"Put production's settings back to the spec: minReplicas 3→1; {ALICE}",
    )
    assert h.message() == f"{STEADY.replace('min:1', 'min:3')} | updating settings: " + (
        f"minReplicas 3→1; {ALICE}"
    )
    assert corrections("autoscaling", "UI") == before + 1


def test_the_newest_change_to_the_drifted_value_is_named(h) -> None:
    drifted(h)
    environment_updated(h, ALICE_AT - 600, 3, 1, email="alice@example.com")
    # bob's change later set the minimum to 3 again, then carol's touched another field.
    environment_updated(h, ALICE_AT - 300, 3, 2, key_prefix="bobkey", source="API")
    h.baseten.add_audit(
        "ENVIRONMENT_UPDATED",
        ALICE_AT,
        email="carol@example.com",
        environment_name="production",
        min_replica=3,
        max_replica=5,
        previous_settings={"min_replica": 3, "max_replica": 4},
    )
    h.run()
    assert h.event("DriftCorrected")[1].endswith(
        "changed by bobkey via API at 2025-12-31T23:53:00Z"
    )


def test_another_environment_or_a_change_to_another_value_is_not_the_maker(h) -> None:
    drifted(h)
    h.baseten.add_audit(
        "ENVIRONMENT_UPDATED",
        ALICE_AT,
        email="dave@example.com",
        environment_name="staging",
        min_replica=3,
        previous_settings={"min_replica": 1},
    )
    environment_updated(h, ALICE_AT, 2, 1, email="erin@example.com")
    before = corrections("autoscaling", "unknown")
    h.run()
    assert h.event("DriftCorrected")[1].endswith("; changed by an unknown actor")
    assert corrections("autoscaling", "unknown") == before + 1


def test_a_change_made_with_this_operators_key_was_a_previous_spec(h) -> None:
    drifted(h)
    # The environment was created by this operator with a spec that asked for 3.
    h.baseten.add_audit(
        "ENVIRONMENT_CREATED",
        ALICE_AT,
        source="API",
        key_prefix=h.baseten.OWN_KEY_PREFIX,
        environment_name="production",
        min_replica=3,
    )
    before = corrections("autoscaling", "operator")
    h.run()
    assert h.event("DriftCorrected")[1].endswith(
        "changed by this operator's key (a previous spec) via API at 2025-12-31T23:58:00Z"
    )
    assert corrections("autoscaling", "operator") == before + 1


def test_a_deployment_level_change_of_the_current_deployment_is_a_maker(h) -> None:
    current = h.steady_world(autoscaling={"min_replica": 3, "max_replica": 5})
    h.create(spec(autoscaling={"minReplicas": 1}))
    h.baseten.add_audit(
        "MODEL_DEPLOYMENT_AUTOSCALING_SETTINGS_CHANGED",
        ALICE_AT,
        email="alice@example.com",
        deployment_id=current.id,
        min_replica=3,
        previous_settings={"min_replica": 1},
    )
    h.run()
    assert h.event("DriftCorrected")[1].endswith(ALICE)


def test_a_schedule_drift_is_named_by_the_newest_schedule_edit(h) -> None:
    h.steady_world()
    h.create(spec(autoscalingSchedule={"timezone": "Europe/Berlin"}))
    h.baseten.add_audit(
        "ENVIRONMENT_UPDATED",
        ALICE_AT,
        email="alice@example.com",
        environment_name="production",
        min_replica=1,
        previous_settings={"min_replica": 1},
        schedules=[{"action": "UPDATED", "schedule_id": "s1", "previous": {}, "current": {}}],
    )
    h.run()
    assert h.baseten.called("list_audit_logs")[0][1] == ("ENVIRONMENT_SETTINGS",)
    assert h.event("DriftCorrected")[1] == (
        f"Put production's settings back to the spec: scheduleTimezone →Europe/Berlin; {ALICE}"
    )


@pytest.mark.parametrize(
    "error", [BasetenAPIError(500, "audit down"), BasetenAPIError(None, "malformed answer")]
)
def test_an_unreadable_audit_log_never_stops_the_correction(h, error) -> None:
    drifted(h)
    h.baseten.fail("list_audit_logs", error)
    assert h.run().requeue_after == 10
    assert h.baseten.called("update_environment") == [
        ("m1", "production", {"min_replica": 1, "max_replica": 5}, None, None)
    ]
    assert h.word() == "PENDING"
    assert h.message().endswith("minReplicas 3→1; changed by an unknown actor")
    assert h.event("AutoscalingUpdated") == ("Normal", "updating autoscaling: minReplicas 3→1")


def test_a_failed_correction_reads_no_audit_log(h) -> None:
    drifted(h)
    h.baseten.fail("update_environment", BasetenAPIError(500, "boom"))
    with pytest.raises(Exception, match="failed to update settings"):
        h.run()
    assert h.baseten.called("list_audit_logs") == []
    assert "DriftCorrected" not in h.reasons()


def test_no_drift_reads_no_audit_log(h) -> None:
    h.steady_world()
    h.create(spec(autoscaling={"minReplicas": 1}))
    h.run()
    assert h.baseten.called("list_audit_logs") == []


# --- Observe --------------------------------------------------------------------------------

OBSERVED = (
    "active: src (3 replicas, min:3 max:5) in production environment | drift: minReplicas 1→3"
)


def test_observe_names_the_maker_once_per_drift(h) -> None:
    drifted(h, "Observe")
    environment_updated(h, ALICE_AT, 3, 1, email="alice@example.com")
    h.run()
    assert h.message() == f"{OBSERVED}; {ALICE}; awaiting reconciliation"
    h.clock.advance(30)
    h.run()
    h.clock.advance(30)
    h.run()
    assert h.message() == f"{OBSERVED}; {ALICE}; awaiting reconciliation"
    assert len(h.baseten.called("list_audit_logs")) == 1
    assert h.baseten.writes == []
    assert "DriftCorrected" not in h.reasons()


def test_observe_asks_again_while_the_maker_is_unknown_and_for_a_new_drift(h) -> None:
    drifted(h, "Observe")
    h.baseten.fail("list_audit_logs", BasetenAPIError(503, "later"))
    h.run()
    assert h.message() == f"{OBSERVED}; changed by an unknown actor; awaiting reconciliation"
    environment_updated(h, ALICE_AT, 3, 1, email="alice@example.com")
    h.clock.advance(30)
    h.run()
    assert h.message() == f"{OBSERVED}; {ALICE}; awaiting reconciliation"
    # Another field drifts: the drift is new, and read again.
    h.edit(lambda o: o["spec"]["environment"]["autoscaling"].__setitem__("maxReplicas", 6))
    h.clock.advance(30)
    h.run()
    assert len(h.baseten.called("list_audit_logs")) == 3
    assert h.baseten.writes == []
