"""Baseten's audit log of a model: who changed what (AuditLogEntryV1), as the simulator
records it on every change it applies. (audit.py is something else: the simulator's own
record of the requests it answered, for tests.)

The actor is the request's: a REST call's API key (its prefix and name, source API), a UI
change made through the control API (a user's email, source UI), or Baseten itself
(source SYSTEM: the inactivity TTL). A change applied later than asked (an environment
update) keeps the actor of the request that asked for it.

Recorded (event_data as the spec shapes each event type): ENVIRONMENT_CREATED, _UPDATED
(settings after and before, and the schedules' changes), _DELETED;
MODEL_DEPLOYMENT_AUTOSCALING_SETTINGS_CHANGED; MODEL_DEPLOYED; MODEL_DEPLOYMENT_PROMOTED (when
a promotion starts); MODEL_PROMOTION_CONTROL_ACTION (cancel, pause, resume, force-cancel,
force-roll-forward); MODEL_DEPLOYMENT_ACTIVATED, _DEACTIVATED, _RETRIED, _DELETED.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from baseten_operator.sim.baseten.account import Account
from baseten_operator.sim.baseten.records import (
    DEFAULT_ROLLING_DEPLOY_CONFIG,
    ONE_TIME,
    SCHEDULE_OVERRIDES,
    Actor,
    AuditEntry,
    AutoscalingSchedule,
    Deployment,
    Environment,
    Model,
)
from baseten_operator.sim.baseten.views import timestamp

SYSTEM = Actor("BASETEN_SYSTEM", "SYSTEM")
DEFAULT_UI_EMAIL = "ui-user@example.com"

# Who the request being served acts as. A context variable rather than an argument: it
# belongs to the request, and threading it through every route and engine operation
# would add a parameter to twenty signatures that only the audit log reads.
_acting: ContextVar[Actor] = ContextVar("baseten_sim_actor", default=SYSTEM)


@contextmanager
def acting_as(actor: Actor) -> Iterator[None]:
    token = _acting.set(actor)
    try:
        yield
    finally:
        _acting.reset(token)


def current_actor() -> Actor:
    return _acting.get()


def key_prefix(key: str) -> str:
    """How Baseten shows an API key: the part before its dot (`prefix.secret`), else
    (*inferred*) its first eight characters."""
    head, dot, _ = key.partition(".")
    return head if dot else key[:8]


def api_key_actor(key: str, name: str) -> Actor:
    return Actor("API_KEY", "API", api_key_prefix=key_prefix(key), api_key_name=name)


def ui_actor(email: str = DEFAULT_UI_EMAIL) -> Actor:
    return Actor("USER", "UI", email=email)


def record(
    account: Account,
    model: Model,
    event_type: str,
    data: dict[str, Any],
    at: float,
    *,
    actor: Actor | None = None,
    environment: str | None = None,
    deployment_id: str | None = None,
) -> None:
    """Append an entry to the model's audit log (`actor`: the request's by default)."""
    seq = len(model.audit_log)
    model.audit_log.append(
        AuditEntry(
            seq=seq,
            id=f"{model.id}-audit-{seq}",
            created=at,
            event_type=event_type,
            event_data={"event_type": event_type, **data},
            actor=actor or current_actor(),
            environment=environment,
            deployment_id=deployment_id,
        )
    )


def record_deployment_event(
    account: Account,
    event_type: str,
    dep: Deployment,
    at: float,
    *,
    actor: Actor | None = None,
    **data: Any,
) -> None:
    """An event about one deployment: its model and its own ids and names, and `data`."""
    model = account.models[dep.model_id]
    details = {**of_deployment(model, dep), **data}
    record(account, model, event_type, details, at, actor=actor, deployment_id=dep.id)


# ----------------------------------------------------------------- event data


def of_deployment(model: Model, dep: Deployment) -> dict[str, Any]:
    return {
        "model_id": model.id,
        "model_name": model.name,
        "deployment_id": dep.id,
        "deployment_name": dep.name,
    }


def autoscaling(settings: dict[str, Any]) -> dict[str, Any]:
    """AuditLogEventAutoscalingSettingsV1's fields."""
    return {key: settings.get(key) for key in SCHEDULE_OVERRIDES}


def environment_settings(env: Environment) -> dict[str, Any]:
    """AuditLogEventEnvironmentSettingsV1: autoscaling and promotion settings, flat."""
    promotion = env.promotion_settings
    rolling = promotion.get("rolling_deploy_config") or DEFAULT_ROLLING_DEPLOY_CONFIG
    return {
        **autoscaling(env.autoscaling),
        "redeploy_on_promotion": promotion.get("redeploy_on_promotion"),
        "rolling_deploy": promotion.get("rolling_deploy"),
        "rolling_deploy_strategy": rolling.get("rolling_deploy_strategy"),
        "max_unavailable_percent": rolling.get("max_unavailable_percent"),
        "max_surge_percent": rolling.get("max_surge_percent"),
        "stabilization_time_seconds": rolling.get("stabilization_time_seconds"),
        "replica_overhead_percent": rolling.get("replica_overhead_percent"),
        "promotion_cleanup_strategy": promotion.get("promotion_cleanup_strategy"),
        "ramp_up_while_promoting": promotion.get("ramp_up_while_promoting"),
        "ramp_up_duration_seconds": promotion.get("ramp_up_duration_seconds"),
        "ramp_up_step_size": None,
    }


def of_environment(model: Model, env: Environment) -> dict[str, Any]:
    """The fields of ENVIRONMENT_CREATED (and, with more, ENVIRONMENT_UPDATED)."""
    return {
        **environment_settings(env),
        "model_id": model.id,
        "model_name": model.name,
        "environment_name": env.name,
        "deployment_type": None,
    }


def schedule_changes(
    before: tuple[AutoscalingSchedule, ...],
    after: tuple[AutoscalingSchedule, ...],
    timezone_before: str | None,
    timezone_after: str | None,
) -> list[dict[str, Any]]:
    """What an edit did to each schedule (AuditLogEventAutoscalingScheduleChangeV1)."""
    old = {s.id: s for s in before}
    new = {s.id: s for s in after}
    changes = []
    for schedule_id in [*old, *(i for i in new if i not in old)]:
        previous = old.get(schedule_id)
        current = new.get(schedule_id)
        was = _schedule(previous, timezone_before) if previous else None
        now = _schedule(current, timezone_after) if current else None
        if previous is None:
            action = "CREATED"
        elif current is None:
            action = "DELETED"
        else:
            action = "UNCHANGED" if was == now else "UPDATED"
        changes.append(
            {
                "action": action,
                "schedule_id": schedule_id,
                "previous": None if action == "UNCHANGED" else was,
                "current": now,
            }
        )
    return changes


def _schedule(schedule: AutoscalingSchedule, timezone: str | None) -> dict[str, Any]:
    """AuditLogEventAutoscalingScheduleSettingsV1."""
    one_time = schedule.cadence == ONE_TIME
    return {
        **autoscaling(schedule.overrides),
        "schedule_name": schedule.name,
        "enabled": schedule.enabled,
        "cadence": schedule.cadence,
        "timezone": timezone or "UTC",
        "weekdays": None if one_time else list(schedule.weekdays),
        "start_hour": schedule.start_hour,
        "start_minute": schedule.start_minute,
        "end_hour": schedule.end_hour,
        "end_minute": schedule.end_minute,
        "start_at": timestamp(schedule.start_at) if schedule.start_at is not None else None,
        "end_at": timestamp(schedule.end_at) if schedule.end_at is not None else None,
    }
