"""The Management API's signals to a promotion in progress, as Baseten's OpenAPI spec
describes them: cancel (CancelPromotionResponseV1), and for rolling promotions pause,
resume, force-cancel and force-roll-forward (SignalPromotionResponseV1).

A cancelled promotion whose candidate already receives traffic ramps that traffic back down
over the ramp's stages (RAMPING_DOWN) before the candidate is released; one that sends it
nothing yet is CANCELED at once. Either way the previous deployment serves throughout.
"""

from __future__ import annotations

import math

from baseten_operator.sim.baseten import views
from baseten_operator.sim.baseten.account import Account
from baseten_operator.sim.baseten.errors import bad_request
from baseten_operator.sim.baseten.lifecycle import Lifecycle
from baseten_operator.sim.baseten.records import (
    RAMP_STAGE_PERCENT,
    RAMP_STAGES,
    READY_STATUSES,
    Environment,
    Promotion,
)

CANCELED = "CANCELED"
RAMPING_DOWN = "RAMPING_DOWN"
SIGNALLED = {"success": True}


class PromotionSignals:
    def __init__(self, account: Account, lifecycle: Lifecycle) -> None:
        self._account = account
        self._lifecycle = lifecycle

    def cancel(self, model_id: str, env_name: str) -> dict:
        with self._account.session() as now:
            env, promotion = self._in_progress(model_id, env_name)
            if promotion.cancelled_at is not None:
                return _cancel_answer(RAMPING_DOWN, "The promotion is already ramping down")
            at = promotion.paused_at if promotion.paused_at is not None else now
            traffic = views.ramp_up_phase(promotion, at, self._account.time_scale)[1]
            if not (promotion.rolling and traffic > 0):
                env.promotion = None
                return _cancel_answer(CANCELED, "The promotion was canceled")
            self._ramp_down(env, promotion, traffic, now)
            return _cancel_answer(RAMPING_DOWN, "Traffic is moving back to the previous deployment")

    def force_cancel(self, model_id: str, env_name: str) -> dict:
        """At once, even during a ramp-down: all traffic back on the previous deployment."""
        with self._account.session():
            env, _ = self._rolling(model_id, env_name)
            env.promotion = None
            return dict(SIGNALLED)

    def pause(self, model_id: str, env_name: str) -> dict:
        with self._account.session() as now:
            _, promotion = self._rolling(model_id, env_name)
            if promotion.cancelled_at is not None:
                raise bad_request("A promotion that is ramping down cannot be paused")
            if promotion.paused_at is None:
                promotion.paused_at = now
                promotion.generation += 1
            return dict(SIGNALLED)

    def resume(self, model_id: str, env_name: str) -> dict:
        with self._account.session() as now:
            env, promotion = self._rolling(model_id, env_name)
            if promotion.paused_at is None:
                raise bad_request(f"The promotion to environment {env_name} is not paused")
            if promotion.ready_at is not None:
                # The ramp carries on where it stood when paused.
                promotion.ready_at = now - max(promotion.paused_at - promotion.ready_at, 0.0)
            promotion.paused_at = None
            promotion.generation += 1
            if promotion.ready_at is not None:
                self._lifecycle.plan_completion(env, promotion)
            return dict(SIGNALLED)

    def force_roll_forward(self, model_id: str, env_name: str) -> dict:
        """All traffic to the candidate now, even while a cancellation ramps down."""
        with self._account.session() as now:
            env, promotion = self._rolling(model_id, env_name)
            candidate = self._account.deployments.get(promotion.candidate_id)
            if candidate is None or candidate.status not in READY_STATUSES:
                raise bad_request(f"The candidate of environment {env_name} is not ready")
            self._lifecycle.complete_promotion(env, now)
            return dict(SIGNALLED)

    def _ramp_down(self, env: Environment, promotion: Promotion, traffic: int, now: float) -> None:
        """Step the candidate's share back down, a stage at a time, then release it."""
        ramp = promotion.ramp_up_seconds or 0.0
        promotion.ramp_down_stage = (
            ramp / RAMP_STAGES if ramp > 0 else self._lifecycle.durations.promotion_settle
        )
        promotion.cancelled_at = now
        promotion.cancelled_from = traffic
        promotion.paused_at = None
        promotion.generation += 1
        stages = math.ceil(traffic / RAMP_STAGE_PERCENT)
        end = now + self._account.scaled(promotion.ramp_down_stage * stages)
        self._lifecycle.plan_ramp_down_end(env, promotion, end)

    def _in_progress(self, model_id: str, env_name: str) -> tuple[Environment, Promotion]:
        env = self._account.environment(model_id, env_name)
        if env.promotion is None:
            raise bad_request(f"No promotion in progress for environment {env_name}")
        return env, env.promotion

    def _rolling(self, model_id: str, env_name: str) -> tuple[Environment, Promotion]:
        env, promotion = self._in_progress(model_id, env_name)
        if not promotion.rolling:
            raise bad_request(f"The promotion to environment {env_name} is not a rolling promotion")
        return env, promotion


def _cancel_answer(status: str, message: str) -> dict:
    return {"status": status, "message": message}
