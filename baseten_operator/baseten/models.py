"""Response models of the Baseten management API (docs/baseten-api.md).

Field names are the API's snake_case. Unknown fields are ignored, statuses are plain
strings (a status Baseten adds tomorrow must not break parsing), and every field the
API might omit has a default.

Absent is not zero: every field a destructive or irreversible decision rests on (replica
counts, the production/development flags, acknowledgements) defaults to None, meaning
"Baseten did not say", and the deciding code refuses to act on None. Where the API's
`null` is itself meaningful (a deployment's `environment`, an environment's
`current_deployment`), `stated()` tells an explicit null from a missing member.
Settings fields default to None too: drift detection treats "absent" as 0/false/"" and
must be able to tell absence from an explicit value.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StrictBool,
    TypeAdapter,
    ValidationError,
)

_DATETIME: TypeAdapter[datetime] = TypeAdapter(datetime)


def _lenient_datetime(value: Any) -> datetime | None:
    """A timestamp we cannot read is treated as unknown rather than failing the whole response."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        return _DATETIME.validate_python(value)
    except ValidationError:
        return None


Timestamp = Annotated[datetime | None, BeforeValidator(_lenient_datetime)]


class ApiResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    def stated(self, field: str) -> bool:
        """True when Baseten's answer carried `field` (an explicit null included)."""
        return field in self.model_fields_set


class AutoscalingSettingsV1(ApiResponse):
    min_replica: int | None = None
    max_replica: int | None = None
    autoscaling_window: int | None = None
    scale_down_delay: int | None = None
    concurrency_target: int | None = None
    target_utilization_percentage: int | None = None
    target_in_flight_tokens: int | None = None
    max_scale_down_rate: int | None = None


class RollingDeployConfigV1(ApiResponse):
    rolling_deploy_strategy: str | None = None
    max_surge_percent: int | None = None
    max_unavailable_percent: int | None = None
    stabilization_time_seconds: int | None = None
    replica_overhead_percent: int | None = None


class PromotionSettingsV1(ApiResponse):
    redeploy_on_promotion: bool | None = None
    rolling_deploy: bool | None = None
    promotion_cleanup_strategy: str | None = None
    ramp_up_while_promoting: bool | None = None
    ramp_up_duration_seconds: int | None = None
    rolling_deploy_config: RollingDeployConfigV1 | None = None


class InProgressPromotionV1(ApiResponse):
    status: str = ""
    percent_traffic_to_new_version: int | None = None
    error_message: str | None = None


class InstanceTypeV1(ApiResponse):
    id: str | None = None
    name: str | None = None


class ModelV1(ApiResponse):
    id: str
    name: str
    created_at: Timestamp = None
    deployments_count: int | None = None
    production_deployment_id: str | None = None
    development_deployment_id: str | None = None
    instance_type_name: str | None = None
    team_name: str | None = None


class DeploymentV1(ApiResponse):
    id: str
    name: str
    model_id: str = ""
    created_at: Timestamp = None
    status: str = ""
    active_replica_count: int | None = None
    is_production: bool | None = None
    is_development: bool | None = None
    # null: attached to no environment; missing (not `stated`): unknown.
    environment: str | None = None
    # None until the deployment has finished deploying.
    autoscaling_settings: AutoscalingSettingsV1 | None = None
    instance_type_name: str | None = None
    labels: dict[str, Any] | None = None


class EnvironmentV1(ApiResponse):
    name: str
    model_id: str = ""
    created_at: Timestamp = None
    # null: nothing serves; missing (not `stated`): unknown.
    current_deployment: DeploymentV1 | None = None
    # Set while a promotion runs; the API documents a missing member as null.
    candidate_deployment: DeploymentV1 | None = None
    autoscaling_settings: AutoscalingSettingsV1 | None = None
    promotion_settings: PromotionSettingsV1 | None = None
    instance_type: InstanceTypeV1 | None = None
    in_progress_promotion: InProgressPromotionV1 | None = None
    # Kept raw: decoded (baseten/schedules.py) only where schedules matter, so a collection
    # this operator cannot read never fails the whole environment.
    autoscaling_schedules: Any = None


class RetryResult(ApiResponse):
    retried: bool
    reason: str | None = None
    deployment: DeploymentV1 | None = None


# Envelopes and acknowledgements: parsed only to check the response has the documented shape.


class ModelList(ApiResponse):
    models: list[ModelV1]


class DeploymentList(ApiResponse):
    deployments: list[DeploymentV1]


class EnvironmentList(ApiResponse):
    environments: list[EnvironmentV1]


# Settings PATCHes answer one of these (UpdateAutoscalingSettingsStatusV1).
SETTINGS_ACCEPTED = frozenset({"ACCEPTED", "QUEUED", "UNCHANGED"})


class Ack(ApiResponse):
    """An acknowledgement: positive only when it says so, in the documented shape.

    Kept whole (extra="allow") so a refusal can quote what Baseten answered.
    """

    model_config = ConfigDict(extra="allow")
    error: Any = None

    def positive(self) -> bool:
        raise NotImplementedError

    def answer(self) -> dict[str, Any]:
        """The members Baseten sent, as it sent them."""
        return self.model_dump(mode="json", exclude_unset=True)

    def accepted(self) -> bool:
        return self.error is None and self.positive()


class Tombstone(Ack):
    id: str | None = None
    deleted: StrictBool | None = None

    def positive(self) -> bool:
        return self.deleted is True


class SuccessAck(Ack):
    success: StrictBool | None = None

    def positive(self) -> bool:
        return self.success is True


class SettingsUpdateAck(Ack):
    """UpdateAutoscalingSettingsResponseV1."""

    status: str | None = None
    message: str | None = None

    def positive(self) -> bool:
        return self.status in SETTINGS_ACCEPTED


class EnvironmentUpdateAck(SettingsUpdateAck):
    """UpdateEnvironmentResponseV1: `status` is deprecated there, so an answer without it
    is positive when it carries the updated environment instead."""

    environment: dict[str, Any] | None = None

    def positive(self) -> bool:
        if self.stated("status"):
            return super().positive()
        return self.environment is not None


# What cancel_promotion answers when Baseten stops the promotion (CancelPromotionStatusV1):
# at once, or by ramping the candidate's traffic back down first.
CANCELED = "CANCELED"
RAMPING_DOWN = "RAMPING_DOWN"


class CancelPromotionAck(Ack):
    """CancelPromotionResponseV1: positive only with one of the two documented statuses (a
    status Baseten adds tomorrow says nothing about whether the promotion stopped)."""

    status: str | None = None
    message: str | None = None

    def positive(self) -> bool:
        return self.status in (CANCELED, RAMPING_DOWN)


class SignalPromotionAck(SuccessAck):
    """SignalPromotionResponseV1: what pause, resume, force-cancel and force-roll-forward
    of a rolling promotion answer."""


class TeamV1(ApiResponse):
    id: str
    name: str
    default: bool = False


class TeamList(ApiResponse):
    teams: list[TeamV1]


class SecretV1(ApiResponse):
    """A secret as Baseten lists it: names only, never a value. `id` stays the same across
    a rotation."""

    id: str
    name: str
    created_at: Timestamp = None
    team_name: str | None = None


class SecretList(ApiResponse):
    secrets: list[SecretV1]


class SecretTombstone(Ack):
    """SecretTombstoneV1: the deleted secret's name."""

    name: str | None = None

    def positive(self) -> bool:
        return bool(self.name)


# Audit logs (ListAuditLogsResponseV1). `event_data` stays a mapping: the spec's union has
# forty-odd shapes, and a reader takes the few fields it needs by name.


class AuditLogActorV1(ApiResponse):
    type: str = ""  # USER, API_KEY, BASETEN_USER, BASETEN_SYSTEM, TOMBSTONE_USER
    email: str | None = None
    api_key_prefix: str | None = None
    api_key_name: str | None = None


class AuditLogEntryV1(ApiResponse):
    id: str
    created: Timestamp = None
    event_type: str = ""
    event_data: dict[str, Any] = {}
    source: str | None = None  # UI, API, MCP, SYSTEM, OTHER; None: unknown
    actor: AuditLogActorV1


class PaginationV1(ApiResponse):
    has_more: bool | None = None
    cursor: str | None = None


class AuditLogPage(ApiResponse):
    items: list[AuditLogEntryV1]
    pagination: PaginationV1 = PaginationV1()

    @property
    def next_cursor(self) -> str | None:
        """The cursor of the next page; None on the last one."""
        return self.pagination.cursor if self.pagination.has_more else None


# Deployment logs (GetLogsResponseV1).


class LogV1(ApiResponse):
    timestamp: str  # epoch nanoseconds, as Baseten sends them
    message: str
    replica: str | None = None
    request_id: str | None = None
    level: str | None = None  # DEBUG, INFO, WARNING, ERROR; None: no level detected

    @property
    def timestamp_ns(self) -> int | None:
        """The timestamp as an integer; None when it is not one."""
        try:
            return int(self.timestamp)
        except ValueError:
            return None


class LogList(ApiResponse):
    logs: list[LogV1]
