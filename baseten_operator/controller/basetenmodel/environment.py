"""The target environment: read it, create it, correct its settings (docs/contract.md 3.8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from baseten_operator.api.base import to_wire
from baseten_operator.api.constants import FAILED, PENDING, EventReason
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import AutoscalingSettingsV1, DeploymentV1, EnvironmentV1
from baseten_operator.baseten.schedules import UnreadableSchedules, read_schedules
from baseten_operator.baseten.settings import (
    Drift,
    Reported,
    autoscaling_payload,
    detect_drift,
    promotion_payload,
    update_payload,
)
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.basetenmodel.model_id import raise_if_model_gone
from baseten_operator.controller.basetenmodel.telemetry import count_drift_correction
from baseten_operator.controller.shared.endings import ReconcileError, RequeueAfter


@dataclass(frozen=True)
class _Group:
    """A settings group of the PATCH: how its Events and the drift metric name it."""

    name: str
    updated: EventReason
    failed: EventReason
    metric: str


_AUTOSCALING = _Group(
    "autoscaling",
    EventReason.AUTOSCALING_UPDATED,
    EventReason.AUTOSCALING_UPDATE_FAILED,
    "autoscaling",
)
_PROMOTION = _Group(
    "promotion settings",
    EventReason.PROMOTION_SETTINGS_UPDATED,
    EventReason.PROMOTION_SETTINGS_UPDATE_FAILED,
    "promotion",
)
_SCHEDULES = _Group(
    "autoscaling schedules",
    EventReason.AUTOSCALING_SCHEDULE_UPDATED,
    EventReason.AUTOSCALING_SCHEDULE_UPDATE_FAILED,
    "schedules",
)


def spec_environment(p: Pass) -> dict[str, Any]:
    """The spec's environment as camelCase (the settings module's input)."""
    return to_wire(p.spec.environment)


def get_environment(p: Pass, model_id: str) -> EnvironmentV1 | None:
    """The environment, or None when Baseten has none of that name."""
    try:
        return p.deps.baseten.get_environment(model_id, p.env)
    except BasetenAPIError as error:
        if error.is_not_found:
            return None
        message = messages.environment_check_failed(p.env, error)
        p.report(FAILED, message)
        raise ReconcileError(message) from error


def ensure_environment(p: Pass, model_id: str) -> EnvironmentV1:
    """Step 8: the environment as it stands, or the pass ends after creating it."""
    environment = get_environment(p, model_id)
    if environment is None:
        _create(p, model_id)
    return environment


def _create(p: Pass, model_id: str) -> NoReturn:
    # CreateEnvironmentRequestV1 takes no autoscaling schedules: the next pass's drift
    # correction creates the spec's.
    spec_env = spec_environment(p)
    try:
        p.deps.baseten.create_environment(
            model_id,
            p.env,
            autoscaling_payload(spec_env.get("autoscaling") or {}) or None,
            promotion_payload(spec_env.get("promotionSettings") or {}) or None,
        )
    except BasetenAPIError as error:
        raise_if_model_gone(error)
        message = messages.environment_create_failed(p.env, error)
        p.report(FAILED, message)
        p.event(
            EventReason.ENVIRONMENT_CREATE_FAILED,
            messages.environment_create_failed_event(p.env, error),
        )
        raise ReconcileError(message) from error
    p.event(EventReason.ENVIRONMENT_CREATED, messages.environment_created_event(p.env))
    p.report(PENDING, messages.environment_created(p.env))
    raise RequeueAfter(p.deps.timing.settings_applied)


def scaling_in_force(
    environment: EnvironmentV1,
) -> tuple[AutoscalingSettingsV1 | None, str | None]:
    """The autoscaling the environment runs on now, and the schedule whose window it comes
    from (None: the baseline).

    Whenever Baseten reports a window in force, whether or not the spec manages the
    schedules: the message says what serves. A collection that does not decode shows the
    baseline (the spec's own passes say it is unreadable when it is theirs).
    """
    baseline = environment.autoscaling_settings
    try:
        observed = read_schedules(environment.autoscaling_schedules)
    except UnreadableSchedules:
        return baseline, None
    schedule = observed.schedule_in_force
    if schedule is None or observed.applied_state is None:
        return baseline, None
    return observed.applied_state.autoscaling_settings or baseline, schedule.name


def steady_of(p: Pass, current: DeploymentV1, environment: EnvironmentV1) -> str:
    """The steady message of the environment's current deployment (3.10)."""
    autoscaling, schedule = scaling_in_force(environment)
    return messages.steady(current, p.env, autoscaling, schedule)


def steady_message(p: Pass, environment: EnvironmentV1) -> str | None:
    """The steady message, if the environment has a current deployment."""
    current = environment.current_deployment
    return steady_of(p, current, environment) if current is not None else None


def promotion_traffic(environment: EnvironmentV1) -> int | None:
    """The percentage of traffic a ramping promotion sends the environment's candidate,
    when Baseten says (`in_progress_promotion`)."""
    promotion = environment.in_progress_promotion
    return promotion.percent_traffic_to_new_version if promotion is not None else None


def correct_drift(p: Pass, model_id: str, environment: EnvironmentV1, steady: str | None) -> None:
    """One PATCH with every drifted group; the pass ends when anything drifted."""
    spec_env = spec_environment(p)
    drift = detect_drift(spec_env, environment, p.deps.clock.now())
    if drift.unreadable_schedules is not None:
        _schedules_unreadable(p, drift.unreadable_schedules)
    if not drift:
        return
    payload = update_payload(spec_env, drift)
    drifted = _drifted_groups(drift)
    try:
        p.deps.baseten.update_environment(
            model_id,
            p.env,
            payload.get("autoscaling_settings"),
            payload.get("promotion_settings"),
            payload.get("autoscaling_schedule_settings"),
        )
    except BasetenAPIError as error:
        raise_if_model_gone(error)
        for group, _ in drifted:
            p.event(group.failed, messages.update_group_failed_event(group.name, p.env, error))
        if [group for group, _ in drifted] == [_SCHEDULES]:
            message = messages.update_schedules_failed(steady, p.env, error)
        else:
            message = messages.update_settings_failed(steady, p.env, error)
        p.report(FAILED, message)
        raise ReconcileError(message) from error
    for group, changes in drifted:
        p.event(group.updated, messages.updating_group_event(group.name, changes))
        count_drift_correction(group.metric)
    p.report(PENDING, messages.updating_settings(steady, drift.changes))
    # The PATCH applies asynchronously: the next pass re-reads the environment.
    raise RequeueAfter(p.deps.timing.settings_applied)


def _schedules_unreadable(p: Pass, error: UnreadableSchedules) -> NoReturn:
    """The spec owns a collection this operator cannot read: never overwrite it by
    guesswork, and write none of the other groups either (one PATCH or none)."""
    message = messages.schedules_unreadable(p.env, error)
    p.report(FAILED, message)
    p.event(
        EventReason.AUTOSCALING_SCHEDULE_UPDATE_FAILED,
        messages.schedules_unreadable_event(p.env, error),
    )
    raise ReconcileError(message) from error


def _drifted_groups(drift: Drift) -> list[tuple[_Group, list[Reported]]]:
    groups: list[tuple[_Group, list[Reported]]] = [
        (_AUTOSCALING, list(drift.autoscaling)),
        (_PROMOTION, list(drift.promotion)),
        (_SCHEDULES, list(drift.schedules.changes)),
    ]
    return [(group, changes) for group, changes in groups if changes]
