"""The target environment: read it, create it, correct its settings (docs/contract.md 3.8)."""

from __future__ import annotations

from typing import Any, NoReturn

from baseten_operator.api.constants import FAILED, PENDING, EventReason
from baseten_operator.api.types import to_wire
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import EnvironmentV1
from baseten_operator.baseten.settings import (
    Drift,
    autoscaling_payload,
    detect_drift,
    promotion_payload,
    update_payload,
)
from baseten_operator.controller import messages
from baseten_operator.controller.context import Pass
from baseten_operator.controller.endings import ReconcileError, RequeueAfter, raise_if_model_gone
from baseten_operator.controller.telemetry import count_drift_correction

# (settings group as events and metrics name it, update event, failure event)
_GROUPS = (
    ("autoscaling", EventReason.AUTOSCALING_UPDATED, EventReason.AUTOSCALING_UPDATE_FAILED),
    (
        "promotion settings",
        EventReason.PROMOTION_SETTINGS_UPDATED,
        EventReason.PROMOTION_SETTINGS_UPDATE_FAILED,
    ),
)
_METRIC_GROUPS = {"autoscaling": "autoscaling", "promotion settings": "promotion"}


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


def correct_drift(p: Pass, model_id: str, environment: EnvironmentV1, steady: str | None) -> None:
    """One PATCH with every drifted group; the pass ends when anything drifted."""
    spec_env = spec_environment(p)
    drift = detect_drift(spec_env, environment)
    if not drift:
        return
    payload = update_payload(spec_env, drift)
    try:
        p.deps.baseten.update_environment(
            model_id,
            p.env,
            payload.get("autoscaling_settings"),
            payload.get("promotion_settings"),
        )
    except BasetenAPIError as error:
        raise_if_model_gone(error)
        for group, _, failed_reason in _drifted_groups(drift):
            p.event(failed_reason, messages.update_group_failed_event(group, p.env, error))
        message = messages.update_settings_failed(steady, p.env, error)
        p.report(FAILED, message)
        raise ReconcileError(message) from error
    for group, updated_reason, _ in _drifted_groups(drift):
        changes = drift.autoscaling if group == "autoscaling" else drift.promotion
        p.event(updated_reason, messages.updating_group_event(group, changes))
        count_drift_correction(_METRIC_GROUPS[group])
    p.report(PENDING, messages.updating_settings(steady, drift.changes))
    # The PATCH applies asynchronously: the next pass re-reads the environment.
    raise RequeueAfter(p.deps.timing.settings_applied)


def _drifted_groups(drift: Drift) -> list[tuple[str, EventReason, EventReason]]:
    drifted = {"autoscaling": bool(drift.autoscaling), "promotion settings": bool(drift.promotion)}
    return [group for group in _GROUPS if drifted[group[0]]]
