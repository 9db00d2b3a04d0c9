"""An environment's autoscaling schedules: editing the collection, and which schedule's window
is in force at a given time.

An edit (`autoscaling_schedule_settings` of an environment update) replaces the schedules it
names by id, creates those it sends without one, deletes the ids it lists, and sets the
timezone if it sends one (null only when no schedule remains). The first edit that creates
schedules without a timezone gets UTC (docs/baseten-api.md, autoscaling schedules).

Windows follow the schedule timezone's wall clock (zoneinfo): a DAILY window that ends
earlier in the day than it starts runs past midnight, an HOURLY one whose end minute comes
first runs into the next hour. When several enabled windows cover the same moment, the
schedule created first wins.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from baseten_operator.sim.baseten.errors import bad_request
from baseten_operator.sim.baseten.records import (
    DAILY,
    HOURLY,
    ONE_TIME,
    WEEKDAYS,
    AutoscalingSchedule,
    Environment,
)

DEFAULT_TIMEZONE = "UTC"


@dataclass(frozen=True)
class ScheduleEdit:
    upserts: tuple[AutoscalingSchedule, ...] = ()  # with an id: replace it; without: create
    deletes: tuple[str, ...] = ()
    timezone_sent: bool = False  # an edit that leaves the timezone out keeps it
    timezone: str | None = None


Collection = tuple[str | None, tuple[AutoscalingSchedule, ...]]


def check(env: Environment, edit: ScheduleEdit) -> None:
    """400 for an edit that does not fit the environment's schedules as they are."""
    known = {s.id for s in env.schedules}
    replaced = [s.id for s in edit.upserts if s.id]
    for schedule_id in [*replaced, *edit.deletes]:
        if schedule_id not in known:
            raise bad_request(
                f"Environment {env.name} has no autoscaling schedule with id {schedule_id!r}"
            )
    twice = sorted({i for i in replaced if replaced.count(i) > 1})
    if twice:
        raise bad_request(f"Autoscaling schedule {twice[0]!r} is sent twice")
    both = sorted(set(replaced) & set(edit.deletes))
    if both:
        raise bad_request(f"Autoscaling schedule {both[0]!r} is both replaced and deleted")
    remaining = edited(env, edit, lambda: "")[1]
    if edit.timezone_sent and edit.timezone is None and remaining:
        raise bad_request("timezone may be null only when every autoscaling schedule is deleted")


def edited(env: Environment, edit: ScheduleEdit, new_id: Callable[[], str]) -> Collection:
    """(timezone, schedules) after `edit`; ids no longer there (deleted meanwhile) are skipped."""
    replacements = {s.id: s for s in edit.upserts if s.id}
    deleted = set(edit.deletes)
    kept = tuple(replacements.get(s.id, s) for s in env.schedules if s.id not in deleted)
    created = tuple(dataclasses.replace(s, id=new_id()) for s in edit.upserts if not s.id)
    schedules = kept + created
    timezone = edit.timezone if edit.timezone_sent else env.schedule_timezone
    if timezone is None and schedules:
        timezone = DEFAULT_TIMEZONE
    return timezone, schedules


def changes(env: Environment, edit: ScheduleEdit) -> bool:
    return edited(env, edit, lambda: "") != (env.schedule_timezone, env.schedules)


def in_force(env: Environment, now: float) -> AutoscalingSchedule | None:
    """The enabled schedule whose window covers `now` (epoch seconds); None: the baseline."""
    if not env.schedules:
        return None
    zone = ZoneInfo(env.schedule_timezone or DEFAULT_TIMEZONE)
    return next((s for s in env.schedules if s.enabled and _covers(s, now, zone)), None)


def _covers(schedule: AutoscalingSchedule, now: float, zone: ZoneInfo) -> bool:
    if schedule.cadence == ONE_TIME:
        assert schedule.start_at is not None and schedule.end_at is not None
        return schedule.start_at <= now < schedule.end_at
    return any(start <= now < end for start, end in _recent_windows(schedule, now, zone))


def _recent_windows(
    schedule: AutoscalingSchedule, now: float, zone: ZoneInfo
) -> Iterator[tuple[float, float]]:
    """The windows (epoch start, end) that began in the current or the previous day (DAILY)
    or hour (HOURLY), local time: the only ones that can still be open."""
    local = datetime.fromtimestamp(now, zone).replace(tzinfo=None)
    if schedule.cadence == DAILY:
        assert schedule.start_hour is not None and schedule.end_hour is not None
        for back in (1, 0):
            day = local.date() - timedelta(days=back)
            start = datetime.combine(day, time(schedule.start_hour, schedule.start_minute or 0))
            end = datetime.combine(day, time(schedule.end_hour, schedule.end_minute or 0))
            if _on_weekday(schedule, start):
                yield _epoch(start, zone), _epoch(_after(start, end, timedelta(days=1)), zone)
    elif schedule.cadence == HOURLY:
        hour = local.replace(minute=0, second=0, microsecond=0)
        for back in (1, 0):
            top = hour - timedelta(hours=back)
            start = top + timedelta(minutes=schedule.start_minute or 0)
            end = top + timedelta(minutes=schedule.end_minute or 0)
            if _on_weekday(schedule, start) and _in_hours(schedule, top.hour):
                yield _epoch(start, zone), _epoch(_after(start, end, timedelta(hours=1)), zone)


def _on_weekday(schedule: AutoscalingSchedule, start: datetime) -> bool:
    """A window belongs to the weekday it starts on."""
    return WEEKDAYS[start.weekday()] in schedule.weekdays


def _in_hours(schedule: AutoscalingSchedule, hour: int) -> bool:
    """An HOURLY schedule with hours repeats from start_hour up to (not including) end_hour."""
    if schedule.start_hour is None or schedule.end_hour is None:
        return True
    if schedule.start_hour < schedule.end_hour:
        return schedule.start_hour <= hour < schedule.end_hour
    return hour >= schedule.start_hour or hour < schedule.end_hour


def _after(start: datetime, end: datetime, period: timedelta) -> datetime:
    """A window's end, a period later when its time comes before the start's."""
    return end if end > start else end + period


def _epoch(local: datetime, zone: ZoneInfo) -> float:
    return local.replace(tzinfo=zone).timestamp()
