"""How a promotion's traffic moves to its candidate (docs/baseten-api.md, promotions).

A promotion releases its candidate (RELEASING, no traffic) until the candidate is ready.
Then a stepped promotion (a rolling deploy, or a ramp-up) gives the candidate
`steps.percent` more of the environment's traffic at each step (RAMPING_UP), each step held
`steps.seconds`. A pause asked for during a step takes effect when that step ends (PAUSED,
the share frozen); a resume starts the next step. After the last step, or as soon as the
candidate is ready for a promotion that is not stepped, the candidate has all the traffic
while the previous deployment is ramped down (RAMPING_DOWN at 100%), and the promotion
completes. A graceful cancel of a stepped promotion whose candidate has traffic steps that
traffic back down, one step each `steps.seconds`, then releases the candidate; the previous
deployment serves throughout.

Every step is an event on the account's timeline, due when the step ends: the state, and
the traffic history the metrics read, is exact at every instant whatever the clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from baseten_operator.sim.baseten.account import Account
from baseten_operator.sim.baseten.records import (
    DEFAULT_ROLLING_DEPLOY_CONFIG,
    PAUSED,
    RAMP_STAGES,
    RAMPING_DOWN,
    RAMPING_UP,
    RELEASING,
    Environment,
    Promotion,
    TrafficSteps,
)

Complete = Callable[[Environment, float], None]
Action = Callable[[Environment, Promotion, float], None]


def steps_for(settings: dict[str, Any], shortest_step: float) -> TrafficSteps | None:
    """The steps a promotion under these promotion settings takes, None when the traffic
    moves all at once. A ramp-up (ten even stages over its duration) takes precedence over
    a rolling deploy's steps, as the simulator has always played it.

    *Inferred*: a rolling step lasts its stabilization time but never less than
    `shortest_step` (its replicas coming up); with no surge the step is
    max_unavailable_percent, and with neither, one step of 100%."""
    ramp = float(settings.get("ramp_up_duration_seconds") or 0)
    if settings.get("ramp_up_while_promoting") and ramp > 0:
        return TrafficSteps(100 // RAMP_STAGES, ramp / RAMP_STAGES)
    if not settings.get("rolling_deploy"):
        return None
    config = settings.get("rolling_deploy_config") or DEFAULT_ROLLING_DEPLOY_CONFIG
    percent = config.get("max_surge_percent") or config.get("max_unavailable_percent") or 100
    stabilization = float(config.get("stabilization_time_seconds") or 0)
    return TrafficSteps(int(percent), max(stabilization, shortest_step))


class Rollout:
    def __init__(self, account: Account, settle_seconds: float, complete: Complete) -> None:
        self._account = account
        self._settle_seconds = settle_seconds
        self._complete = complete

    def start(self, env: Environment, at: float) -> None:
        """The candidate is ready: the first step begins (unless a pause came first)."""
        promotion = env.promotion
        if promotion is None or promotion.ready_at is not None:
            return
        promotion.ready_at = at
        if promotion.phase == RELEASING:
            self._next_step(env, promotion, at)

    def pause(self, promotion: Promotion) -> None:
        """Pause at the end of the step in progress (at once before the first one)."""
        if promotion.phase == RAMPING_UP:
            promotion.pause_pending = True
        elif promotion.phase == RELEASING:
            promotion.phase = PAUSED

    def resume(self, env: Environment, promotion: Promotion, at: float) -> bool:
        """Carry on with the next step; False when there is no pause to undo."""
        if promotion.phase == PAUSED:
            if promotion.ready_at is None:
                promotion.phase = RELEASING
            else:
                self._next_step(env, promotion, at)
            return True
        if promotion.pause_pending:
            promotion.pause_pending = False
            return True
        return False

    def ramp_down(self, env: Environment, promotion: Promotion, at: float) -> None:
        """Step the candidate's share back down to nothing, then release the candidate."""
        assert promotion.steps is not None
        promotion.cancelled = True
        promotion.phase = RAMPING_DOWN
        promotion.pause_pending = False
        promotion.generation += 1  # the steps up planned so far are void
        self._after(env, promotion, promotion.steps.seconds, at, self._step_down)

    def _next_step(self, env: Environment, promotion: Promotion, at: float) -> None:
        steps = promotion.steps
        if steps is None or promotion.step >= steps.count:
            self._settle(env, promotion, at)
            return
        promotion.step += 1
        promotion.phase = RAMPING_UP
        promotion.percent = steps.share(promotion.step)
        self._after(env, promotion, steps.seconds, at, self._step_ended)

    def _step_ended(self, env: Environment, promotion: Promotion, at: float) -> None:
        if promotion.pause_pending:
            promotion.pause_pending = False
            promotion.phase = PAUSED
        else:
            self._next_step(env, promotion, at)

    def _settle(self, env: Environment, promotion: Promotion, at: float) -> None:
        promotion.phase = RAMPING_DOWN
        promotion.percent = 100
        self._after(env, promotion, self._settle_seconds, at, self._completed)

    def _completed(self, env: Environment, promotion: Promotion, at: float) -> None:
        self._complete(env, at)

    def _step_down(self, env: Environment, promotion: Promotion, at: float) -> None:
        assert promotion.steps is not None
        promotion.percent = max(promotion.percent - promotion.steps.percent, 0)
        if promotion.percent == 0:
            env.promotion = None
        else:
            self._after(env, promotion, promotion.steps.seconds, at, self._step_down)

    def _after(
        self, env: Environment, promotion: Promotion, sim_seconds: float, at: float, act: Action
    ) -> None:
        """Run `act` `sim_seconds` after `at`, unless the promotion ended or changed course
        (its generation moved on) meanwhile."""
        generation = promotion.generation

        def run(due: float) -> None:
            if (
                self._account.env_is_live(env)
                and env.promotion is promotion
                and promotion.generation == generation
            ):
                act(env, promotion, due)

        self._account.later(env.model_id, at + self._account.scaled(sim_seconds), run)
