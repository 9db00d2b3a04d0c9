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


def test_pause_freezes_the_ramp_at_the_end_of_its_step_and_resume_takes_the_next(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    _, bad = ramping(engine, model_id)
    clock.advance(25)
    assert engine.promotion_signals.pause(model_id, ENV) == {"success": True}
    # The pause takes effect when the step in progress (30%, from 20 s to 30 s) ends.
    assert progress(engine, model_id) == ("RAMPING_UP", 30)
    clock.advance(RAMP * 3)
    assert progress(engine, model_id) == ("PAUSED", 30)
    assert current(engine, model_id) == "good"
    engine.promotion_signals.resume(model_id, ENV)
    # Resuming starts the next step; seven more of 10 s, then the settle time.
    assert progress(engine, model_id) == ("RAMPING_UP", 40)
    clock.advance(7 * RAMP / 10 + D.promotion_settle)
    assert engine.get_environment(model_id, ENV)["current_deployment"]["id"] == bad


@pytest.mark.parametrize("signal", ["pause", "resume", "force_cancel", "force_roll_forward"])
def test_the_rolling_signals_refuse_a_promotion_that_is_not_rolling(
    engine: SimEngine, model_id: str, signal: str
) -> None:
    serving_and_promoting(engine, model_id)
    with pytest.raises(SimError, match="not a rolling promotion"):
        getattr(engine.promotion_signals, signal)(model_id, ENV)


# ----------------------------------------------------------------- rolling deploys in steps

STABILIZE = 60.0


def rolling(
    engine: SimEngine, model_id: str, surge: int = 25, stabilize: float = STABILIZE
) -> tuple[str, str]:
    config = {"max_surge_percent": surge, "stabilization_time_seconds": int(stabilize)}
    return serving_and_promoting(
        engine, model_id, rolling_deploy=True, rolling_deploy_config=config
    )


def shares_seen(engine: SimEngine, clock: FakeClock, model_id: str, every: float, n: int) -> list:
    """The promotion's (phase, percent) now and after each of `n` advances of `every` s."""
    seen = [progress(engine, model_id)]
    for _ in range(n):
        clock.advance(every)
        seen.append(progress(engine, model_id))
    return seen


def test_a_rolling_deploy_moves_traffic_in_surge_sized_steps_each_held_its_stabilization_time(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    _, bad = rolling(engine, model_id)
    env = engine.get_environment(model_id, ENV)
    assert env["in_progress_promotion"]["rolling_deploy"] is True
    clock.advance(STABILIZE - 1)
    assert progress(engine, model_id) == ("RAMPING_UP", 25)  # held until the step ends
    clock.advance(1)
    assert shares_seen(engine, clock, model_id, STABILIZE, 3) == [
        ("RAMPING_UP", 50),
        ("RAMPING_UP", 75),
        ("RAMPING_UP", 100),
        ("RAMPING_DOWN", 100),  # the previous deployment ramped down, then done
    ]
    assert current(engine, model_id) == "good"
    clock.advance(D.promotion_settle)
    assert progress(engine, model_id) is None
    assert engine.get_environment(model_id, ENV)["current_deployment"]["id"] == bad


def test_a_surge_that_does_not_divide_100_ends_with_a_smaller_last_step(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    rolling(engine, model_id, surge=30)
    assert [share for _, share in shares_seen(engine, clock, model_id, STABILIZE, 3)] == [
        30,
        60,
        90,
        100,
    ]


def test_a_step_lasts_at_least_the_shortest_rolling_step_without_a_stabilization_time(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    rolling(engine, model_id, surge=50, stabilize=0)
    assert shares_seen(engine, clock, model_id, D.rolling_step, 2) == [
        ("RAMPING_UP", 50),
        ("RAMPING_UP", 100),
        ("RAMPING_DOWN", 100),
    ]


def test_a_pause_waits_for_the_step_to_end_then_freezes_the_share_until_resumed(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    _, bad = rolling(engine, model_id)
    clock.advance(STABILIZE + 10)  # in the second step (50%)
    engine.promotion_signals.pause(model_id, ENV)
    clock.advance(STABILIZE - 11)
    assert progress(engine, model_id) == ("RAMPING_UP", 50)
    clock.advance(1)  # the step ends: paused there
    assert progress(engine, model_id) == ("PAUSED", 50)
    clock.advance(STABILIZE * 20)
    assert progress(engine, model_id) == ("PAUSED", 50)
    assert engine.promotion_signals.pause(model_id, ENV) == {"success": True}  # no change
    engine.promotion_signals.resume(model_id, ENV)
    assert shares_seen(engine, clock, model_id, STABILIZE, 2) == [
        ("RAMPING_UP", 75),
        ("RAMPING_UP", 100),
        ("RAMPING_DOWN", 100),
    ]
    clock.advance(D.promotion_settle)
    assert engine.get_environment(model_id, ENV)["current_deployment"]["id"] == bad


def test_a_resume_before_the_step_ends_withdraws_the_pause(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    rolling(engine, model_id)
    clock.advance(10)
    engine.promotion_signals.pause(model_id, ENV)
    engine.promotion_signals.resume(model_id, ENV)
    clock.advance(STABILIZE - 10)
    assert progress(engine, model_id) == ("RAMPING_UP", 50)


def test_a_pause_before_the_candidate_is_ready_holds_it_at_no_traffic(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    """The candidate is a copy still being built (redeploy on promotion)."""
    serving_and_promoting(engine, model_id, rolling_deploy=True, redeploy_on_promotion=True)
    assert progress(engine, model_id) == ("RELEASING", 0)
    engine.promotion_signals.pause(model_id, ENV)
    assert progress(engine, model_id) == ("PAUSED", 0)
    clock.advance(D.build + D.deploy + D.load_model + 1)  # the copy is ready meanwhile
    assert progress(engine, model_id) == ("PAUSED", 0)
    engine.promotion_signals.resume(model_id, ENV)
    assert progress(engine, model_id) == ("RAMPING_UP", 25)


def test_a_pause_in_the_last_step_holds_all_traffic_on_the_candidate_until_resumed(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    _, bad = rolling(engine, model_id, surge=50)
    clock.advance(STABILIZE)
    engine.promotion_signals.pause(model_id, ENV)
    clock.advance(STABILIZE * 3)
    assert progress(engine, model_id) == ("PAUSED", 100)
    assert current(engine, model_id) == "good"
    engine.promotion_signals.resume(model_id, ENV)
    assert progress(engine, model_id) == ("RAMPING_DOWN", 100)
    clock.advance(D.promotion_settle)
    assert engine.get_environment(model_id, ENV)["current_deployment"]["id"] == bad


@pytest.mark.parametrize("cancelled", [True, False])
def test_a_ramping_down_promotion_cannot_be_paused(
    engine: SimEngine, clock: FakeClock, model_id: str, cancelled: bool
) -> None:
    """Stepping back after a cancel, or past its last step (the previous deployment
    ramping down before the promotion completes)."""
    rolling(engine, model_id, surge=50)
    clock.advance(STABILIZE if cancelled else 2 * STABILIZE)
    if cancelled:
        engine.promotion_signals.cancel(model_id, ENV)
    assert progress(engine, model_id) == ("RAMPING_DOWN", 100)
    with pytest.raises(SimError, match="ramping down and cannot be paused") as refused:
        engine.promotion_signals.pause(model_id, ENV)
    assert refused.value.status == 400


def test_resuming_a_promotion_that_is_not_paused_is_a_bad_request(
    engine: SimEngine, model_id: str
) -> None:
    rolling(engine, model_id)
    with pytest.raises(SimError, match="is not paused") as refused:
        engine.promotion_signals.resume(model_id, ENV)
    assert refused.value.status == 400


def test_a_cancelled_rolling_deploy_steps_back_down_by_its_surge(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    rolling(engine, model_id)
    clock.advance(2 * STABILIZE)  # 75%
    assert engine.promotion_signals.cancel(model_id, ENV)["status"] == "RAMPING_DOWN"
    assert shares_seen(engine, clock, model_id, STABILIZE, 3) == [
        ("RAMPING_DOWN", 75),
        ("RAMPING_DOWN", 50),
        ("RAMPING_DOWN", 25),
        None,
    ]
    clock.advance(STABILIZE * 10)
    assert current(engine, model_id) == "good"


@pytest.mark.parametrize(
    ("signal", "serving"),
    [
        ("force_cancel", "good"),  # all traffic back at once
        ("force_roll_forward", "bad"),  # all traffic to the candidate
    ],
)
@pytest.mark.parametrize("situation", ["in a rolling step", "ramping down after a cancel"])
def test_the_forced_signals_end_a_promotion_at_once(
    engine: SimEngine, clock: FakeClock, model_id: str, signal: str, serving: str, situation: str
) -> None:
    if situation == "in a rolling step":
        rolling(engine, model_id)
        clock.advance(STABILIZE + 1)  # 50%
    else:
        ramping(engine, model_id)
        clock.advance(55)
        engine.promotion_signals.cancel(model_id, ENV)
    assert getattr(engine.promotion_signals, signal)(model_id, ENV) == {"success": True}
    assert progress(engine, model_id) is None
    assert current(engine, model_id) == serving
    clock.advance(RAMP * 10)  # nothing planned before the signal happens after it
    assert current(engine, model_id) == serving
    assert engine.get_environment(model_id, ENV)["candidate_deployment"] is None


@pytest.mark.parametrize("signal", ["pause", "resume", "force_cancel", "force_roll_forward"])
def test_every_signal_needs_a_promotion_in_progress(
    engine: SimEngine, model_id: str, signal: str
) -> None:
    engine.controls.seed_environment(model_id, ENV, promotion_settings={"rolling_deploy": True})
    with pytest.raises(SimError, match="No promotion in progress") as refused:
        getattr(engine.promotion_signals, signal)(model_id, ENV)
    assert refused.value.status == 400


@pytest.mark.parametrize(
    ("config", "shares"),
    [
        ({"max_surge_percent": 0, "max_unavailable_percent": 40}, [40, 80, 100]),
        ({"max_surge_percent": 0, "max_unavailable_percent": 0}, [100]),
    ],
)
def test_without_a_surge_a_rolling_deploy_steps_by_its_unavailability_or_at_once(
    engine: SimEngine, clock: FakeClock, model_id: str, config: dict, shares: list[int]
) -> None:
    config = {**config, "stabilization_time_seconds": int(STABILIZE)}
    serving_and_promoting(engine, model_id, rolling_deploy=True, rolling_deploy_config=config)
    seen = shares_seen(engine, clock, model_id, STABILIZE, len(shares))
    assert seen == [("RAMPING_UP", share) for share in shares] + [("RAMPING_DOWN", 100)]
