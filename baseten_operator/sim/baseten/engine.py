"""The simulated Baseten account: models, deployments, environments and their lifecycles.

State changes that take time are events on a `Timeline`; every public method first runs
the events due by the clock's "now" (`advance_to_now`), so the state a caller sees is a
pure function of the clock. With a `FakeClock` a test moves time with `advance` and
reads the result, with no background thread involved. All access is under one lock.
"""

from __future__ import annotations

import copy
import random
import string
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.sim.baseten import views
from baseten_operator.sim.baseten.errors import SimError, bad_request, conflict, not_found
from baseten_operator.sim.baseten.records import (
    ACTIVE,
    BUILDING,
    DEACTIVATING,
    DEFAULT_AUTOSCALING,
    DEFAULT_PROMOTION_SETTINGS,
    DEFAULT_ROLLING_DEPLOY_CONFIG,
    DEFAULT_TEAM_ID,
    DEFAULT_TEAM_NAME,
    DEPLOY_FAILED,
    DEPLOYING,
    DEPLOYMENT_STATUSES,
    INACTIVE,
    LOADING_MODEL,
    PRODUCTION,
    READY_STATUSES,
    RETRYABLE_STATUSES,
    SCALED_TO_ZERO,
    TERMINAL_FOR_PROMOTION,
    WAKING_UP,
    Deployment,
    Environment,
    InstanceType,
    Model,
    Promotion,
    Team,
)
from baseten_operator.sim.baseten.schedule import Timeline


@dataclass(frozen=True)
class LifecycleDurations:
    """Simulated seconds each step takes (multiplied by the engine's time_scale)."""

    build: float = 20.0
    deploy: float = 10.0
    load_model: float = 10.0
    activate: float = 10.0
    wake_up: float = 5.0
    deactivate: float = 5.0
    scale_to_zero: float = 30.0
    promotion_settle: float = 2.0
    environment_update: float = 2.0


Finish = Callable[[Deployment, float], None]
_ID_ALPHABET = string.ascii_lowercase + string.digits


class SimEngine:
    def __init__(
        self,
        *,
        clock: Clock | None = None,
        time_scale: float = 1.0,
        durations: LifecycleDurations | None = None,
    ) -> None:
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self.lock = threading.RLock()
        self.clock: Clock = clock or RealClock()
        self.time_scale = time_scale
        self.durations = durations or LifecycleDurations()
        self._timeline = Timeline()
        self._ids = random.Random()
        self.models: dict[str, Model] = {}
        self.deployments: dict[str, Deployment] = {}
        self.teams: dict[str, Team] = {}
        self._add_default_team()

    def _add_default_team(self) -> None:
        default = Team(DEFAULT_TEAM_ID, DEFAULT_TEAM_NAME, self.clock.now(), default=True)
        self.teams = {default.id: default}

    # ----------------------------------------------------------------- time

    @contextmanager
    def _session(self) -> Iterator[float]:
        """Hold the lock with every event due by now applied; yields now."""
        with self.lock:
            now = self.clock.now()
            self._timeline.run_due(now)
            yield now

    def advance_to_now(self) -> None:
        with self._session():
            pass

    tick = advance_to_now

    def _scaled(self, sim_seconds: float) -> float:
        return sim_seconds * self.time_scale

    def reset(self) -> None:
        with self.lock:
            self._timeline.clear()
            self.models.clear()
            self.deployments.clear()
            self._add_default_team()

    # ----------------------------------------------------------------- lookups

    def _new_id(self) -> str:
        while True:
            candidate = "".join(self._ids.choice(_ID_ALPHABET) for _ in range(7))
            if candidate not in self.models and candidate not in self.deployments:
                return candidate

    def _model(self, model_id: str) -> Model:
        model = self.models.get(model_id)
        if model is None:
            raise not_found(f"Model {model_id}")
        return model

    def _deployment(self, model_id: str, deployment_id: str) -> Deployment:
        model = self._model(model_id)
        dep = self.deployments.get(deployment_id)
        if dep is None or dep.model_id != model.id:
            raise not_found(f"Deployment {deployment_id}")
        return dep

    def _any_deployment(self, deployment_id: str) -> Deployment:
        dep = self.deployments.get(deployment_id)
        if dep is None:
            raise not_found(f"Deployment {deployment_id}")
        return dep

    def _environment(self, model_id: str, env_name: str) -> Environment:
        env = self._model(model_id).environments.get(env_name)
        if env is None:
            raise not_found(f"Environment {env_name}")
        return env

    def _current_environment_of(self, dep: Deployment) -> Environment | None:
        model = self.models.get(dep.model_id)
        if model is None:
            return None
        for env in model.environments.values():
            if env.current_deployment_id == dep.id:
                return env
        return None

    def _promotions_of_candidate(self, dep: Deployment) -> list[Environment]:
        model = self.models.get(dep.model_id)
        if model is None:
            return []
        return [
            env
            for env in model.environments.values()
            if env.promotion is not None and env.promotion.candidate_id == dep.id
        ]

    def _is_live(self, dep: Deployment, generation: int) -> bool:
        return self.deployments.get(dep.id) is dep and dep.generation == generation

    def _env_is_live(self, env: Environment) -> bool:
        model = self.models.get(env.model_id)
        return model is not None and model.environments.get(env.name) is env

    # ----------------------------------------------------------------- rendering

    def _render_deployment(self, dep: Deployment) -> dict:
        env = self._current_environment_of(dep)
        return views.deployment_view(
            dep, env.name if env else None, env is not None and env.name == PRODUCTION
        )

    def _render_environment(self, env: Environment, now: float) -> dict:
        current = self.deployments.get(env.current_deployment_id or "")
        candidate = None
        in_progress = None
        if env.promotion is not None:
            candidate = self.deployments.get(env.promotion.candidate_id)
            in_progress = views.promotion_view(env.promotion, now, self.time_scale)
        return views.environment_view(
            env,
            self._render_deployment(current) if current else None,
            self._render_deployment(candidate) if candidate else None,
            in_progress,
        )

    def _render_model(self, model: Model) -> dict:
        production = model.environments.get(PRODUCTION)
        prod_dep = (
            self.deployments.get(production.current_deployment_id or "") if production else None
        )
        latest = self.deployments.get(model.deployment_ids[-1]) if model.deployment_ids else None
        team = self.teams.get(model.team_id)
        return views.model_view(model, prod_dep, latest, team.name if team else DEFAULT_TEAM_NAME)

    # ----------------------------------------------------------------- lifecycle

    def _set_status(self, dep: Deployment, status: str, at: float) -> None:
        dep.status = status
        if status in READY_STATUSES:
            dep.deployed = True
            for env in self._promotions_of_candidate(dep):
                self._candidate_ready(env, at)
        elif status in TERMINAL_FOR_PROMOTION:
            for env in self._promotions_of_candidate(dep):
                env.promotion = None

    def _run_phases(
        self, dep: Deployment, start: float, phases: Sequence[tuple[str, float]], finish: Finish
    ) -> None:
        """Walk `dep` through `phases` (status, sim seconds) from `start`, then `finish`.

        Starting a new walk invalidates the events of any earlier one.
        """
        dep.generation += 1
        generation = dep.generation

        def step(index: int, at: float) -> None:
            if index == len(phases):
                finish(dep, at)
                return
            status, duration = phases[index]
            self._set_status(dep, status, at)

            def next_step(due: float) -> None:
                if self._is_live(dep, generation):
                    step(index + 1, due)

            self._timeline.at(at + self._scaled(duration), next_step)

        step(0, start)

    def _push_phases(self) -> list[tuple[str, float]]:
        d = self.durations
        return [(BUILDING, d.build), (DEPLOYING, d.deploy), (LOADING_MODEL, d.load_model)]

    def _finish_serving(self, dep: Deployment, at: float) -> None:
        """Up and serving; a deployment allowed zero replicas scales to zero later."""
        self._set_status(dep, ACTIVE, at)
        if dep.autoscaling["min_replica"] == 0:
            self._schedule_scale_to_zero(dep, at)

    def _finish_activation(self, dep: Deployment, at: float) -> None:
        if dep.autoscaling["min_replica"] == 0:
            self._set_status(dep, SCALED_TO_ZERO, at)
        else:
            self._set_status(dep, ACTIVE, at)

    def _finish_deactivation(self, dep: Deployment, at: float) -> None:
        self._set_status(dep, INACTIVE, at)

    def _schedule_scale_to_zero(self, dep: Deployment, at: float) -> None:
        dep.generation += 1
        generation = dep.generation

        def scale_down(due: float) -> None:
            if (
                self._is_live(dep, generation)
                and dep.status == ACTIVE
                and dep.autoscaling["min_replica"] == 0
            ):
                self._set_status(dep, SCALED_TO_ZERO, due)

        self._timeline.at(at + self._scaled(self.durations.scale_to_zero), scale_down)

    def _start_deactivation(self, dep: Deployment, at: float) -> None:
        self._run_phases(
            dep, at, [(DEACTIVATING, self.durations.deactivate)], self._finish_deactivation
        )

    def _apply_autoscaling(self, dep: Deployment, changes: dict[str, Any], at: float) -> bool:
        """Merge `changes` into the deployment's settings and react to a new minimum."""
        merged = {**dep.autoscaling, **changes}
        if merged == dep.autoscaling:
            return False
        dep.autoscaling = merged
        minimum = merged["min_replica"]
        if dep.status == ACTIVE and minimum == 0:
            self._schedule_scale_to_zero(dep, at)
        elif dep.status == ACTIVE:
            dep.generation += 1  # cancels a pending scale to zero
        elif dep.status == SCALED_TO_ZERO and minimum > 0:
            self._run_phases(dep, at, [(WAKING_UP, self.durations.wake_up)], self._finish_serving)
        return True

    @staticmethod
    def _merged_autoscaling(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
        merged = {**base, **changes}
        if merged["min_replica"] > merged["max_replica"]:
            raise bad_request(
                "min_replica must be less than or equal to max_replica",
                {"min_replica": merged["min_replica"], "max_replica": merged["max_replica"]},
            )
        return merged

    @staticmethod
    def _merged_promotion_settings(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
        merged = {**base, **{k: v for k, v in changes.items() if k != "rolling_deploy_config"}}
        rolling = changes.get("rolling_deploy_config")
        if rolling is not None:
            previous = base.get("rolling_deploy_config") or DEFAULT_ROLLING_DEPLOY_CONFIG
            merged["rolling_deploy_config"] = {**previous, **rolling}
        return merged

    # ----------------------------------------------------------------- models

    # ----------------------------------------------------------------- teams

    def create_team(self, name: str) -> dict:
        with self._session() as now:
            if not name or any(t.name == name for t in self.teams.values()):
                raise bad_request(f"A team named {name!r} already exists" if name else "Empty name")
            team = Team(f"team{len(self.teams)}{self._new_id()}", name, now)
            self.teams[team.id] = team
            return views.team_view(team)

    def list_teams(self, name: str | None = None, team_id: str | None = None) -> list[dict]:
        """Every team (or one by name); `team_id`: only that one (what a team key sees)."""
        with self._session():
            return [
                views.team_view(t)
                for t in self.teams.values()
                if (name is None or t.name == name) and (team_id is None or t.id == team_id)
            ]

    def team_of_model(self, model_id: str) -> str | None:
        with self._session():
            model = self.models.get(model_id)
            return model.team_id if model else None

    def has_team(self, team_id: str) -> bool:
        with self._session():
            return team_id in self.teams

    # ----------------------------------------------------------------- models

    def list_models(self, name: str | None = None, team_id: str | None = None) -> list[dict]:
        with self._session():
            if team_id is not None and team_id not in self.teams:
                raise not_found(f"Team {team_id}")
            return [
                self._render_model(m)
                for m in self.models.values()
                if (name is None or m.name == name) and (team_id is None or m.team_id == team_id)
            ]

    def get_model(self, model_id: str) -> dict:
        with self._session():
            return self._render_model(self._model(model_id))

    def create_model(self, name: str, team_id: str = DEFAULT_TEAM_ID) -> dict:
        with self._session() as now:
            return self._render_model(self._create_model(name, now, team_id))

    def _create_model(self, name: str, now: float, team_id: str = DEFAULT_TEAM_ID) -> Model:
        if team_id not in self.teams:
            raise not_found(f"Team {team_id}")
        taken = any(m.name == name and m.team_id == team_id for m in self.models.values())
        if not name or taken:
            raise bad_request(f"A model named {name!r} already exists" if name else "Empty name")
        model = Model(id=self._new_id(), name=name, created_at=now, team_id=team_id)
        self.models[model.id] = model
        return model

    def find_model_id(self, name: str) -> str | None:
        with self._session():
            return next((m.id for m in self.models.values() if m.name == name), None)

    def delete_model(self, model_id: str) -> dict:
        with self._session():
            model = self._model(model_id)
            for dep_id in model.deployment_ids:
                self.deployments.pop(dep_id, None)
            del self.models[model_id]
            return {"id": model_id, "deleted": True}

    # ----------------------------------------------------------------- deployments

    def list_deployments(self, model_id: str, name: str | None = None) -> list[dict]:
        with self._session():
            model = self._model(model_id)
            deps = [self.deployments[d] for d in model.deployment_ids]
            return [self._render_deployment(d) for d in deps if name is None or d.name == name]

    def get_deployment(self, model_id: str, deployment_id: str) -> dict:
        with self._session():
            return self._render_deployment(self._deployment(model_id, deployment_id))

    def _add_deployment(
        self,
        model: Model,
        name: str,
        now: float,
        *,
        status: str,
        instance_type: InstanceType,
        autoscaling: dict[str, Any] | None = None,
        labels: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        truss_config: dict[str, Any] | None = None,
    ) -> Deployment:
        if any(self.deployments[d].name == name for d in model.deployment_ids):
            raise bad_request(f"A deployment named {name!r} already exists for this model")
        dep = Deployment(
            id=self._new_id(),
            name=name,
            model_id=model.id,
            created_at=now,
            status=status,
            instance_type=instance_type,
            autoscaling={**DEFAULT_AUTOSCALING, **(autoscaling or {})},
            labels=labels,
            files=dict(files or {}),
            truss_config=truss_config,
        )
        self.deployments[dep.id] = dep
        model.deployment_ids.append(dep.id)
        return dep

    def create_pushed_deployment(
        self,
        model_id: str,
        name: str | None,
        *,
        files: dict[str, str],
        truss_config: dict[str, Any],
        labels: dict[str, Any] | None = None,
    ) -> dict:
        """A `truss push`: a new deployment that starts BUILDING."""
        with self._session() as now:
            model = self._model(model_id)
            dep = self._add_deployment(
                model,
                name or f"deployment-{len(model.deployment_ids) + 1}",
                now,
                status=BUILDING,
                instance_type=InstanceType.from_truss_config(truss_config),
                labels=labels,
                files=files,
                truss_config=truss_config,
            )
            self._run_phases(dep, now, self._push_phases(), self._finish_serving)
            return self._render_deployment(dep)

    def delete_deployment(self, model_id: str, deployment_id: str) -> dict:
        with self._session():
            dep = self._deployment(model_id, deployment_id)
            env = self._current_environment_of(dep)
            if env is not None:
                raise bad_request(
                    f"Deployment {dep.name} is the current deployment of environment "
                    f"{env.name} and cannot be deleted"
                )
            if self._promotions_of_candidate(dep):
                raise bad_request(f"Deployment {dep.name} is being promoted")
            del self.deployments[dep.id]
            self.models[model_id].deployment_ids.remove(dep.id)
            return {"id": dep.id, "deleted": True, "model_id": model_id}

    def activate(self, model_id: str, deployment_id: str) -> dict:
        with self._session() as now:
            dep = self._deployment(model_id, deployment_id)
            if dep.status in RETRYABLE_STATUSES:
                raise bad_request(f"Deployment {dep.name} is {dep.status}; retry it instead")
            if dep.status in (INACTIVE, DEACTIVATING):
                self._run_phases(
                    dep, now, [(DEPLOYING, self.durations.activate)], self._finish_activation
                )
            return {"success": True}

    def deactivate(self, model_id: str, deployment_id: str) -> dict:
        with self._session() as now:
            dep = self._deployment(model_id, deployment_id)
            if dep.status not in (INACTIVE, DEACTIVATING):
                self._start_deactivation(dep, now)
            return {"success": True}

    def retry(self, model_id: str, deployment_id: str) -> dict:
        with self._session() as now:
            dep = self._deployment(model_id, deployment_id)
            if dep.status not in RETRYABLE_STATUSES:
                return {
                    "retried": False,
                    "reason": f"Deployment is {dep.status}; only failed deployments can be retried",
                    "deployment": self._render_deployment(dep),
                }
            self._run_phases(dep, now, self._push_phases(), self._finish_serving)
            return {"retried": True, "reason": None, "deployment": self._render_deployment(dep)}

    def update_deployment_autoscaling(
        self, model_id: str, deployment_id: str, changes: dict[str, Any]
    ) -> dict:
        with self._session() as now:
            dep = self._deployment(model_id, deployment_id)
            self._merged_autoscaling(dep.autoscaling, changes)
            if not self._apply_autoscaling(dep, changes, now):
                return {"status": "UNCHANGED", "message": "Autoscaling settings are unchanged"}
            if not dep.deployed:
                return {
                    "status": "QUEUED",
                    "message": "Autoscaling settings will apply once the deployment is deployed",
                }
            return {"status": "ACCEPTED", "message": "Autoscaling settings updated"}

    # ----------------------------------------------------------------- environments

    def list_environments(self, model_id: str) -> list[dict]:
        with self._session() as now:
            model = self._model(model_id)
            return [self._render_environment(e, now) for e in model.environments.values()]

    def get_environment(self, model_id: str, env_name: str) -> dict:
        with self._session() as now:
            return self._render_environment(self._environment(model_id, env_name), now)

    def create_environment(
        self,
        model_id: str,
        name: str,
        autoscaling: dict[str, Any] | None = None,
        promotion_settings: dict[str, Any] | None = None,
    ) -> dict:
        with self._session() as now:
            env = self._create_environment(model_id, name, now, autoscaling, promotion_settings)
            return self._render_environment(env, now)

    def _create_environment(
        self,
        model_id: str,
        name: str,
        now: float,
        autoscaling: dict[str, Any] | None,
        promotion_settings: dict[str, Any] | None,
    ) -> Environment:
        model = self._model(model_id)
        if name in model.environments:
            raise bad_request(f"Environment {name!r} already exists for model {model_id}")
        env = Environment(
            name=name,
            model_id=model_id,
            created_at=now,
            autoscaling=self._merged_autoscaling(DEFAULT_AUTOSCALING, autoscaling or {}),
            promotion_settings=self._merged_promotion_settings(
                DEFAULT_PROMOTION_SETTINGS, promotion_settings or {}
            ),
        )
        model.environments[name] = env
        return env

    def delete_environment(self, model_id: str, env_name: str) -> dict:
        with self._session():
            env = self._environment(model_id, env_name)
            if env.name == PRODUCTION:
                raise bad_request("The production environment cannot be deleted")
            if env.promotion is not None:
                raise conflict(f"A promotion is in progress for environment {env_name}")
            del self.models[model_id].environments[env_name]
            return {"name": env_name, "model_id": model_id, "deleted": True}

    def update_environment(
        self,
        model_id: str,
        env_name: str,
        autoscaling: dict[str, Any] | None = None,
        promotion_settings: dict[str, Any] | None = None,
        *,
        immediately: bool = False,
    ) -> dict:
        """Baseten applies environment updates asynchronously; `immediately` is the UI's way."""
        with self._session() as now:
            env = self._environment(model_id, env_name)
            new_autoscaling = self._merged_autoscaling(env.autoscaling, autoscaling or {})
            new_promotion = self._merged_promotion_settings(
                env.promotion_settings, promotion_settings or {}
            )
            view = self._render_environment(env, now)
            if new_autoscaling == env.autoscaling and new_promotion == env.promotion_settings:
                return {"environment": view, "status": "UNCHANGED", "message": "No changes"}

            def apply(at: float) -> None:
                if not self._env_is_live(env):
                    return
                env.autoscaling = {**env.autoscaling, **(autoscaling or {})}
                env.promotion_settings = self._merged_promotion_settings(
                    env.promotion_settings, promotion_settings or {}
                )
                current = self.deployments.get(env.current_deployment_id or "")
                if current is not None:
                    self._apply_autoscaling(current, autoscaling or {}, at)

            if immediately:
                apply(now)
                view = self._render_environment(env, now)
            else:
                self._timeline.at(now + self._scaled(self.durations.environment_update), apply)
            return {"environment": view, "status": "ACCEPTED", "message": "Update accepted"}

    # ----------------------------------------------------------------- promotion

    def promote(
        self,
        model_id: str,
        env_name: str,
        deployment_id: str,
        *,
        scale_down_previous_deployment: bool = True,
        preserve_env_instance_type: bool = True,
    ) -> dict:
        with self._session() as now:
            model = self._model(model_id)
            env = self._environment(model_id, env_name)
            dep = self._deployment(model_id, deployment_id)
            if env.promotion is not None:
                raise conflict(
                    f"A promotion to environment {env_name} is already in progress; "
                    "wait for it to complete"
                )
            if dep.status in TERMINAL_FOR_PROMOTION:
                raise bad_request(f"Deployment {dep.name} is {dep.status} and cannot be promoted")
            if env.current_deployment_id == dep.id:
                return self._render_deployment(dep)
            candidate = self._promotion_candidate(model, env, dep, now, preserve_env_instance_type)
            settings = env.promotion_settings
            env.promotion = Promotion(
                candidate_id=candidate.id,
                previous_id=env.current_deployment_id,
                scale_down_previous=scale_down_previous_deployment,
                started_at=now,
                candidate_is_copy=candidate is not dep,
                rolling_deploy=bool(settings.get("rolling_deploy")),
                ramp_up_seconds=(
                    float(settings.get("ramp_up_duration_seconds") or 0)
                    if settings.get("ramp_up_while_promoting")
                    else None
                ),
            )
            if candidate.status in READY_STATUSES:
                self._candidate_ready(env, now)
            return self._render_deployment(candidate)

    def _promotion_candidate(
        self,
        model: Model,
        env: Environment,
        dep: Deployment,
        now: float,
        preserve_env_instance_type: bool,
    ) -> Deployment:
        """The deployment itself, or (like Baseten) a fresh copy named `{name}.{unix time}`."""
        attached_elsewhere = any(
            other is not env
            and (
                other.current_deployment_id == dep.id
                or (other.promotion is not None and other.promotion.candidate_id == dep.id)
            )
            for other in model.environments.values()
        )
        instance_type_differs = (
            preserve_env_instance_type
            and env.instance_type is not None
            and env.instance_type != dep.instance_type
        )
        redeploy = bool(env.promotion_settings.get("redeploy_on_promotion"))
        if not (attached_elsewhere or instance_type_differs or redeploy):
            return dep
        copy_dep = self._add_deployment(
            model,
            f"{dep.name}.{int(now)}",
            now,
            status=BUILDING,
            instance_type=(
                env.instance_type
                if instance_type_differs and env.instance_type
                else dep.instance_type
            ),
            autoscaling=env.autoscaling,
            labels=copy.deepcopy(dep.labels),
            files=dep.files,
            truss_config=copy.deepcopy(dep.truss_config),
        )
        self._run_phases(copy_dep, now, self._push_phases(), self._finish_serving)
        return copy_dep

    def _candidate_ready(self, env: Environment, at: float) -> None:
        promotion = env.promotion
        if promotion is None or promotion.ready_at is not None:
            return
        promotion.ready_at = at
        settle = (promotion.ramp_up_seconds or 0.0) + self.durations.promotion_settle

        def complete(due: float) -> None:
            if self._env_is_live(env) and env.promotion is promotion:
                self._complete_promotion(env, due)

        self._timeline.at(at + self._scaled(settle), complete)

    def _complete_promotion(self, env: Environment, at: float) -> None:
        promotion = env.promotion
        assert promotion is not None
        env.promotion = None
        candidate = self.deployments.get(promotion.candidate_id)
        if candidate is None:
            return
        env.current_deployment_id = candidate.id
        env.instance_type = candidate.instance_type
        self._apply_autoscaling(candidate, env.autoscaling, at)
        previous = self.deployments.get(promotion.previous_id or "")
        if previous is None or previous is candidate or not promotion.scale_down_previous:
            return
        strategy = env.promotion_settings.get("promotion_cleanup_strategy") or "SCALE_TO_ZERO"
        if strategy == "SCALE_TO_ZERO":
            self._apply_autoscaling(previous, {"min_replica": 0}, at)
        elif strategy == "DEACTIVATE" and previous.status not in (INACTIVE, DEACTIVATING):
            self._start_deactivation(previous, at)

    # ----------------------------------------------------------------- control

    def seed_model(self, name: str, team_id: str = DEFAULT_TEAM_ID) -> dict:
        return self.create_model(name, team_id)

    def seed_deployment(
        self,
        model_id: str,
        name: str,
        *,
        status: str = ACTIVE,
        autoscaling_settings: dict[str, Any] | None = None,
        labels: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        truss_config: dict[str, Any] | None = None,
    ) -> dict:
        """An existing deployment; BUILDING/DEPLOYING/LOADING_MODEL ones carry on from there."""
        if status not in DEPLOYMENT_STATUSES:
            raise bad_request(f"Unknown deployment status {status!r}")
        with self._session() as now:
            model = self._model(model_id)
            dep = self._add_deployment(
                model,
                name,
                now,
                status=status,
                instance_type=InstanceType.from_truss_config(truss_config or {}),
                autoscaling=autoscaling_settings,
                labels=labels,
                files=files,
                truss_config=truss_config,
            )
            phases = self._push_phases()
            push_statuses = [phase_status for phase_status, _ in phases]
            if status in push_statuses:
                start = push_statuses.index(status)
                self._run_phases(dep, now, phases[start:], self._finish_serving)
            elif status == ACTIVE:
                self._finish_serving(dep, now)
            else:
                dep.deployed = status not in RETRYABLE_STATUSES
            return self._render_deployment(dep)

    def seed_environment(
        self,
        model_id: str,
        name: str,
        *,
        current_deployment_id: str | None = None,
        autoscaling_settings: dict[str, Any] | None = None,
        promotion_settings: dict[str, Any] | None = None,
    ) -> dict:
        with self._session() as now:
            current = (
                self._deployment(model_id, current_deployment_id) if current_deployment_id else None
            )
            base = autoscaling_settings
            if base is None and current is not None:
                base = current.autoscaling
            env = self._create_environment(model_id, name, now, base, promotion_settings)
            if current is not None:
                env.current_deployment_id = current.id
                env.instance_type = current.instance_type
                self._apply_autoscaling(current, env.autoscaling, now)
            return self._render_environment(env, now)

    def fail_deployment(self, deployment_id: str, status: str = DEPLOY_FAILED) -> dict:
        if status not in DEPLOYMENT_STATUSES:
            raise bad_request(f"Unknown deployment status {status!r}")
        with self._session() as now:
            dep = self._any_deployment(deployment_id)
            dep.generation += 1
            self._set_status(dep, status, now)
            return self._render_deployment(dep)

    def complete_deployment(self, deployment_id: str) -> dict:
        """Skip the remaining lifecycle: the deployment is ACTIVE now."""
        with self._session() as now:
            dep = self._any_deployment(deployment_id)
            dep.generation += 1
            self._finish_serving(dep, now)
            return self._render_deployment(dep)

    def _promotion(self, model_id: str, env_name: str) -> tuple[Environment, Promotion]:
        env = self._environment(model_id, env_name)
        if env.promotion is None:
            raise SimError(409, "CONFLICT", f"No promotion in progress for {env_name}")
        return env, env.promotion

    def complete_promotion(self, model_id: str, env_name: str) -> dict:
        with self._session() as now:
            env, promotion = self._promotion(model_id, env_name)
            candidate = self.deployments.get(promotion.candidate_id)
            if candidate is not None and candidate.status not in READY_STATUSES:
                candidate.generation += 1
                candidate.status = ACTIVE
                candidate.deployed = True
            self._complete_promotion(env, now)
            return self._render_environment(env, now)

    def fail_promotion(self, model_id: str, env_name: str) -> dict:
        with self._session() as now:
            env, promotion = self._promotion(model_id, env_name)
            candidate = self.deployments.get(promotion.candidate_id)
            env.promotion = None
            if (
                candidate is not None
                and promotion.candidate_is_copy
                and candidate.status not in READY_STATUSES
            ):
                candidate.generation += 1
                candidate.status = DEPLOY_FAILED
            return self._render_environment(env, now)

    def deactivate_deployment(self, deployment_id: str) -> dict:
        """Baseten's inactivity TTL: deactivates even deployments attached to an environment."""
        with self._session() as now:
            dep = self._any_deployment(deployment_id)
            if dep.status not in (INACTIVE, DEACTIVATING):
                self._start_deactivation(dep, now)
            return self._render_deployment(dep)

    def uploaded_files(self, deployment_id: str) -> dict[str, str]:
        with self._session():
            return dict(self._any_deployment(deployment_id).files)
