"""The simulated Baseten account: its records (teams, models, deployments, environments),
the lock that guards them, the clock, and the timeline of state changes still to come.

Every reader and writer works in a `session`: the lock held and every timeline event due by
the clock's "now" applied first, so the state a caller sees is a pure function of the clock.
With a `FakeClock` a test moves time with `advance` and reads the result, with no background
thread involved. Lookups raise the API's 404s; `render_*` gives the API's response shapes.
"""

from __future__ import annotations

import random
import string
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from baseten_operator.runtime.clock import Clock
from baseten_operator.sim.baseten import autoscaling_schedules, settings, views
from baseten_operator.sim.baseten.errors import bad_request, not_found
from baseten_operator.sim.baseten.records import (
    DEFAULT_AUTOSCALING,
    DEFAULT_PROMOTION_SETTINGS,
    DEFAULT_TEAM_ID,
    DEFAULT_TEAM_NAME,
    PRODUCTION,
    Deployment,
    Environment,
    InstanceType,
    Model,
    Secret,
    Team,
)
from baseten_operator.sim.baseten.timeline import Timeline
from baseten_operator.sim.baseten.traffic import (
    PROMOTING,
    STABLE,
    DeploymentState,
    Serving,
    TrafficLog,
)

_ID_ALPHABET = string.ascii_lowercase + string.digits


class Account:
    def __init__(self, clock: Clock, time_scale: float) -> None:
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self.lock = threading.RLock()
        self.clock = clock
        self.time_scale = time_scale
        self.timeline = Timeline()
        self.traffic = TrafficLog()
        # Models looked up or acted on since their traffic was last recorded.
        self._involved: set[str] = set()
        self._ids = random.Random()
        self.models: dict[str, Model] = {}
        self.deployments: dict[str, Deployment] = {}
        self.teams: dict[str, Team] = {}
        # By (team id, name): secret names are unique per team.
        self.secrets: dict[tuple[str, str], Secret] = {}
        self._add_default_team()

    def _add_default_team(self) -> None:
        default = Team(DEFAULT_TEAM_ID, DEFAULT_TEAM_NAME, self.clock.now(), default=True)
        self.teams[default.id] = default

    # ----------------------------------------------------------------- time

    @contextmanager
    def session(self, *, writes: bool = True) -> Iterator[float]:
        """Hold the lock with every event due by now applied; yields now. What the
        deployments of the models involved serve is recorded after each event and, unless
        the caller only reads (`writes` False), at the end."""
        with self.lock:
            now = self.clock.now()
            self.timeline.run_due(now, self._observe)
            try:
                yield now
            finally:
                if writes:
                    self._observe(now)

    def later(self, model_id: str, due: float, action: Callable[[float], None]) -> None:
        """Run `action` at `due` (simulated state changing by itself: a lifecycle step)."""

        def run(at: float) -> None:
            self._involved.add(model_id)
            action(at)

        self.timeline.at(due, run)

    def _observe(self, at: float) -> None:
        """Record each deployment's share of its environments' traffic, and its replicas,
        for the models a lookup or an event involved since the last time (traffic.py):
        going over every model on every change would make a large account quadratic."""
        for model_id in self._involved:
            model = self.models.get(model_id)
            self.traffic.record(at, model_id, self._states(model) if model else {})
        self._involved.clear()

    def _states(self, model: Model) -> dict[str, DeploymentState]:
        servings: dict[str, list[Serving]] = {}
        for env in model.environments.values():
            promotion = env.promotion
            promoting = promotion.percent if promotion is not None else 0
            current = env.current_deployment_id
            if current is not None and promoting < 100:
                stable = Serving(env.name, STABLE, (100 - promoting) / 100)
                servings.setdefault(current, []).append(stable)
            if promotion is not None and promoting > 0:
                candidate = Serving(env.name, PROMOTING, promoting / 100)
                servings.setdefault(promotion.candidate_id, []).append(candidate)
        deployments = (self.deployments[d] for d in model.deployment_ids)
        return {
            dep.id: DeploymentState(tuple(servings.get(dep.id, ())), views.active_replicas(dep))
            for dep in deployments
        }

    def scaled(self, sim_seconds: float) -> float:
        """Simulated seconds in the clock's seconds (time_scale: 0.01 runs 100 times faster)."""
        return sim_seconds * self.time_scale

    def reset(self) -> None:
        with self.lock:
            self.timeline.clear()
            self.traffic.clear()
            self._involved.clear()
            self.models.clear()
            self.deployments.clear()
            self.teams.clear()
            self.secrets.clear()
            self._add_default_team()

    # ----------------------------------------------------------------- lookups

    def new_id(self) -> str:
        while True:
            candidate = "".join(self._ids.choice(_ID_ALPHABET) for _ in range(7))
            if candidate not in self.models and candidate not in self.deployments:
                return candidate

    def team(self, team_id: str) -> Team:
        team = self.teams.get(team_id)
        if team is None:
            raise not_found(f"Team {team_id}")
        return team

    def model(self, model_id: str) -> Model:
        model = self.models.get(model_id)
        if model is None:
            raise not_found(f"Model {model_id}")
        self._involved.add(model_id)
        return model

    def deployment(self, model_id: str, deployment_id: str) -> Deployment:
        """A deployment of that model (404 for another model's)."""
        model = self.model(model_id)
        dep = self.deployments.get(deployment_id)
        if dep is None or dep.model_id != model.id:
            raise not_found(f"Deployment {deployment_id}")
        return dep

    def any_deployment(self, deployment_id: str) -> Deployment:
        dep = self.deployments.get(deployment_id)
        if dep is None:
            raise not_found(f"Deployment {deployment_id}")
        self._involved.add(dep.model_id)
        return dep

    def environment(self, model_id: str, env_name: str) -> Environment:
        env = self.model(model_id).environments.get(env_name)
        if env is None:
            raise not_found(f"Environment {env_name}")
        return env

    def current_environment_of(self, dep: Deployment) -> Environment | None:
        model = self.models.get(dep.model_id)
        if model is None:
            return None
        for env in model.environments.values():
            if env.current_deployment_id == dep.id:
                return env
        return None

    def promotions_of_candidate(self, dep: Deployment) -> list[Environment]:
        model = self.models.get(dep.model_id)
        if model is None:
            return []
        return [
            env
            for env in model.environments.values()
            if env.promotion is not None and env.promotion.candidate_id == dep.id
        ]

    def is_live(self, dep: Deployment, generation: int) -> bool:
        """Whether `dep` still exists and started no lifecycle step since `generation`."""
        return self.deployments.get(dep.id) is dep and dep.generation == generation

    def env_is_live(self, env: Environment) -> bool:
        model = self.models.get(env.model_id)
        return model is not None and model.environments.get(env.name) is env

    # ----------------------------------------------------------------- new records

    def add_team(self, name: str, now: float) -> Team:
        if not name or any(t.name == name for t in self.teams.values()):
            raise bad_request(f"A team named {name!r} already exists" if name else "Empty name")
        team = Team(f"team{len(self.teams)}{self.new_id()}", name, now)
        self.teams[team.id] = team
        return team

    def add_model(self, name: str, now: float, team_id: str = DEFAULT_TEAM_ID) -> Model:
        if team_id not in self.teams:
            raise not_found(f"Team {team_id}")
        taken = any(m.name == name and m.team_id == team_id for m in self.models.values())
        if not name or taken:
            raise bad_request(f"A model named {name!r} already exists" if name else "Empty name")
        model = Model(id=self.new_id(), name=name, created_at=now, team_id=team_id)
        self.models[model.id] = model
        self._involved.add(model.id)
        return model

    def add_deployment(
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
            id=self.new_id(),
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

    def add_environment(
        self,
        model_id: str,
        name: str,
        now: float,
        autoscaling: dict[str, Any] | None,
        promotion_settings: dict[str, Any] | None,
    ) -> Environment:
        model = self.model(model_id)
        if name in model.environments:
            raise bad_request(f"Environment {name!r} already exists for model {model_id}")
        env = Environment(
            name=name,
            model_id=model_id,
            created_at=now,
            autoscaling=settings.merged_autoscaling(DEFAULT_AUTOSCALING, autoscaling or {}),
            promotion_settings=settings.merged_promotion_settings(
                DEFAULT_PROMOTION_SETTINGS, promotion_settings or {}
            ),
        )
        model.environments[name] = env
        return env

    # ----------------------------------------------------------------- rendering

    def render_deployment(self, dep: Deployment) -> dict:
        env = self.current_environment_of(dep)
        return views.deployment_view(
            dep, env.name if env else None, env is not None and env.name == PRODUCTION
        )

    def render_environment(self, env: Environment, now: float) -> dict:
        current = self.deployments.get(env.current_deployment_id or "")
        candidate = None
        in_progress = None
        if env.promotion is not None:
            candidate = self.deployments.get(env.promotion.candidate_id)
            in_progress = views.promotion_view(env.promotion)
        return views.environment_view(
            env,
            self.render_deployment(current) if current else None,
            self.render_deployment(candidate) if candidate else None,
            in_progress,
            views.autoscaling_schedules_view(
                env, current, autoscaling_schedules.in_force(env, now)
            ),
        )

    def render_model(self, model: Model) -> dict:
        production = model.environments.get(PRODUCTION)
        prod_dep = (
            self.deployments.get(production.current_deployment_id or "") if production else None
        )
        latest = self.deployments.get(model.deployment_ids[-1]) if model.deployment_ids else None
        team = self.teams.get(model.team_id)
        return views.model_view(model, prod_dep, latest, team.name if team else DEFAULT_TEAM_NAME)
