"""Autoscaling schedules: the spec's collection against Baseten's (docs/contract.md 3.8).

A spec with `autoscalingSchedule` owns the environment's whole collection: what Baseten has
and the spec lacks is deleted, what differs is replaced in place (same id), what is missing
is created. The comparison normalises what Baseten echoes back differently from what it was
sent (ids, weekday order, fields a cadence does not use, time zone offsets), so a collection
that matches is never PATCHed again.

Where the Go operator and Baseten's OpenAPI spec disagree, requests take the shape the
spec's read models show Baseten returns: a ONE_TIME schedule is sent with `start_at` and
`end_at` and no weekdays or minutes, an HOURLY one without hours (unrestricted), and
`max_scale_down_rate` is a percentage (1-50).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baseten_operator.baseten.models import AutoscalingSettingsV1

# (spec key, API key) of a window's settings, in the API's order; all eight are always sent
# (null: the environment's value applies during the window).
SCHEDULE_SETTINGS_FIELDS = (
    ("minReplicas", "min_replica"),
    ("maxReplicas", "max_replica"),
    ("autoscalingWindow", "autoscaling_window"),
    ("scaleDownDelay", "scale_down_delay"),
    ("concurrencyTarget", "concurrency_target"),
    ("targetUtilizationPercentage", "target_utilization_percentage"),
    ("targetInFlightTokens", "target_in_flight_tokens"),
    ("maxScaleDownRate", "max_scale_down_rate"),
)
ONE_TIME = "ONE_TIME"
DAILY = "DAILY"
# How a change of the time zone is reported (the Go operator's drift name).
TIMEZONE_FIELD = "scheduleTimezone"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ObservedSchedule(_Strict):
    """AutoscalingScheduleV1 or OneTimeAutoscalingScheduleV1: an unknown cadence does not
    decode, so a collection this operator cannot read is never overwritten by guesswork."""

    id: str
    name: str
    enabled: bool = True
    cadence: Literal["DAILY", "HOURLY", "ONE_TIME"]
    weekdays: list[str] | None = None
    start_hour: int | None = None
    end_hour: int | None = None
    start_minute: int | None = None
    end_minute: int | None = None
    start_at: str | None = None
    end_at: str | None = None
    # A window's overrides: the environment's settings model (null: follow the environment).
    autoscaling_settings: AutoscalingSettingsV1 | None = None


class AppliedState(_Strict):
    """AutoscalingScheduleStateV1: what the serving deployment runs on now."""

    schedule_id: str | None = None
    # The environment's settings with the window's overrides applied.
    autoscaling_settings: AutoscalingSettingsV1 | None = None


class ObservedSchedules(_Strict):
    """EnvironmentAutoscalingSchedulesV1."""

    timezone: str | None = None
    schedules: list[ObservedSchedule] = Field(default_factory=list)
    applied_state: AppliedState | None = None

    @property
    def schedule_in_force(self) -> ObservedSchedule | None:
        """The schedule whose window applies now; None: the baseline settings apply."""
        schedule_id = self.applied_state.schedule_id if self.applied_state else None
        return next((s for s in self.schedules if s.id == schedule_id), None)

    @property
    def window_applied(self) -> bool:
        return self.applied_state is not None and self.applied_state.schedule_id is not None


class UnreadableSchedules(ValueError):
    """Baseten's schedule collection did not decode (say, a cadence this operator does not
    know): never compared, never written."""


def read_schedules(raw: Any) -> ObservedSchedules:
    """The environment's `autoscaling_schedules` member (null or absent: none)."""
    if raw is None:
        return ObservedSchedules()
    try:
        return ObservedSchedules.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in detail['loc'])}: {detail['msg']}"
            for detail in error.errors()
        )
        raise UnreadableSchedules(problems) from error


@dataclass(frozen=True)
class ScheduleChange:
    """One reported change: `schedule {name} added` (changed, removed, duplicate removed)."""

    name: str
    verb: Literal["added", "changed", "removed", "duplicate removed"]

    def __str__(self) -> str:
        return f"schedule {self.name} {self.verb}"

    def desired_first(self) -> str:
        """Observe mode's order: a schedule change has no sides to swap."""
        return str(self)


@dataclass(frozen=True)
class TimezoneChange:
    """`scheduleTimezone {old}→{new}`; an absent old value is printed empty."""

    actual: str | None
    desired: str

    def __str__(self) -> str:
        return f"{TIMEZONE_FIELD} {self.actual or ''}→{self.desired}"

    def desired_first(self) -> str:
        """Observe mode's order (docs/contract.md 6)."""
        return f"{TIMEZONE_FIELD} {self.desired}→{self.actual or ''}"


@dataclass(frozen=True)
class ScheduleDrift:
    changes: list[TimezoneChange | ScheduleChange]
    # The UpdateAutoscalingScheduleSettingsV1 body that corrects them.
    request: dict[str, Any]

    def __bool__(self) -> bool:
        return bool(self.changes)


def schedule_drift(
    spec: Mapping[str, Any], observed: ObservedSchedules, now: datetime
) -> ScheduleDrift:
    """What turns Baseten's collection into the spec's `autoscalingSchedule` (camelCase).

    Reported in this order: the time zone, duplicates Baseten holds under one name, then
    the spec's schedules in spec order (added, changed), then schedules the spec lacks.
    A ONE_TIME schedule that already ended is left alone entirely (never created, changed
    or deleted): recreating a past window would be pointless churn.
    """
    changes: list[TimezoneChange | ScheduleChange] = []
    request: dict[str, Any] = {}
    desired_zone = spec.get("timezone")
    if desired_zone:
        request["timezone"] = desired_zone
        if desired_zone != observed.timezone:
            changes.append(TimezoneChange(observed.timezone, desired_zone))

    by_name: dict[str, ObservedSchedule] = {}
    deletes: list[str] = []
    for schedule in observed.schedules:
        if schedule.name in by_name:  # Baseten states no uniqueness; this operator keys by name
            deletes.append(schedule.id)
            changes.append(ScheduleChange(schedule.name, "duplicate removed"))
        else:
            by_name[schedule.name] = schedule

    upserts: list[dict[str, Any]] = []
    wanted: set[str] = set()
    for desired in spec.get("schedules") or ():
        name = desired["name"]
        wanted.add(name)
        if _expired(desired, now):
            continue
        current = by_name.get(name)
        if current is None:
            upserts.append(_upsert(desired))
            changes.append(ScheduleChange(name, "added"))
        elif _normalised_spec(desired) != _normalised_observed(current):
            upserts.append(_upsert(desired, schedule_id=current.id))
            changes.append(ScheduleChange(name, "changed"))
    for name, schedule in by_name.items():
        if name not in wanted:
            deletes.append(schedule.id)
            changes.append(ScheduleChange(name, "removed"))

    if upserts:
        request["schedules"] = upserts
    if deletes:
        request["delete_schedules"] = list(dict.fromkeys(deletes))
    return ScheduleDrift(changes, request if changes else {})


def _expired(desired: Mapping[str, Any], now: datetime) -> bool:
    if desired.get("cadence") != ONE_TIME:
        return False
    end = _instant(desired.get("endAt"))
    return isinstance(end, datetime) and end <= now


def _instant(value: Any) -> datetime | str | None:
    """An RFC 3339 time as a UTC instant (offsets compare equal); unparsable: the raw text."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _settings_request(autoscaling: Mapping[str, Any]) -> dict[str, Any]:
    return {api: autoscaling.get(spec) for spec, api in SCHEDULE_SETTINGS_FIELDS}


def _upsert(desired: Mapping[str, Any], schedule_id: str | None = None) -> dict[str, Any]:
    """AutoscalingScheduleUpsertV1 (or its ONE_TIME read shape) of one spec schedule."""
    cadence = desired["cadence"]
    body: dict[str, Any] = {}
    if schedule_id is not None:
        body["id"] = schedule_id
    body |= {"name": desired["name"], "enabled": desired.get("enabled", True), "cadence": cadence}
    if cadence == ONE_TIME:
        body |= {"start_at": desired["startAt"], "end_at": desired["endAt"]}
    else:
        body["weekdays"] = list(desired.get("weekdays") or ())
        if cadence == DAILY:
            body |= {"start_hour": desired.get("startHour"), "end_hour": desired.get("endHour")}
        body |= {
            "start_minute": desired.get("startMinute", 0),
            "end_minute": desired.get("endMinute", 0),
        }
    body["autoscaling_settings"] = _settings_request(desired.get("autoscaling") or {})
    return body


# The comparable form: (name, enabled, cadence, window, settings).
_Normalised = tuple[str, bool, str, tuple[Any, ...], tuple[Any, ...]]


def _window(
    cadence: str,
    weekdays: Sequence[str] | None,
    hours: tuple[Any, Any],
    minutes: tuple[Any, Any],
    times: tuple[Any, Any],
) -> tuple[Any, ...]:
    """The fields that define a window for its cadence, and only those."""
    if cadence == ONE_TIME:
        return tuple(_instant(value) for value in times)
    days = tuple(sorted(weekdays or ()))
    # HOURLY: the spec has no hours; Baseten may echo some, which never counts as drift.
    return (days, hours if cadence == DAILY else (None, None), minutes)


def _normalised_spec(desired: Mapping[str, Any]) -> _Normalised:
    cadence = desired["cadence"]
    autoscaling = desired.get("autoscaling") or {}
    return (
        desired["name"],
        desired.get("enabled", True),
        cadence,
        _window(
            cadence,
            desired.get("weekdays"),
            (desired.get("startHour"), desired.get("endHour")),
            (desired.get("startMinute", 0), desired.get("endMinute", 0)),
            (desired.get("startAt"), desired.get("endAt")),
        ),
        tuple(autoscaling.get(spec) for spec, _ in SCHEDULE_SETTINGS_FIELDS),
    )


def _normalised_observed(current: ObservedSchedule) -> _Normalised:
    settings = current.autoscaling_settings or AutoscalingSettingsV1()
    return (
        current.name,
        current.enabled,
        current.cadence,
        _window(
            current.cadence,
            current.weekdays,
            (current.start_hour, current.end_hour),
            (current.start_minute or 0, current.end_minute or 0),
            (current.start_at, current.end_at),
        ),
        tuple(getattr(settings, api) for _, api in SCHEDULE_SETTINGS_FIELDS),
    )
