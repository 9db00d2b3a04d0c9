"""Render stored records as the Management API's response bodies (OpenAPI component shapes)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from baseten_operator.sim.baseten.records import (
    DEFAULT_TEAM_ID,
    DEFAULT_TEAM_NAME,
    ONE_TIME,
    SCHEDULE_OVERRIDES,
    SERVING_STATUSES,
    AutoscalingSchedule,
    Deployment,
    Environment,
    InstanceType,
    Model,
    Promotion,
    Secret,
    Team,
)

TEAM_ID = DEFAULT_TEAM_ID
TEAM_NAME = DEFAULT_TEAM_NAME
NO_BACKPRESSURE: dict[str, Any] = {"policy": None}


def timestamp(epoch: float) -> str:
    """ISO 8601 in UTC with a `Z`, as Baseten writes `created_at`."""
    text = datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="microseconds")
    return text.replace("+00:00", "Z")


def active_replicas(dep: Deployment) -> int:
    """Serving deployments run at least their minimum (one while not yet scaled to zero)."""
    if dep.status not in SERVING_STATUSES:
        return 0
    return max(int(dep.autoscaling["min_replica"]), 1)


def deployment_view(dep: Deployment, environment: str | None, is_production: bool) -> dict:
    return {
        "id": dep.id,
        "created_at": timestamp(dep.created_at),
        "name": dep.name,
        "model_id": dep.model_id,
        "is_production": is_production,
        "is_development": False,
        "status": dep.status,
        "active_replica_count": active_replicas(dep),
        "autoscaling_settings": dict(dep.autoscaling) if dep.deployed else None,
        "instance_type_name": dep.instance_type.name,
        "environment": environment,
        "labels": dict(dep.labels) if dep.labels is not None else None,
        "region": None,
        "request_backpressure_settings": dict(NO_BACKPRESSURE),
    }


def instance_type_view(instance_type: InstanceType) -> dict:
    return {
        "id": instance_type.name,
        "name": instance_type.name,
        "memory_limit_mib": instance_type.memory_mib,
        "millicpu_limit": instance_type.millicpu,
        "gpu_count": instance_type.gpu_count,
        "gpu_type": instance_type.gpu_type,
        "gpu_memory_limit_mib": instance_type.gpu_memory_mib,
    }


def promotion_view(promotion: Promotion) -> dict:
    """InProgressPromotionV1: the phase rollout.py has moved the promotion to."""
    return {
        "status": promotion.phase,
        "percent_traffic_to_new_version": promotion.percent,
        "error_message": None,
        "rolling_deploy": promotion.rolling_deploy,
    }


def schedule_view(schedule: AutoscalingSchedule) -> dict:
    """AutoscalingScheduleV1 (DAILY, HOURLY) or OneTimeAutoscalingScheduleV1."""
    view: dict[str, Any] = {
        "id": schedule.id,
        "name": schedule.name,
        "enabled": schedule.enabled,
        "cadence": schedule.cadence,
    }
    if schedule.cadence == ONE_TIME:
        assert schedule.start_at is not None and schedule.end_at is not None
        view["start_at"] = timestamp(schedule.start_at)
        view["end_at"] = timestamp(schedule.end_at)
    else:
        view["weekdays"] = list(schedule.weekdays)
        view["start_minute"] = schedule.start_minute
        view["end_minute"] = schedule.end_minute
        # An HOURLY schedule for every hour has no hours: the spec leaves them out.
        if schedule.start_hour is not None:
            view["start_hour"] = schedule.start_hour
            view["end_hour"] = schedule.end_hour
    view["autoscaling_settings"] = {key: schedule.overrides.get(key) for key in SCHEDULE_OVERRIDES}
    return view


def autoscaling_schedules_view(
    env: Environment, current: Deployment | None, in_force: AutoscalingSchedule | None
) -> dict | None:
    """EnvironmentAutoscalingSchedulesV1, or null for an environment that never had any.

    `applied_state` is what the serving deployment runs on now: its own settings, with the
    overrides of the schedule in force (`schedule_id` null: the baseline).
    """
    if env.schedule_timezone is None and not env.schedules:
        return None
    applied = None
    if current is not None:
        settings = dict(current.autoscaling)
        if in_force is not None:
            settings.update({k: v for k, v in in_force.overrides.items() if v is not None})
        applied = {
            "schedule_id": in_force.id if in_force else None,
            "autoscaling_settings": settings,
        }
    return {
        "timezone": env.schedule_timezone,
        "schedules": [schedule_view(s) for s in env.schedules],
        "applied_state": applied,
    }


def environment_view(
    env: Environment,
    current: dict | None,
    candidate: dict | None,
    in_progress: dict | None,
    schedules: dict | None,
) -> dict:
    return {
        "name": env.name,
        "created_at": timestamp(env.created_at),
        "model_id": env.model_id,
        "current_deployment": current,
        "candidate_deployment": candidate,
        "in_progress_promotion": in_progress,
        "autoscaling_settings": dict(env.autoscaling),
        "promotion_settings": {
            **env.promotion_settings,
            "rolling_deploy_config": (
                dict(env.promotion_settings["rolling_deploy_config"])
                if env.promotion_settings.get("rolling_deploy_config")
                else None
            ),
        },
        "instance_type": instance_type_view(env.instance_type or InstanceType()),
        "request_backpressure_settings": dict(NO_BACKPRESSURE),
        "autoscaling_schedules": schedules,
    }


def team_view(team: Team) -> dict:
    return {
        "id": team.id,
        "name": team.name,
        "default": team.default,
        "created_at": timestamp(team.created_at),
    }


def model_view(
    model: Model, production: Deployment | None, latest: Deployment | None, team_name: str
) -> dict:
    shown = production or latest
    return {
        "id": model.id,
        "created_at": timestamp(model.created_at),
        "name": model.name,
        "deployments_count": len(model.deployment_ids),
        "production_deployment_id": production.id if production else None,
        "development_deployment_id": None,
        "instance_type_name": (shown.instance_type if shown else InstanceType()).name,
        "team_name": team_name,
    }


def secret_view(secret: Secret, team_name: str) -> dict:
    """SecretV1: names only; the value is never returned (nor kept)."""
    return {
        "id": secret.id,
        "name": secret.name,
        "created_at": timestamp(secret.created_at),
        "team_name": team_name,
    }
