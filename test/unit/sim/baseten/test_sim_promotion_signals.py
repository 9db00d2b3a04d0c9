"""The simulator's promotion signals on a fake clock: cancel (at once, or ramping the
candidate's traffic back down), and pause, resume, force-cancel, force-roll-forward."""

from __future__ import annotations

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten.engine import LifecycleDurations, SimEngine
from baseten_operator.sim.baseten.errors import SimError

D = LifecycleDurations()
RAMP = 100.0  # ten stages of 10 s
ENV = "production"


def serving_and_promoting(engine: SimEngine, model_id: str, **settings: object) -> tuple[str, str]:
    """Production serves `good` and promotes `bad` (already ACTIVE); returns their ids."""
    good = engine.controls.seed_deployment(
        model_id, "good", autoscaling_settings={"min_replica": 1}
    )
    bad = engine.controls.seed_deployment(model_id, "bad", autoscaling_settings={"min_replica": 1})
    engine.controls.seed_environment(
        model_id, ENV, current_deployment_id=good["id"], promotion_settings=dict(settings)
    )
    engine.promote(model_id, ENV, bad["id"])
    return good["id"], bad["id"]


def ramping(engine: SimEngine, model_id: str) -> tuple[str, str]:
    return serving_and_promoting(
        engine,
        model_id,
        rolling_deploy=True,
        ramp_up_while_promoting=True,
        ramp_up_duration_seconds=int(RAMP),
    )


def progress(engine: SimEngine, model_id: str) -> tuple[str, int] | None:
    env = engine.get_environment(model_id, ENV)
    promotion = env["in_progress_promotion"]
    if promotion is None:
        return None
    return promotion["status"], promotion["percent_traffic_to_new_version"]


def current(engine: SimEngine, model_id: str) -> str:
    return str(engine.get_environment(model_id, ENV)["current_deployment"]["name"])


def test_a_promotion_without_traffic_yet_is_canceled_at_once(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    # Not rolling: the candidate gets no traffic until the promotion completes.
    serving_and_promoting(engine, model_id)
    answer = engine.promotion_signals.cancel(model_id, ENV)
    assert answer["status"] == "CANCELED"
    env = engine.get_environment(model_id, ENV)
    assert (env["candidate_deployment"], env["in_progress_promotion"]) == (None, None)
    clock.advance(D.promotion_settle * 10)
    assert current(engine, model_id) == "good"


def test_a_ramping_promotion_steps_its_traffic_back_down_then_releases_the_candidate(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    ramping(engine, model_id)
    clock.advance(35)
    assert progress(engine, model_id) == ("RAMPING_UP", 40)
    answer = engine.promotion_signals.cancel(model_id, ENV)
    assert answer["status"] == "RAMPING_DOWN"
    seen = []
    for _ in range(4):
        seen.append(progress(engine, model_id))
        assert current(engine, model_id) == "good"
        clock.advance(RAMP / 10)
    assert seen == [("RAMPING_DOWN", 40), ("RAMPING_DOWN", 30), ("RAMPING_DOWN", 20),
                    ("RAMPING_DOWN", 10)]  # fmt: skip
    assert progress(engine, model_id) is None
    assert engine.get_environment(model_id, ENV)["candidate_deployment"] is None
    # The completion the promotion had planned never happens.
    clock.advance(RAMP * 2)
    assert current(engine, model_id) == "good"


def test_cancelling_again_while_ramping_down_changes_nothing(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    ramping(engine, model_id)
    clock.advance(15)
    engine.promotion_signals.cancel(model_id, ENV)
    clock.advance(RAMP / 10)
    assert engine.promotion_signals.cancel(model_id, ENV)["status"] == "RAMPING_DOWN"
    assert progress(engine, model_id) == ("RAMPING_DOWN", 10)


def test_nothing_to_cancel_is_a_bad_request(engine: SimEngine, model_id: str) -> None:
    engine.controls.seed_environment(model_id, ENV)
    with pytest.raises(SimError) as refused:
        engine.promotion_signals.cancel(model_id, ENV)
    assert refused.value.status == 400


def test_pause_freezes_the_ramp_and_resume_carries_on(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    _, bad = ramping(engine, model_id)
    clock.advance(25)
    assert engine.promotion_signals.pause(model_id, ENV) == {"success": True}
    clock.advance(RAMP * 3)
    assert progress(engine, model_id) == ("PAUSED", 30)
    assert current(engine, model_id) == "good"
    engine.promotion_signals.resume(model_id, ENV)
    assert progress(engine, model_id) == ("RAMPING_UP", 30)
    clock.advance(RAMP - 25 + D.promotion_settle)
    assert engine.get_environment(model_id, ENV)["current_deployment"]["id"] == bad


@pytest.mark.parametrize(
    ("signal", "serving"),
    [
        ("force_cancel", "good"),  # all traffic back at once
        ("force_roll_forward", "bad"),  # all traffic to the candidate, even mid-ramp-down
    ],
)
def test_the_forced_signals_end_a_ramp_down_at_once(
    engine: SimEngine, clock: FakeClock, model_id: str, signal: str, serving: str
) -> None:
    ramping(engine, model_id)
    clock.advance(55)
    engine.promotion_signals.cancel(model_id, ENV)
    assert getattr(engine.promotion_signals, signal)(model_id, ENV) == {"success": True}
    assert progress(engine, model_id) is None
    assert current(engine, model_id) == serving


@pytest.mark.parametrize("signal", ["pause", "resume", "force_cancel", "force_roll_forward"])
def test_the_rolling_signals_refuse_a_promotion_that_is_not_rolling(
    engine: SimEngine, model_id: str, signal: str
) -> None:
    serving_and_promoting(engine, model_id)
    with pytest.raises(SimError, match="not a rolling promotion"):
        getattr(engine.promotion_signals, signal)(model_id, ENV)
