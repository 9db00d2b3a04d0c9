"""Request bodies the simulator accepts, as the OpenAPI spec declares them.

`extra="forbid"` where the spec says `additionalProperties: false`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class AutoscalingUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_replica: int | None = Field(default=None, ge=0)
    max_replica: int | None = Field(default=None, ge=1)
    autoscaling_window: int | None = Field(default=None, ge=10, le=3600)
    scale_down_delay: int | None = Field(default=None, ge=0, le=3600)
    concurrency_target: int | None = Field(default=None, ge=1)
    target_utilization_percentage: int | None = Field(default=None, ge=1, le=100)
    target_in_flight_tokens: int | None = Field(default=None, ge=1)
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


class UpdateEnvironment(EnvironmentSettings):
    model_config = ConfigDict(extra="forbid")

    autoscaling_schedule_settings: dict[str, Any] | None = None
    request_backpressure_settings: dict[str, Any] | None = None


class Promote(BaseModel):
    deployment_id: str = Field(min_length=1)
    scale_down_previous_deployment: bool = True
    preserve_env_instance_type: bool = True
