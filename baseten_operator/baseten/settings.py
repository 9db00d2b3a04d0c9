"""Environment settings: from the CR's spec to API payloads, and drift (docs/contract.md 3.8).

Pure functions over the CR's camelCase spec (as `api.types.to_wire` renders it) and
the API's `EnvironmentV1`. Only the fields the spec sets take part: a field the spec
leaves out is Baseten's to choose, never drift. The autoscaling schedules are compared by
baseten/schedules.py, and only when the spec has `autoscalingSchedule`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from baseten_operator.baseten.models import (
    AutoscalingSettingsV1,
    EnvironmentV1,
    PromotionSettingsV1,
    RollingDeployConfigV1,
)
from baseten_operator.baseten.schedules import (
    ScheduleChange,
    ScheduleDrift,
    TimezoneChange,
    UnreadableSchedules,
    read_schedules,
    schedule_drift,
)


@dataclass(frozen=True)
class _Field:
    spec: str  # key in the CR spec
    api: str  # key in the API payload
    name: str  # how a change to it is reported (the Go operator's name)


def _fields(*pairs: tuple[str, str]) -> tuple[_Field, ...]:
    return tuple(_Field(spec, api, spec) for spec, api in pairs)


# Orders are the report order of docs/contract.md 3.8.
# Names are the Go operator's (its users' alerts match them): the CR's, but for two.
AUTOSCALING_FIELDS = (
    *_fields(
        ("minReplicas", "min_replica"),
        ("maxReplicas", "max_replica"),
        ("concurrencyTarget", "concurrency_target"),
        ("autoscalingWindow", "autoscaling_window"),
        ("scaleDownDelay", "scale_down_delay"),
    ),
    _Field("targetUtilizationPercentage", "target_utilization_percentage", "targetUtilization"),
    # Not in the Go operator: named as the CR names them.
    *_fields(
        ("targetInFlightTokens", "target_in_flight_tokens"),
        ("maxScaleDownRate", "max_scale_down_rate"),
    ),
)
PROMOTION_FIELDS = _fields(
    ("redeployOnPromotion", "redeploy_on_promotion"),
    ("rollingDeploy", "rolling_deploy"),
    ("rampUpWhilePromoting", "ramp_up_while_promoting"),
    ("rampUpDurationSeconds", "ramp_up_duration_seconds"),
    ("promotionCleanupStrategy", "promotion_cleanup_strategy"),
)
# Nested under promotionSettings.rollingDeployConfig / promotion_settings.rolling_deploy_config.
ROLLING_DEPLOY_FIELDS = (
    _Field("strategy", "rolling_deploy_strategy", "rollingDeployStrategy"),
    *_fields(
        ("maxSurgePercent", "max_surge_percent"),
        ("maxUnavailablePercent", "max_unavailable_percent"),
        ("stabilizationTimeSeconds", "stabilization_time_seconds"),
        ("replicaOverheadPercent", "replica_overhead_percent"),  # not in the Go operator
    ),
)
ROLLING_DEPLOY_CONFIG = "rollingDeployConfig"
AUTOSCALING_SCHEDULE = "autoscalingSchedule"


@dataclass(frozen=True)
class Change:
    field: str
    actual: Any  # None: Baseten sent no value at all, printed empty (`maxSurgePercent →25`)
    desired: Any

    def __str__(self) -> str:
        return f"{self.field} {_render(self.actual)}→{_render(self.desired)}"

    def desired_first(self) -> str:
        """Observe mode's order (docs/contract.md 6): what the spec wants first."""
        return f"{self.field} {_render(self.desired)}→{_render(self.actual)}"


# A change as statuses and Events report it: a setting, the schedule time zone, a schedule.
Reported = Change | TimezoneChange | ScheduleChange


def _no_schedule_drift() -> ScheduleDrift:
    return ScheduleDrift([], {})


@dataclass(frozen=True)
class Drift:
    autoscaling: list[Change] = field(default_factory=list)
    promotion: list[Change] = field(default_factory=list)
    schedules: ScheduleDrift = field(default_factory=_no_schedule_drift)
    # Set when the spec manages the schedules and Baseten's collection did not decode:
    # nothing of it can be compared, nor can the baseline hold be known.
    unreadable_schedules: UnreadableSchedules | None = None

    @property
    def changes(self) -> list[Reported]:
        """Every change, in the report order of docs/contract.md 3.8."""
        return [*self.autoscaling, *self.promotion, *self.schedules.changes]

    def __bool__(self) -> bool:
        return bool(self.autoscaling or self.promotion or self.schedules)


def _render(value: Any) -> str:
    """Values as the Go operator printed them: booleans lower-case, nothing empty, the rest
    plainly."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _section(spec: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    value = spec.get(key) if spec else None
    return value if isinstance(value, Mapping) else {}


def _payload(spec: Mapping[str, Any], fields: tuple[_Field, ...]) -> dict[str, Any]:
    return {f.api: spec[f.spec] for f in fields if spec.get(f.spec) is not None}


def autoscaling_payload(spec_autoscaling: Mapping[str, Any]) -> dict[str, Any]:
    """The spec's autoscaling fields as the API's UpdateAutoscalingSettingsV1."""
    return _payload(spec_autoscaling, AUTOSCALING_FIELDS)


def promotion_payload(spec_promotion: Mapping[str, Any]) -> dict[str, Any]:
    """The spec's environment-level promotion fields as the API's UpdatePromotionSettingsV1.

    scaleDownPreviousDeployment and preserveInstanceType are promote-time flags, not
    environment settings, so they never appear here.
    """
    payload = _payload(spec_promotion, PROMOTION_FIELDS)
    rolling = _payload(_section(spec_promotion, ROLLING_DEPLOY_CONFIG), ROLLING_DEPLOY_FIELDS)
    if rolling:
        payload["rolling_deploy_config"] = rolling
    return payload


def zero_like(desired: Any) -> Any:
    """What a value the API left out counts as: 0, false or "" (docs/contract.md 3.8)."""
    if isinstance(desired, bool):
        return False
    if isinstance(desired, int | float):
        return 0
    if isinstance(desired, str):
        return ""
    return None


def _changes(
    spec: Mapping[str, Any],
    actual: AutoscalingSettingsV1 | PromotionSettingsV1 | RollingDeployConfigV1 | None,
    fields: tuple[_Field, ...],
    *,
    absent_is_empty: bool = False,
) -> list[Change]:
    """`absent_is_empty`: with no `actual` section at all, the old value is printed empty,
    not as a zero (how the Go operator reports a missing rolling deploy config)."""
    changes = []
    for f in fields:
        desired = spec.get(f.spec)
        if desired is None:
            continue
        if actual is None and absent_is_empty:
            changes.append(Change(f.name, None, desired))
            continue
        current = getattr(actual, f.api, None) if actual is not None else None
        if current is None:
            current = zero_like(desired)
        if current != desired:
            changes.append(Change(f.name, current, desired))
    return changes


def _schedule_drift(
    spec_env: Mapping[str, Any], actual: EnvironmentV1, now: float
) -> tuple[ScheduleDrift, bool, UnreadableSchedules | None]:
    """(the schedules' drift, whether the baseline is held, why the collection is unreadable)."""
    spec_schedules = spec_env.get(AUTOSCALING_SCHEDULE)
    if not isinstance(spec_schedules, Mapping):
        return _no_schedule_drift(), False, None
    try:
        observed = read_schedules(actual.autoscaling_schedules)
    except UnreadableSchedules as error:
        # Whether a window holds the baseline is unknown too: fail closed, hold it.
        return _no_schedule_drift(), True, error
    drift = schedule_drift(spec_schedules, observed, datetime.fromtimestamp(now, UTC))
    return drift, observed.window_applied, None


def detect_drift(spec_env: Mapping[str, Any], actual: EnvironmentV1, now: float) -> Drift:
    """Differences between the spec's settings and the environment's, spec-set fields only.

    With `autoscalingSchedule` in the spec the schedules are compared too (`now`, the
    pass's clock in epoch seconds, decides which ONE_TIME windows have ended), and while
    one of their windows is applied the baseline autoscaling is the window's to change,
    not drift (the baseline hold). Without it, Baseten's collection is never read: one it
    cannot decode is none of the spec's business, and a window Baseten applies holds
    nothing.
    """
    spec_autoscaling = _section(spec_env, "autoscaling")
    spec_promotion = _section(spec_env, "promotionSettings")
    actual_promotion = actual.promotion_settings
    actual_rolling = actual_promotion.rolling_deploy_config if actual_promotion else None
    schedules, hold, unreadable = _schedule_drift(spec_env, actual, now)
    return Drift(
        autoscaling=(
            []
            if hold
            else _changes(spec_autoscaling, actual.autoscaling_settings, AUTOSCALING_FIELDS)
        ),
        promotion=[
            *_changes(spec_promotion, actual_promotion, PROMOTION_FIELDS),
            *_changes(
                _section(spec_promotion, ROLLING_DEPLOY_CONFIG),
                actual_rolling,
                ROLLING_DEPLOY_FIELDS,
                absent_is_empty=True,
            ),
        ],
        schedules=schedules,
        unreadable_schedules=unreadable,
    )


def update_payload(spec_env: Mapping[str, Any], drift: Drift) -> dict[str, Any]:
    """The one PATCH body that corrects `drift`: the settings groups each with all their
    spec-set fields, the schedules as the upserts and deletes that correct them."""
    payload: dict[str, Any] = {}
    if drift.autoscaling:
        payload["autoscaling_settings"] = autoscaling_payload(_section(spec_env, "autoscaling"))
    if drift.promotion:
        payload["promotion_settings"] = promotion_payload(_section(spec_env, "promotionSettings"))
    if drift.schedules:
        payload["autoscaling_schedule_settings"] = drift.schedules.request
    return payload
