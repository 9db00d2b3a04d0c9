"""Response models of the Baseten management API (docs/baseten-api.md).

Field names are the API's snake_case. Unknown fields are ignored, statuses are plain
strings (a status Baseten adds tomorrow must not break parsing), and every field the
API might omit has a default. Settings fields default to None rather than to the
API's documented defaults: drift detection treats "absent" as 0/false/"" and must be
able to tell absence from an explicit value.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, TypeAdapter, ValidationError

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


class AutoscalingSettingsV1(ApiResponse):
    min_replica: int | None = None
    max_replica: int | None = None
    autoscaling_window: int | None = None
    scale_down_delay: int | None = None
    concurrency_target: int | None = None
    target_utilization_percentage: int | None = None


class RollingDeployConfigV1(ApiResponse):
    rolling_deploy_strategy: str | None = None
    max_surge_percent: int | None = None
    max_unavailable_percent: int | None = None
    stabilization_time_seconds: int | None = None


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
    deployments_count: int = 0
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
    active_replica_count: int = 0
    is_production: bool = False
    is_development: bool = False
    environment: str | None = None
    # None until the deployment has finished deploying.
    autoscaling_settings: AutoscalingSettingsV1 | None = None
    instance_type_name: str | None = None
    labels: dict[str, Any] | None = None


class EnvironmentV1(ApiResponse):
    name: str
    model_id: str = ""
    created_at: Timestamp = None
    current_deployment: DeploymentV1 | None = None
    # Set while a promotion runs.
    candidate_deployment: DeploymentV1 | None = None
    autoscaling_settings: AutoscalingSettingsV1 | None = None
    promotion_settings: PromotionSettingsV1 | None = None
    instance_type: InstanceTypeV1 | None = None
    in_progress_promotion: InProgressPromotionV1 | None = None


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


class Tombstone(ApiResponse):
    id: str | None = None
    deleted: bool = True


class SuccessAck(ApiResponse):
    success: bool = True


class SettingsUpdateAck(ApiResponse):
    status: str = ""
    message: str | None = None


class TeamV1(ApiResponse):
    id: str
    name: str
    default: bool = False


class TeamList(ApiResponse):
    teams: list[TeamV1]
