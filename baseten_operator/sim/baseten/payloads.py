"""Request bodies the simulator accepts, as the OpenAPI spec declares them.

`extra="forbid"` where the spec says `additionalProperties: false`.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from baseten_operator.sim.baseten.autoscaling_schedules import ScheduleEdit
from baseten_operator.sim.baseten.errors import bad_request
from baseten_operator.sim.baseten.records import DAILY, ONE_TIME, AutoscalingSchedule


class AutoscalingUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_replica: int | None = Field(default=None, ge=0)
    max_replica: int | None = Field(default=None, ge=1)
    autoscaling_window: int | None = Field(default=None, ge=10, le=3600)
    scale_down_delay: int | None = Field(default=None, ge=0, le=3600)
    concurrency_target: int | None = Field(default=None, ge=1)
    target_utilization_percentage: int | None = Field(default=None, ge=1, le=100)
    # Baseten's spec gives the token target no bound: any integer is taken, as there.
    target_in_flight_tokens: int | None = None
    max_scale_down_rate: int | None = Field(default=None, ge=1, le=50)

    def changes(self) -> dict[str, Any]:
        """Only the fields sent with a value: an update leaves the others alone."""
        return self.model_dump(exclude_unset=True, exclude_none=True)


class RollingDeployConfigUpdate(BaseModel):
    rolling_deploy_strategy: Literal["REPLICA"] | None = None
    max_surge_percent: int | None = Field(default=None, ge=0, le=100)
    max_unavailable_percent: int | None = Field(default=None, ge=0, le=100)
    stabilization_time_seconds: int | None = Field(default=None, ge=0)
    replica_overhead_percent: int | None = Field(default=None, ge=0)


class PromotionSettingsUpdate(BaseModel):
    redeploy_on_promotion: bool | None = None
    rolling_deploy: bool | None = None
    promotion_cleanup_strategy: Literal["KEEP", "SCALE_TO_ZERO", "DEACTIVATE"] | None = None
    rolling_deploy_config: RollingDeployConfigUpdate | None = None
    ramp_up_while_promoting: bool | None = None
    ramp_up_duration_seconds: int | None = Field(default=None, ge=0)

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True, exclude_none=True)


class EnvironmentSettings(BaseModel):
    """The settings groups an environment is created or updated with."""

    autoscaling_settings: AutoscalingUpdate | None = None
    promotion_settings: PromotionSettingsUpdate | None = None

    def autoscaling_changes(self) -> dict[str, Any] | None:
        return self.autoscaling_settings.changes() if self.autoscaling_settings else None

    def promotion_changes(self) -> dict[str, Any] | None:
        return self.promotion_settings.changes() if self.promotion_settings else None


class CreateEnvironment(EnvironmentSettings):
    name: str = Field(min_length=1, max_length=100, pattern=r"^[a-zA-Z0-9_\-]+$")


Weekday = Literal["SUNDAY", "MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY"]
Hour = Field(default=None, ge=0, le=23)
Minute = Field(default=None, ge=0, le=59)


class ScheduleAutoscalingSettings(BaseModel):
    """A schedule's overrides: every field sent, null where the environment's value applies."""

    model_config = ConfigDict(extra="forbid")

    min_replica: int = Field(ge=0)
    max_replica: int = Field(ge=1)
    autoscaling_window: int | None = Field(ge=0)
    scale_down_delay: int | None = Field(ge=0)
    concurrency_target: int | None = Field(ge=1)
    target_utilization_percentage: int | None = Field(ge=1, le=100)
    target_in_flight_tokens: int | None  # no bound in Baseten's spec
    max_scale_down_rate: int | None = Field(ge=1, le=50)

    @model_validator(mode="after")
    def _min_within_max(self) -> ScheduleAutoscalingSettings:
        if self.min_replica > self.max_replica:
            raise ValueError("min_replica must be less than or equal to max_replica")
        return self


class ScheduleUpsert(BaseModel):
    """One schedule to create (no id) or replace (its id). DAILY and HOURLY as the spec's
    upsert declares them; ONE_TIME with start_at and end_at, as its read model shows."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, min_length=1)
    name: str = Field(min_length=1)
    enabled: bool
    cadence: Literal["DAILY", "HOURLY", "ONE_TIME"]
    weekdays: list[Weekday] | None = None
    start_hour: int | None = Hour
    start_minute: int | None = Minute
    end_hour: int | None = Hour
    end_minute: int | None = Minute
    start_at: AwareDatetime | None = None
    end_at: AwareDatetime | None = None
    autoscaling_settings: ScheduleAutoscalingSettings

    @model_validator(mode="after")
    def _fits_its_cadence(self) -> ScheduleUpsert:
        problem = self._one_time_problem() if self.cadence == ONE_TIME else self._window_problem()
        if problem is not None:
            raise ValueError(problem)
        return self

    def _one_time_problem(self) -> str | None:
        if self.start_at is None or self.end_at is None:
            return "start_at and end_at are required for ONE_TIME schedules"
        times_of_day = (self.start_hour, self.start_minute, self.end_hour, self.end_minute)
        if self.weekdays or times_of_day != (None, None, None, None):
            return "ONE_TIME schedules take start_at and end_at, not weekdays, hours or minutes"
        if self.start_at >= self.end_at:
            return "start_at must be before end_at"
        return None

    def _window_problem(self) -> str | None:
        """What is wrong with a DAILY or HOURLY schedule's days and window, if anything."""
        if self.start_at is not None or self.end_at is not None:
            return "start_at and end_at are only valid for ONE_TIME schedules"
        if not self.weekdays:
            return "weekdays are required for DAILY and HOURLY schedules"
        if len(set(self.weekdays)) < len(self.weekdays):
            return "weekdays must not repeat"
        if self.start_minute is None or self.end_minute is None:
            return "start_minute and end_minute are required for DAILY and HOURLY schedules"
        hours = (self.start_hour, self.end_hour)
        if self.cadence == DAILY:
            if None in hours:
                return "start_hour and end_hour are required for DAILY schedules"
            if (self.start_hour, self.start_minute) == (self.end_hour, self.end_minute):
                return "the window is empty: it ends when it starts"
            return None
        # HOURLY: the minute window repeats every hour, or in the hours start_hour..end_hour.
        if (hours[0] is None) != (hours[1] is None):
            return "an HOURLY schedule takes both start_hour and end_hour, or neither"
        if hours[0] is not None and hours[0] == hours[1]:
            return "start_hour and end_hour must differ (leave both out for every hour)"
        if self.start_minute == self.end_minute:
            return "the window is empty: it ends when it starts"
        return None

    def schedule(self) -> AutoscalingSchedule:
        return AutoscalingSchedule(
            id=self.id or "",
            name=self.name,
            enabled=self.enabled,
            cadence=self.cadence,
            overrides=self.autoscaling_settings.model_dump(),
            weekdays=tuple(self.weekdays or ()),
            start_hour=self.start_hour,
            start_minute=self.start_minute,
            end_hour=self.end_hour,
            end_minute=self.end_minute,
            start_at=self.start_at.timestamp() if self.start_at else None,
            end_at=self.end_at.timestamp() if self.end_at else None,
        )


class ScheduleSettingsUpdate(BaseModel):
    """A partial edit of an environment's schedules (docs/baseten-api.md)."""

    model_config = ConfigDict(extra="forbid")

    timezone: str | None = None
    schedules: list[ScheduleUpsert] | None = None
    delete_schedules: list[str] | None = None

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown timezone {value!r}: expected an IANA name such as America/Los_Angeles"
            ) from None
        return value

    def edit(self) -> ScheduleEdit:
        return ScheduleEdit(
            upserts=tuple(s.schedule() for s in self.schedules or ()),
            deletes=tuple(self.delete_schedules or ()),
            timezone_sent="timezone" in self.model_fields_set,
            timezone=self.timezone,
        )


class UpdateEnvironment(EnvironmentSettings):
    model_config = ConfigDict(extra="forbid")

    autoscaling_schedule_settings: ScheduleSettingsUpdate | None = None
    request_backpressure_settings: dict[str, Any] | None = None

    def schedule_edit(self) -> ScheduleEdit | None:
        settings = self.autoscaling_schedule_settings
        return settings.edit() if settings else None


class Promote(BaseModel):
    deployment_id: str = Field(min_length=1)
    scale_down_previous_deployment: bool = True
    preserve_env_instance_type: bool = True


# The spec bounds neither; these bound what the simulator stores and audits, far above
# what the operator sends (a name of at most 255 characters, a value of at most 64 KiB).
SECRET_NAME_MAX = 1024
SECRET_VALUE_MAX = 1024 * 1024


class UpsertSecret(BaseModel):
    """UpsertSecretRequestV1. The spec gives no rules for names beyond a string (an empty
    one names nothing); the value is a SecretStr, so no repr or error shows it."""

    name: str = Field(min_length=1, max_length=SECRET_NAME_MAX)
    value: SecretStr = Field(max_length=SECRET_VALUE_MAX)


Body = TypeVar("Body", bound=BaseModel)


def parse(model: type[Body], data: Any, rejected: str, *, echo_input: bool = True) -> Body:
    """`data` as `model`, or a 400 whose message is `rejected` and the first problem found
    (all of them in the details, with the input that failed unless `echo_input` is off)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = exc.errors(include_url=False, include_context=False, include_input=echo_input)
        first = problems[0]
        where = ".".join(str(part) for part in first["loc"])
        what = str(first["msg"]).removeprefix("Value error, ")
        raise bad_request(
            f"{rejected}: {where}: {what}" if where else f"{rejected}: {what}", problems
        ) from exc
