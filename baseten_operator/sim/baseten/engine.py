"""`SimEngine`: the simulated account behind the Management API and the truss push protocol:
the API's operations (teams, models, deployments, environments, promotions), on the
`Account`'s records, with the `Lifecycle` moving what they started along, and the
`Controls` a test uses to seed state and act as Baseten or its UI would.

Every operation runs in an account session (account.py): with a `FakeClock` its outcome is
a pure function of the clock. The answers are the API's response bodies (views.py).
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.sim.baseten import (
    audit_trail,
    autoscaling_schedules,
    rollout,
    settings,
    views,
)
from baseten_operator.sim.baseten.account import Account
from baseten_operator.sim.baseten.audit_logs import AuditQuery, audit_page
from baseten_operator.sim.baseten.autoscaling_schedules import ScheduleEdit
from baseten_operator.sim.baseten.controls import Controls
from baseten_operator.sim.baseten.deployment_logs import LogsQuery, logs_answer
from baseten_operator.sim.baseten.deployment_metrics import MetricsQuery, metrics_answer
from baseten_operator.sim.baseten.errors import bad_request, conflict, not_found
from baseten_operator.sim.baseten.lifecycle import Lifecycle, LifecycleDurations
from baseten_operator.sim.baseten.prometheus_export import Exported, exposition
from baseten_operator.sim.baseten.promotion_signals import PromotionSignals
from baseten_operator.sim.baseten.records import (
    BUILDING,
    DEACTIVATING,
    DEFAULT_TEAM_ID,
    INACTIVE,
    PRODUCTION,
    READY_STATUSES,
    RETRYABLE_STATUSES,
    TERMINAL_FOR_PROMOTION,
    Deployment,
    Environment,
    InstanceType,
    Model,
    Promotion,
)
from baseten_operator.sim.baseten.team_secrets import TeamSecrets

__all__ = ["LifecycleDurations", "SimEngine"]


class SimEngine:
    def __init__(
        self,
        *,
        clock: Clock | None = None,
        time_scale: float = 1.0,
        durations: LifecycleDurations | None = None,
    ) -> None:
        self.account = Account(clock or RealClock(), time_scale)
        self.lifecycle = Lifecycle(self.account, durations or LifecycleDurations())
        self.controls = Controls(self.account, self.lifecycle)
        # cancel_promotion and the rolling promotions' signals (promotion_signals.py).
        self.promotion_signals = PromotionSignals(self.account, self.lifecycle)
        # The secrets endpoints (team_secrets.py).
        self.secrets = TeamSecrets(self.account)

    # What tests peek at: the account's lock, clock and deployment records.

    @property
    def lock(self) -> threading.RLock:
        return self.account.lock

    @property
    def clock(self) -> Clock:
        return self.account.clock

    @property
    def deployments(self) -> dict[str, Deployment]:
        return self.account.deployments

    def advance_to_now(self) -> None:
        """Apply every lifecycle step due by the clock's now."""
        with self.account.session(writes=False):
            pass

    tick = advance_to_now

    def reset(self) -> None:
        self.account.reset()

    # ----------------------------------------------------------------- teams

    def create_team(self, name: str) -> dict:
        with self.account.session() as now:
            return views.team_view(self.account.add_team(name, now))

    def list_teams(self, name: str | None = None, team_id: str | None = None) -> list[dict]:
        """Every team (or one by name); `team_id`: only that one (what a team key sees)."""
        with self.account.session(writes=False):
            return [
                views.team_view(t)
                for t in self.account.teams.values()
                if (name is None or t.name == name) and (team_id is None or t.id == team_id)
            ]

    def team_of_model(self, model_id: str) -> str | None:
        with self.account.session(writes=False):
            model = self.account.models.get(model_id)
            return model.team_id if model else None

    def has_team(self, team_id: str) -> bool:
        with self.account.session(writes=False):
            return team_id in self.account.teams

    # ----------------------------------------------------------------- models

    def list_models(self, name: str | None = None, team_id: str | None = None) -> list[dict]:
        with self.account.session(writes=False):
            if team_id is not None and team_id not in self.account.teams:
                raise not_found(f"Team {team_id}")
            return [
                self.account.render_model(m)
                for m in self.account.models.values()
                if (name is None or m.name == name) and (team_id is None or m.team_id == team_id)
            ]

    def get_model(self, model_id: str) -> dict:
        with self.account.session(writes=False):
            return self.account.render_model(self.account.model(model_id))

    def create_model(self, name: str, team_id: str = DEFAULT_TEAM_ID) -> dict:
        with self.account.session() as now:
            return self.account.render_model(self.account.add_model(name, now, team_id))

    def find_model_id(self, name: str) -> str | None:
        """The id of the first model named `name`, in any team (None if there is none)."""
        with self.account.session(writes=False):
            return next((m.id for m in self.account.models.values() if m.name == name), None)

    def deployment_logs(self, model_id: str, deployment_id: str, query: LogsQuery) -> dict:
        with self.account.session(writes=False) as now:
            return logs_answer(self.account.deployment(model_id, deployment_id), query, now)

    def list_audit_logs(self, model_id: str, query: AuditQuery) -> dict:
        with self.account.session(writes=False) as now:
            return audit_page(self.account.model(model_id).audit_log, query, now)

    def delete_model(self, model_id: str) -> dict:
        with self.account.session():
            model = self.account.model(model_id)
            for dep_id in model.deployment_ids:
                self.account.deployments.pop(dep_id, None)
            del self.account.models[model_id]
            return {"id": model_id, "deleted": True}

    # ----------------------------------------------------------------- deployments

    def list_deployments(self, model_id: str, name: str | None = None) -> list[dict]:
        with self.account.session(writes=False):
            model = self.account.model(model_id)
            deps = [self.account.deployments[d] for d in model.deployment_ids]
            return [
                self.account.render_deployment(d) for d in deps if name is None or d.name == name
            ]

    def get_deployment(self, model_id: str, deployment_id: str) -> dict:
        with self.account.session(writes=False):
            dep = self.account.deployment(model_id, deployment_id)
            return self.account.render_deployment(dep)

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
        with self.account.session() as now:
            model = self.account.model(model_id)
            dep = self.account.add_deployment(
                model,
                name or f"deployment-{len(model.deployment_ids) + 1}",
                now,
                status=BUILDING,
                instance_type=InstanceType.from_truss_config(truss_config),
                labels=labels,
                files=files,
                truss_config=truss_config,
            )
            self.lifecycle.push(dep, now)
            self._audit_deployment(
                "MODEL_DEPLOYED",
                dep,
                now,
                scale_previous_to_zero=False,
                trusted=False,
                publish=False,
                environment_name=None,
            )
            return self.account.render_deployment(dep)

    def delete_deployment(self, model_id: str, deployment_id: str) -> dict:
        with self.account.session() as now:
            dep = self.account.deployment(model_id, deployment_id)
            env = self.account.current_environment_of(dep)
            if env is not None:
                raise bad_request(
                    f"Deployment {dep.name} is the current deployment of environment "
                    f"{env.name} and cannot be deleted"
                )
            if self.account.promotions_of_candidate(dep):
                raise bad_request(f"Deployment {dep.name} is being promoted")
            self._audit_deployment("MODEL_DEPLOYMENT_DELETED", dep, now)
            del self.account.deployments[dep.id]
            self.account.models[model_id].deployment_ids.remove(dep.id)
            return {"id": dep.id, "deleted": True, "model_id": model_id}

    def activate(self, model_id: str, deployment_id: str) -> dict:
        with self.account.session() as now:
            dep = self.account.deployment(model_id, deployment_id)
            if dep.status in RETRYABLE_STATUSES:
                raise bad_request(f"Deployment {dep.name} is {dep.status}; retry it instead")
            if dep.status in (INACTIVE, DEACTIVATING):
                self.lifecycle.activate(dep, now)
                self._audit_deployment("MODEL_DEPLOYMENT_ACTIVATED", dep, now)
            return {"success": True}

    def deactivate(self, model_id: str, deployment_id: str) -> dict:
        with self.account.session() as now:
            dep = self.account.deployment(model_id, deployment_id)
            if dep.status not in (INACTIVE, DEACTIVATING):
                self.lifecycle.deactivate(dep, now)
                self._audit_deployment("MODEL_DEPLOYMENT_DEACTIVATED", dep, now)
            return {"success": True}

    def retry(self, model_id: str, deployment_id: str) -> dict:
        with self.account.session() as now:
            dep = self.account.deployment(model_id, deployment_id)
            if dep.status not in RETRYABLE_STATUSES:
                return {
                    "retried": False,
                    "reason": f"Deployment is {dep.status}; only failed deployments can be retried",
                    "deployment": self.account.render_deployment(dep),
                }
            self.lifecycle.push(dep, now)
            self._audit_deployment("MODEL_DEPLOYMENT_RETRIED", dep, now, retried=True)
            return {
                "retried": True,
                "reason": None,
                "deployment": self.account.render_deployment(dep),
            }

    def update_deployment_autoscaling(
        self, model_id: str, deployment_id: str, changes: dict[str, Any]
    ) -> dict:
        with self.account.session() as now:
            dep = self.account.deployment(model_id, deployment_id)
            settings.merged_autoscaling(dep.autoscaling, changes)
            previous = audit_trail.autoscaling(dep.autoscaling)
            if not self.lifecycle.apply_autoscaling(dep, changes, now):
                return {"status": "UNCHANGED", "message": "Autoscaling settings are unchanged"}
            self._audit_deployment(
                "MODEL_DEPLOYMENT_AUTOSCALING_SETTINGS_CHANGED",
                dep,
                now,
                schedules=None,
                **audit_trail.autoscaling(dep.autoscaling),
                deployment_type=None,
                previous_settings=previous,
            )
            if not dep.deployed:
                return {
                    "status": "QUEUED",
                    "message": "Autoscaling settings will apply once the deployment is deployed",
                }
            return {"status": "ACCEPTED", "message": "Autoscaling settings updated"}

    def _audit_deployment(self, event_type: str, dep: Deployment, at: float, **data: Any) -> None:
        audit_trail.record_deployment_event(self.account, event_type, dep, at, **data)

    def deployment_metrics(self, model_id: str, deployment_id: str, query: MetricsQuery) -> dict:
        with self.account.session(writes=False) as now:
            dep = self.account.deployment(model_id, deployment_id)
            return metrics_answer(self.account.traffic, dep.id, query, now, self.account.time_scale)

    def metrics_export(self, team_id: str | None = None) -> bytes:
        """Baseten's Prometheus export of every deployment (a team key's: its team's)."""
        with self.account.session(writes=False) as now:
            exported = []
            for model in self.account.models.values():
                if team_id is not None and model.team_id != team_id:
                    continue
                for dep in (self.account.deployments[d] for d in model.deployment_ids):
                    env = self.account.current_environment_of(dep) or next(
                        iter(self.account.promotions_of_candidate(dep)), None
                    )
                    exported.append(
                        Exported(
                            model.id,
                            model.name,
                            dep.id,
                            env.name if env else "",
                            views.active_replicas(dep),
                        )
                    )
            return exposition(self.account.traffic, exported, now, self.account.time_scale)

    # ----------------------------------------------------------------- environments

    def list_environments(self, model_id: str) -> list[dict]:
        with self.account.session(writes=False) as now:
            model = self.account.model(model_id)
            return [self.account.render_environment(e, now) for e in model.environments.values()]

    def get_environment(self, model_id: str, env_name: str) -> dict:
        with self.account.session(writes=False) as now:
            env = self.account.environment(model_id, env_name)
            return self.account.render_environment(env, now)

    def create_environment(
        self,
        model_id: str,
        name: str,
        autoscaling: dict[str, Any] | None = None,
        promotion_settings: dict[str, Any] | None = None,
    ) -> dict:
        with self.account.session() as now:
            env = self.account.add_environment(model_id, name, now, autoscaling, promotion_settings)
            model = self.account.models[model_id]
            details = audit_trail.of_environment(model, env)
            audit_trail.record(
                self.account, model, "ENVIRONMENT_CREATED", details, now, environment=name
            )
            return self.account.render_environment(env, now)

    def delete_environment(self, model_id: str, env_name: str) -> dict:
        with self.account.session() as now:
            env = self.account.environment(model_id, env_name)
            if env.name == PRODUCTION:
                raise bad_request("The production environment cannot be deleted")
            if env.promotion is not None:
                raise conflict(f"A promotion is in progress for environment {env_name}")
            model = self.account.models[model_id]
            del model.environments[env_name]
            details = {"model_id": model_id, "model_name": model.name, "environment_name": env_name}
            audit_trail.record(
                self.account, model, "ENVIRONMENT_DELETED", details, now, environment=env_name
            )
            return {"name": env_name, "model_id": model_id, "deleted": True}

    def update_environment(
        self,
        model_id: str,
        env_name: str,
        autoscaling: dict[str, Any] | None = None,
        promotion_settings: dict[str, Any] | None = None,
        schedules: ScheduleEdit | None = None,
        *,
        immediately: bool = False,
    ) -> dict:
        """Baseten applies environment updates asynchronously (every group of one update at
        the same moment); `immediately` is the UI's way."""
        account = self.account
        with account.session() as now:
            env = account.environment(model_id, env_name)
            new_autoscaling = settings.merged_autoscaling(env.autoscaling, autoscaling or {})
            new_promotion = settings.merged_promotion_settings(
                env.promotion_settings, promotion_settings or {}
            )
            if schedules is not None:
                autoscaling_schedules.check(env, schedules)
            view = account.render_environment(env, now)
            if (
                new_autoscaling == env.autoscaling
                and new_promotion == env.promotion_settings
                and not (schedules is not None and autoscaling_schedules.changes(env, schedules))
            ):
                return {"environment": view, "status": "UNCHANGED", "message": "No changes"}

            actor = audit_trail.current_actor()  # the requester's, whenever it applies

            def apply(at: float) -> None:
                if not account.env_is_live(env):
                    return
                previous = audit_trail.environment_settings(env)
                timezone_before, schedules_before = env.schedule_timezone, env.schedules
                env.autoscaling = {**env.autoscaling, **(autoscaling or {})}
                env.promotion_settings = settings.merged_promotion_settings(
                    env.promotion_settings, promotion_settings or {}
                )
                if schedules is not None:
                    edited = autoscaling_schedules.edited(env, schedules, account.new_id)
                    env.schedule_timezone, env.schedules = edited
                current = account.deployments.get(env.current_deployment_id or "")
                if current is not None:
                    self.lifecycle.apply_autoscaling(current, autoscaling or {}, at)
                model = account.models[model_id]
                changes = None
                if schedules is not None:
                    changes = audit_trail.schedule_changes(
                        schedules_before, env.schedules, timezone_before, env.schedule_timezone
                    )
                details = {
                    **audit_trail.of_environment(model, env),
                    "schedules": changes,
                    "previous_settings": previous,
                }
                audit_trail.record(
                    account,
                    model,
                    "ENVIRONMENT_UPDATED",
                    details,
                    at,
                    actor=actor,
                    environment=env.name,
                )

            if immediately:
                apply(now)
                view = account.render_environment(env, now)
            else:
                delay = account.scaled(self.lifecycle.durations.environment_update)
                account.later(model_id, now + delay, apply)
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
        with self.account.session() as now:
            model = self.account.model(model_id)
            env = self.account.environment(model_id, env_name)
            dep = self.account.deployment(model_id, deployment_id)
            if env.promotion is not None:
                raise conflict(
                    f"A promotion to environment {env_name} is already in progress; "
                    "wait for it to complete"
                )
            if dep.status in TERMINAL_FOR_PROMOTION:
                raise bad_request(f"Deployment {dep.name} is {dep.status} and cannot be promoted")
            if env.current_deployment_id == dep.id:
                return self.account.render_deployment(dep)
            candidate = self._promotion_candidate(model, env, dep, now, preserve_env_instance_type)
            promotion_settings = env.promotion_settings
            env.promotion = Promotion(
                candidate_id=candidate.id,
                previous_id=env.current_deployment_id,
                scale_down_previous=scale_down_previous_deployment,
                started_at=now,
                candidate_is_copy=candidate is not dep,
                rolling_deploy=bool(promotion_settings.get("rolling_deploy")),
                steps=rollout.steps_for(promotion_settings, self.lifecycle.durations.rolling_step),
            )
            details = {
                **audit_trail.of_deployment(model, candidate),
                "environment_name": env_name,
                "environment_id": None,
            }
            audit_trail.record(
                self.account,
                model,
                "MODEL_DEPLOYMENT_PROMOTED",
                details,
                now,
                environment=env_name,
                deployment_id=candidate.id,
            )
            if candidate.status in READY_STATUSES:
                self.lifecycle.candidate_ready(env, now)
            return self.account.render_deployment(candidate)

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
        copy_dep = self.account.add_deployment(
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
        self.lifecycle.push(copy_dep, now)
        return copy_dep
