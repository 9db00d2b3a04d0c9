"""The Management API's signals to a promotion in progress, as Baseten's OpenAPI spec
describes them: cancel (CancelPromotionResponseV1), and for stepped promotions (a rolling
deploy or a ramp-up) pause, resume, force-cancel and force-roll-forward
(SignalPromotionResponseV1). How the traffic then moves is rollout.py's.

A cancelled promotion whose candidate already receives traffic steps that traffic back down
(RAMPING_DOWN) before the candidate is released; one that sends it nothing yet is CANCELED
at once. Either way the previous deployment serves throughout.
"""

from __future__ import annotations

from collections.abc import Callable

from baseten_operator.sim.baseten import audit_trail
from baseten_operator.sim.baseten.account import Account
from baseten_operator.sim.baseten.errors import bad_request
from baseten_operator.sim.baseten.lifecycle import Lifecycle
from baseten_operator.sim.baseten.records import (
    RAMPING_DOWN,
    READY_STATUSES,
    Environment,
    Promotion,
)

CANCELED = "CANCELED"
SIGNALLED = {"success": True}


class PromotionSignals:
    def __init__(self, account: Account, lifecycle: Lifecycle) -> None:
        self._account = account
        self._lifecycle = lifecycle

    def cancel(self, model_id: str, env_name: str) -> dict:
        with self._account.session() as now:
            env, promotion = self._in_progress(model_id, env_name)
            self._audit(env, promotion, "GRACEFUL_CANCEL", now)
            if promotion.cancelled:
                return _cancel_answer(RAMPING_DOWN, "The promotion is already ramping down")
            if not (promotion.stepped and promotion.percent > 0):
                env.promotion = None
                return _cancel_answer(CANCELED, "The promotion was canceled")
            self._lifecycle.rollout.ramp_down(env, promotion, now)
            return _cancel_answer(RAMPING_DOWN, "Traffic is moving back to the previous deployment")

    def force_cancel(self, model_id: str, env_name: str) -> dict:
        """At once, even during a ramp-down: all traffic back on the previous deployment,
        which stays current; the candidate is not promoted."""
        with self._account.session() as now:
            env, promotion = self._stepped(model_id, env_name)
            env.promotion = None
            self._audit(env, promotion, "FORCE_CANCEL", now)
            return dict(SIGNALLED)

    def pause(self, model_id: str, env_name: str) -> dict:
        """Takes effect when the step in progress ends (at once before the first step)."""
        with self._account.session() as now:
            env, promotion = self._stepped(model_id, env_name)
            if promotion.phase == RAMPING_DOWN:
                raise bad_request(
                    f"The promotion to environment {env_name} is ramping down and cannot "
                    "be paused"
                )
            self._lifecycle.rollout.pause(promotion)
            self._audit(env, promotion, "PAUSE", now)
            return dict(SIGNALLED)

    def resume(self, model_id: str, env_name: str) -> dict:
        with self._account.session() as now:
            env, promotion = self._stepped(model_id, env_name)
            if not self._lifecycle.rollout.resume(env, promotion, now):
                raise bad_request(f"The promotion to environment {env_name} is not paused")
            self._audit(env, promotion, "RESUME", now)
            return dict(SIGNALLED)

    def force_roll_forward(self, model_id: str, env_name: str) -> dict:
        """All traffic to the candidate now, even while a cancellation ramps down."""
        with self._account.session() as now:
            env, promotion = self._stepped(model_id, env_name)
            candidate = self._account.deployments.get(promotion.candidate_id)
            if candidate is None or candidate.status not in READY_STATUSES:
                raise bad_request(f"The candidate of environment {env_name} is not ready")
            self._lifecycle.complete_promotion(env, now)
            self._audit(env, promotion, "FORCE_ROLL_FORWARD", now)
            return dict(SIGNALLED)

    def _audit(self, env: Environment, promotion: Promotion, action: str, at: float) -> None:
        """MODEL_PROMOTION_CONTROL_ACTION, naming the candidate the signal was about."""
        model = self._account.models[env.model_id]
        candidate = self._account.deployments.get(promotion.candidate_id)
        details = {
            "model_id": model.id,
            "model_name": model.name,
            "deployment_id": promotion.candidate_id,
            "deployment_name": candidate.name if candidate else promotion.candidate_id,
            "environment_name": env.name,
            "environment_id": None,
            "action": action,
        }
        audit_trail.record(
            self._account,
            model,
            "MODEL_PROMOTION_CONTROL_ACTION",
            details,
            at,
            environment=env.name,
            deployment_id=promotion.candidate_id,
        )

    def _in_progress(self, model_id: str, env_name: str) -> tuple[Environment, Promotion]:
        env = self._account.environment(model_id, env_name)
        if env.promotion is None:
            raise bad_request(f"No promotion in progress for environment {env_name}")
        return env, env.promotion

    def _stepped(self, model_id: str, env_name: str) -> tuple[Environment, Promotion]:
        env, promotion = self._in_progress(model_id, env_name)
        if not promotion.stepped:
            raise bad_request(f"The promotion to environment {env_name} is not a rolling promotion")
        return env, promotion


# The signals by their operation names in the spec (POST .../environments/{env}/<name>).
SIGNALS: dict[str, Callable[[PromotionSignals, str, str], dict]] = {
    "cancel_promotion": PromotionSignals.cancel,
    "force_cancel_promotion": PromotionSignals.force_cancel,
    "pause_promotion": PromotionSignals.pause,
    "resume_promotion": PromotionSignals.resume,
    "force_roll_forward_promotion": PromotionSignals.force_roll_forward,
}


def _cancel_answer(status: str, message: str) -> dict:
    return {"status": status, "message": message}
