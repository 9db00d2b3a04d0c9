"""Environment settings: from the CR's spec to API payloads, and drift (docs/contract.md 3.8).

Pure functions over the CR's camelCase spec (as `api.types.to_wire` renders it) and
the API's `EnvironmentV1`. Only the fields the spec sets take part: a field the spec
leaves out is Baseten's to choose, never drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from baseten_operator.baseten.models import (
    AutoscalingSettingsV1,
    EnvironmentV1,
    PromotionSettingsV1,
    RollingDeployConfigV1,
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
    ),
)
ROLLING_DEPLOY_CONFIG = "rollingDeployConfig"


@dataclass(frozen=True)
class Change:
    field: str
    actual: Any  # None: Baseten sent no value at all, printed empty (`maxSurgePercent →25`)
    desired: Any

    def __str__(self) -> str:
        return f"{self.field} {_render(self.actual)}→{_render(self.desired)}"


@dataclass(frozen=True)
class Drift:
    autoscaling: list[Change] = field(default_factory=list)
    promotion: list[Change] = field(default_factory=list)

    @property
    def changes(self) -> list[Change]:
        return [*self.autoscaling, *self.promotion]

    def __bool__(self) -> bool:
        return bool(self.autoscaling or self.promotion)


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


def _zero_like(desired: Any) -> Any:
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
            current = _zero_like(desired)
        if current != desired:
            changes.append(Change(f.name, current, desired))
    return changes


def detect_drift(spec_env: Mapping[str, Any], actual: EnvironmentV1) -> Drift:
    """Differences between the spec's settings and the environment's, spec-set fields only."""
    spec_autoscaling = _section(spec_env, "autoscaling")
    spec_promotion = _section(spec_env, "promotionSettings")
    actual_promotion = actual.promotion_settings
    actual_rolling = actual_promotion.rolling_deploy_config if actual_promotion else None
    return Drift(
        autoscaling=_changes(spec_autoscaling, actual.autoscaling_settings, AUTOSCALING_FIELDS),
        promotion=[
            *_changes(spec_promotion, actual_promotion, PROMOTION_FIELDS),
            *_changes(
                _section(spec_promotion, ROLLING_DEPLOY_CONFIG),
                actual_rolling,
                ROLLING_DEPLOY_FIELDS,
                absent_is_empty=True,
            ),
        ],
    )


def update_payload(spec_env: Mapping[str, Any], drift: Drift) -> dict[str, Any]:
    """The one PATCH body that corrects `drift`: each drifted group with all its spec-set fields."""
    payload: dict[str, Any] = {}
    if drift.autoscaling:
        payload["autoscaling_settings"] = autoscaling_payload(_section(spec_env, "autoscaling"))
    if drift.promotion:
        payload["promotion_settings"] = promotion_payload(_section(spec_env, "promotionSettings"))
    return payload
