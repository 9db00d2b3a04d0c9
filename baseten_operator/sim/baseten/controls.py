"""What a test does to the simulated account besides calling the API: seed models,
deployments and environments as if they had been there all along, and act as Baseten
(a failed build, a finished promotion, the inactivity TTL) or a person in its UI would.

`BasetenSimulator` exposes these as its control methods and `POST /_sim/<method>`.
"""

from __future__ import annotations

from typing import Any

from baseten_operator.sim.baseten import audit_trail, autoscaling_schedules
from baseten_operator.sim.baseten.account import Account
from baseten_operator.sim.baseten.autoscaling_schedules import ScheduleEdit
from baseten_operator.sim.baseten.deployment_logs import (
    check_level,
    default_failure,
    log_status,
)
from baseten_operator.sim.baseten.errors import SimError, bad_request
from baseten_operator.sim.baseten.lifecycle import PUSH_STATUSES, Lifecycle
from baseten_operator.sim.baseten.records import (
    ACTIVE,
    DEACTIVATING,
    DEFAULT_TEAM_ID,
    DEPLOY_FAILED,
    DEPLOYMENT_STATUSES,
    INACTIVE,
    READY_STATUSES,
    RETRYABLE_STATUSES,
    Environment,
    InstanceType,
    LogLine,
    Promotion,
)
from baseten_operator.sim.baseten.traffic import TrafficProfile


class Controls:
    def __init__(self, account: Account, lifecycle: Lifecycle) -> None:
        self._account = account
        self._lifecycle = lifecycle

    def seed_model(self, name: str, team_id: str = DEFAULT_TEAM_ID) -> dict:
        with self._account.session() as now:
            return self._account.render_model(self._account.add_model(name, now, team_id))

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
        with self._account.session() as now:
            model = self._account.model(model_id)
            dep = self._account.add_deployment(
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
            if status in PUSH_STATUSES:
                self._lifecycle.push(dep, now, from_status=status)
            elif status == ACTIVE:
                self._lifecycle.finish_serving(dep, now)
            else:
                dep.deployed = status not in RETRYABLE_STATUSES
                # A deployment seeded failed has the log line it failed with, as one that
                # got there by itself would.
                log_status(dep, status, now)
            return self._account.render_deployment(dep)

    def seed_environment(
        self,
        model_id: str,
        name: str,
        *,
        current_deployment_id: str | None = None,
        autoscaling_settings: dict[str, Any] | None = None,
        promotion_settings: dict[str, Any] | None = None,
        schedules: ScheduleEdit | None = None,
    ) -> dict:
        """An environment, serving `current_deployment_id` (which takes its autoscaling), with
        the autoscaling schedules `schedules` creates."""
        with self._account.session() as now:
            current = (
                self._account.deployment(model_id, current_deployment_id)
                if current_deployment_id
                else None
            )
            base = autoscaling_settings
            if base is None and current is not None:
                base = current.autoscaling
            env = self._account.add_environment(model_id, name, now, base, promotion_settings)
            if schedules is not None:
                autoscaling_schedules.check(env, schedules)
                edited = autoscaling_schedules.edited(env, schedules, self._account.new_id)
                env.schedule_timezone, env.schedules = edited
            if current is not None:
                env.current_deployment_id = current.id
                env.instance_type = current.instance_type
                self._lifecycle.apply_autoscaling(current, env.autoscaling, now)
            return self._account.render_environment(env, now)

    def fail_deployment(
        self, deployment_id: str, status: str = DEPLOY_FAILED, reason: str | None = None
    ) -> dict:
        """The deployment fails now: its logs get an ERROR line saying why (`reason`, else
        what that status usually means)."""
        if status not in DEPLOYMENT_STATUSES:
            raise bad_request(f"Unknown deployment status {status!r}")
        with self._account.session() as now:
            dep = self._account.any_deployment(deployment_id)
            dep.failure = reason or default_failure(status)
            self._lifecycle.cancel_pending(dep)
            self._lifecycle.set_status(dep, status, now)
            return self._account.render_deployment(dep)

    def complete_deployment(self, deployment_id: str) -> dict:
        """Skip the remaining lifecycle: the deployment is ACTIVE now."""
        with self._account.session() as now:
            dep = self._account.any_deployment(deployment_id)
            self._lifecycle.cancel_pending(dep)
            self._lifecycle.finish_serving(dep, now)
            return self._account.render_deployment(dep)

    def complete_promotion(self, model_id: str, env_name: str) -> dict:
        """The promotion in progress succeeds now (its candidate ACTIVE if it was not ready)."""
        with self._account.session() as now:
            env, promotion = self._promotion(model_id, env_name)
            candidate = self._account.deployments.get(promotion.candidate_id)
            if candidate is not None and candidate.status not in READY_STATUSES:
                self._lifecycle.cancel_pending(candidate)
                candidate.status = ACTIVE
                candidate.deployed = True
            self._lifecycle.complete_promotion(env, now)
            return self._account.render_environment(env, now)

    def fail_promotion(self, model_id: str, env_name: str) -> dict:
        """The promotion in progress fails now (a copy being built fails with it)."""
        with self._account.session() as now:
            env, promotion = self._promotion(model_id, env_name)
            candidate = self._account.deployments.get(promotion.candidate_id)
            env.promotion = None
            if (
                candidate is not None
                and promotion.candidate_is_copy
                and candidate.status not in READY_STATUSES
            ):
                self._lifecycle.cancel_pending(candidate)
                candidate.status = DEPLOY_FAILED
            return self._account.render_environment(env, now)

    def deactivate_deployment(self, deployment_id: str) -> dict:
        """Baseten's inactivity TTL: deactivates even deployments attached to an environment."""
        with self._account.session() as now:
            dep = self._account.any_deployment(deployment_id)
            if dep.status not in (INACTIVE, DEACTIVATING):
                self._lifecycle.deactivate(dep, now)
                audit_trail.record_deployment_event(
                    self._account,
                    "MODEL_DEPLOYMENT_DEACTIVATED",
                    dep,
                    now,
                    actor=audit_trail.SYSTEM,
                )
            return self._account.render_deployment(dep)

    def deployment_failure(self, deployment_id: str) -> dict:
        """Why the deployment's last load failed (None when it did not): what Baseten's
        deployment logs would say; the API's deployment has no such field."""
        with self._account.session():
            dep = self._account.any_deployment(deployment_id)
            return {"id": dep.id, "status": dep.status, "failure": dep.failure}

    def set_traffic_profile(
        self,
        deployment_id: str,
        requests_per_second: float,
        share_5xx: float = 0.0,
        share_4xx: float = 0.0,
        latency_ms: dict[str, float] | None = None,
    ) -> dict:
        """From now on the deployment would get `requests_per_second` (simulated) with all of
        its environment's traffic, that share of them answered 5xx and 4xx, with these
        latency quantiles (traffic.py); it gets its share of that."""
        profile = TrafficProfile.parse(requests_per_second, share_5xx, share_4xx, latency_ms)
        with self._account.session() as now:
            dep = self._account.any_deployment(deployment_id)
            self._account.traffic.set_profile(dep.id, now, profile)
            latency = profile.latency
            return {
                "deployment_id": dep.id,
                "requests_per_second": profile.requests_per_second,
                "share_5xx": profile.share_5xx,
                "share_4xx": profile.share_4xx,
                "latency_ms": {
                    name: round(getattr(latency, name) * 1000, 6)
                    for name in ("p50", "p90", "p95", "p99")
                },
            }

    def inject_log(
        self,
        deployment_id: str,
        message: str,
        level: str | None = "ERROR",
        replica: str | None = None,
    ) -> dict:
        """A line in the deployment's logs now (what its model code or build printed)."""
        check_level(level)
        with self._account.session() as now:
            dep = self._account.any_deployment(deployment_id)
            dep.log.append(LogLine(now, message, level, replica))
            return {"deployment_id": dep.id, "lines": len(dep.log)}

    def uploaded_files(self, deployment_id: str) -> dict[str, str]:
        with self._account.session():
            return dict(self._account.any_deployment(deployment_id).files)

    def _promotion(self, model_id: str, env_name: str) -> tuple[Environment, Promotion]:
        env = self._account.environment(model_id, env_name)
        if env.promotion is None:
            raise SimError(409, "CONFLICT", f"No promotion in progress for {env_name}")
        return env, env.promotion
