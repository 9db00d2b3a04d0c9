"""How deployments and promotions move on by themselves once something started them: a push
builds, deploys and loads (and fails to load, FAILED, when its truss config names a secret
its model's team does not have); an activation deploys; a deactivation ends INACTIVE; a deployment
allowed zero replicas scales to zero after its own scale_down_delay (no traffic reaches a
simulated deployment) and wakes up when its minimum rises again; a promotion moves its
traffic over once its candidate is ready (rollout.py), then completes and cleans up the
deployment it replaced.

Each step is an event on the account's timeline, due after its `LifecycleDurations` (in
simulated seconds, times the time scale). A deployment's `generation` counts the lifecycle
walks started on it: an event of an older walk finds it changed and does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from baseten_operator.sim.baseten.account import Account
from baseten_operator.sim.baseten.deployment_logs import log_status
from baseten_operator.sim.baseten.records import (
    ACTIVE,
    BUILDING,
    DEACTIVATING,
    DEPLOYING,
    FAILED,
    INACTIVE,
    LOADING_MODEL,
    READY_STATUSES,
    SCALED_TO_ZERO,
    TERMINAL_FOR_PROMOTION,
    WAKING_UP,
    Deployment,
    Environment,
)
from baseten_operator.sim.baseten.rollout import Rollout
from baseten_operator.sim.baseten.team_secrets import missing_secrets


@dataclass(frozen=True)
class LifecycleDurations:
    """Simulated seconds each step takes (multiplied by the engine's time_scale)."""

    build: float = 20.0
    deploy: float = 10.0
    load_model: float = 10.0
    activate: float = 10.0
    wake_up: float = 5.0
    deactivate: float = 5.0
    promotion_settle: float = 2.0
    # The least a rolling deploy's step lasts (its replicas coming up), whatever its
    # stabilization time (rollout.py).
    rolling_step: float = 2.0
    environment_update: float = 2.0


Finish = Callable[[Deployment, float], None]
# The phases of a push, in order: a deployment seeded in one carries on from there.
PUSH_STATUSES = (BUILDING, DEPLOYING, LOADING_MODEL)


class Lifecycle:
    def __init__(self, account: Account, durations: LifecycleDurations) -> None:
        self._account = account
        self.durations = durations
        self.rollout = Rollout(account, durations.promotion_settle, self.complete_promotion)

    # ----------------------------------------------------------------- deployments

    def set_status(self, dep: Deployment, status: str, at: float) -> None:
        """A new status, in the deployment's logs too; a candidate that became ready (or
        failed) moves its promotions on."""
        dep.status = status
        log_status(dep, status, at)
        if status in READY_STATUSES:
            dep.deployed = True
            for env in self._account.promotions_of_candidate(dep):
                self.candidate_ready(env, at)
        elif status in TERMINAL_FOR_PROMOTION:
            for env in self._account.promotions_of_candidate(dep):
                env.promotion = None

    def cancel_pending(self, dep: Deployment) -> None:
        """Forget the steps `dep` had still to go through (a status forced from outside)."""
        dep.generation += 1

    def push(self, dep: Deployment, at: float, from_status: str = BUILDING) -> None:
        """Build, deploy and load `dep` (from `from_status`, one of PUSH_STATUSES), then serve."""
        d = self.durations
        phases = list(zip(PUSH_STATUSES, (d.build, d.deploy, d.load_model), strict=True))
        start = PUSH_STATUSES.index(from_status)
        self._run_phases(dep, at, phases[start:], self._finish_loading)

    def _finish_loading(self, dep: Deployment, at: float) -> None:
        """The model server starts with its secrets: one its team lacks fails the load."""
        model = self._account.models.get(dep.model_id)
        names = _secret_names((dep.truss_config or {}).get("secrets"))
        missing = missing_secrets(self._account, model.team_id, names) if model else []
        if missing:
            dep.failure = f"secrets not found in Baseten: {', '.join(missing)}"
            self.set_status(dep, FAILED, at)
            return
        dep.failure = None
        self.finish_serving(dep, at)

    def activate(self, dep: Deployment, at: float) -> None:
        self._run_phases(dep, at, [(DEPLOYING, self.durations.activate)], self._finish_activation)

    def deactivate(self, dep: Deployment, at: float) -> None:
        self._run_phases(
            dep, at, [(DEACTIVATING, self.durations.deactivate)], self._finish_deactivation
        )

    def finish_serving(self, dep: Deployment, at: float) -> None:
        """Up and serving; a deployment allowed zero replicas scales to zero later."""
        self.set_status(dep, ACTIVE, at)
        if dep.autoscaling["min_replica"] == 0:
            self._scale_to_zero_later(dep, at)

    def apply_autoscaling(self, dep: Deployment, changes: dict[str, Any], at: float) -> bool:
        """Merge `changes` into the deployment's settings and react to a new minimum."""
        merged = {**dep.autoscaling, **changes}
        if merged == dep.autoscaling:
            return False
        dep.autoscaling = merged
        minimum = merged["min_replica"]
        if dep.status == ACTIVE and minimum == 0:
            self._scale_to_zero_later(dep, at)
        elif dep.status == ACTIVE:
            self.cancel_pending(dep)  # a pending scale to zero
        elif dep.status == SCALED_TO_ZERO and minimum > 0:
            self._run_phases(dep, at, [(WAKING_UP, self.durations.wake_up)], self.finish_serving)
        return True

    def _run_phases(
        self, dep: Deployment, start: float, phases: Sequence[tuple[str, float]], finish: Finish
    ) -> None:
        """Walk `dep` through `phases` (status, sim seconds) from `start`, then `finish`.

        Starting a new walk invalidates the events of any earlier one.
        """
        self.cancel_pending(dep)
        generation = dep.generation

        def step(index: int, at: float) -> None:
            if index == len(phases):
                finish(dep, at)
                return
            status, duration = phases[index]
            self.set_status(dep, status, at)

            def next_step(due: float) -> None:
                if self._account.is_live(dep, generation):
                    step(index + 1, due)

            self._account.later(dep.model_id, at + self._account.scaled(duration), next_step)

        step(0, start)

    def _finish_activation(self, dep: Deployment, at: float) -> None:
        if dep.autoscaling["min_replica"] == 0:
            self.set_status(dep, SCALED_TO_ZERO, at)
        else:
            self.set_status(dep, ACTIVE, at)

    def _finish_deactivation(self, dep: Deployment, at: float) -> None:
        self.set_status(dep, INACTIVE, at)

    def _scale_to_zero_later(self, dep: Deployment, at: float) -> None:
        """Without traffic, the last replica goes after the deployment's own scale_down_delay."""
        self.cancel_pending(dep)
        generation = dep.generation

        def scale_down(due: float) -> None:
            if (
                self._account.is_live(dep, generation)
                and dep.status == ACTIVE
                and dep.autoscaling["min_replica"] == 0
            ):
                self.set_status(dep, SCALED_TO_ZERO, due)

        due = at + self._account.scaled(float(dep.autoscaling["scale_down_delay"]))
        self._account.later(dep.model_id, due, scale_down)

    # ----------------------------------------------------------------- promotions

    def candidate_ready(self, env: Environment, at: float) -> None:
        """The promoted deployment is up: its traffic starts moving over (rollout.py)."""
        self.rollout.start(env, at)

    def complete_promotion(self, env: Environment, at: float) -> None:
        """The candidate serves the environment; the one it replaced is cleaned up as the
        environment's promotion_cleanup_strategy says."""
        promotion = env.promotion
        assert promotion is not None
        env.promotion = None
        candidate = self._account.deployments.get(promotion.candidate_id)
        if candidate is None:
            return
        env.current_deployment_id = candidate.id
        env.instance_type = candidate.instance_type
        self.apply_autoscaling(candidate, env.autoscaling, at)
        previous = self._account.deployments.get(promotion.previous_id or "")
        if previous is None or previous is candidate or not promotion.scale_down_previous:
            return
        strategy = env.promotion_settings.get("promotion_cleanup_strategy") or "SCALE_TO_ZERO"
        if strategy == "SCALE_TO_ZERO":
            self.apply_autoscaling(previous, {"min_replica": 0}, at)
        elif strategy == "DEACTIVATE" and previous.status not in (INACTIVE, DEACTIVATING):
            self.deactivate(previous, at)


def _secret_names(secrets: Any) -> list[str]:
    """The names a truss config's `secrets` holds: a map's keys (a list's items)."""
    if isinstance(secrets, dict | list):
        return [str(name) for name in secrets]
    return []
