"""The BasetenModel resource as pydantic v2 types (docs/contract.md section 1).

Python fields are snake_case with the API's camelCase names as aliases; unknown fields are
ignored on read (an older operator reading a newer object must not fail). The field
descriptions and constraints are the source of the CRD schema (api/crd.py): a bound written
here is a bound the API server enforces.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from baseten_operator.api.analysis import (
    STEPPED_PROMOTION_MESSAGE,
    AnalysisStatus,
    Promotion,
    PromotionControl,
)
from baseten_operator.api.base import (
    COMMAND_MAX,
    ENVIRONMENT_NAME_MAX,
    IMAGE_MAX,
    KUBE_NAME_MAX,
    MAP_MAX,
    MESSAGE_MAX,
    NAME_MAX,
    PATH_MAX,
    SCRIPT_MAX,
    SHORT_MAX,
    TIME_MAX,
    ApiModel,
    BoundedMap,
    Tag,
)
from baseten_operator.api.constants import (
    DeletionPolicy,
    Mode,
    PromotionCleanupStrategy,
    RollingDeployStrategy,
    ScheduleCadence,
    Weekday,
)

ENVIRONMENT_NAME_PATTERN = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"

MAX_REPLICAS_RULE_MESSAGE = "minReplicas must be less than or equal to maxReplicas"
RESOURCES_RULE_MESSAGE = "one of accelerator or cpu must be set"
USE_GPU_RULE_MESSAGE = "useGpu requires accelerator"
TEAM_RULE_MESSAGE = "team is immutable once set"
WEEKDAYS_RULE_MESSAGE = "weekdays is required for DAILY and HOURLY schedules"
ONE_TIME_REQUIRES_TIMES_MESSAGE = "startAt and endAt are required for ONE_TIME schedules"
TIMES_ONLY_ONE_TIME_MESSAGE = "startAt and endAt are only valid for ONE_TIME schedules"
DAILY_REQUIRES_HOURS_MESSAGE = "startHour and endHour are required for DAILY schedules"
HOURS_ONLY_DAILY_MESSAGE = "startHour and endHour are only valid for DAILY schedules"
SCHEDULES_MAX = 10  # schedules per environment (the Go operator's bound)
ERROR_MAX = 515  # status.trussPushLastError: 512 bytes of the error, then "..."


# --- environment -------------------------------------------------------------------------


class Autoscaling(ApiModel):
    """Bounds per field here; `minReplicas <= maxReplicas` is a CEL rule (api/crd.py)."""

    min_replicas: int | None = Field(
        default=None, ge=0, description="Minimum number of replicas (Baseten min_replica)."
    )
    max_replicas: int | None = Field(
        default=None, ge=1, description="Maximum number of replicas (Baseten max_replica)."
    )
    concurrency_target: int | None = Field(
        default=None, ge=1, description="Concurrent requests per replica before scaling up."
    )
    autoscaling_window: int | None = Field(
        default=None, ge=0, description="Window, in seconds, over which traffic is averaged."
    )
    scale_down_delay: int | None = Field(
        default=None, ge=0, description="Seconds to wait before scaling down."
    )
    target_utilization_percentage: int | None = Field(
        default=None, ge=1, le=100, description="Target utilization, in percent (1-100)."
    )
    # Bounds of Baseten's UpdateAutoscalingSettingsV1: 1..50 for the rate; the spec gives the
    # token target none, and fewer than one token in flight means nothing.
    target_in_flight_tokens: int | None = Field(
        default=None, ge=1, description="Target in-flight tokens per replica (early access)."
    )
    max_scale_down_rate: int | None = Field(
        default=None,
        ge=1,
        le=50,
        description="Most replicas removed per autoscaling window, in percent (1-50).",
    )

    @model_validator(mode="after")
    def _min_not_above_max(self) -> Autoscaling:
        both = self.min_replicas is not None and self.max_replicas is not None
        if both and self.min_replicas > self.max_replicas:  # type: ignore[operator]
            raise ValueError(MAX_REPLICAS_RULE_MESSAGE)
        return self


class RollingDeployConfig(ApiModel):
    strategy: RollingDeployStrategy | None = Field(
        default=None, description="Rolling deploy strategy (REPLICA)."
    )
    max_surge_percent: int | None = Field(
        default=None,
        ge=0,
        le=100,
        description="Extra replicas during a rolling deploy, in percent.",
    )
    max_unavailable_percent: int | None = Field(
        default=None, ge=0, le=100, description="Replicas allowed unavailable, in percent."
    )
    stabilization_time_seconds: int | None = Field(
        default=None, ge=0, description="Seconds to wait between rolling deploy stages."
    )
    # Baseten's spec bounds it no further than an integer; a negative overhead means nothing.
    replica_overhead_percent: int | None = Field(
        default=None, ge=0, description="Replica overhead during a rolling deploy, in percent."
    )


class PromotionSettings(ApiModel):
    scale_down_previous_deployment: bool | None = Field(
        default=None,
        description="Promote-time flag passed to POST /promote (default true); never drift.",
    )
    preserve_instance_type: bool | None = Field(
        default=None,
        description="Promote-time flag passed to POST /promote (default true); never drift.",
    )
    redeploy_on_promotion: bool | None = Field(
        default=None, description="Redeploy a copy of the deployment on promotion."
    )
    rolling_deploy: bool | None = Field(default=None, description="Promote with a rolling deploy.")
    promotion_cleanup_strategy: PromotionCleanupStrategy | None = Field(
        default=None,
        description="What happens to the previous deployment: KEEP, SCALE_TO_ZERO or DEACTIVATE.",
    )
    ramp_up_while_promoting: bool | None = Field(
        default=None, description="Shift traffic gradually (canary) while promoting."
    )
    ramp_up_duration_seconds: int | None = Field(
        default=None, ge=0, description="Seconds over which traffic ramps up (10 stages)."
    )
    rolling_deploy_config: RollingDeployConfig | None = Field(
        default=None, description="Rolling deploy parameters."
    )


class ScheduleAutoscaling(ApiModel):
    """A schedule window's settings: min and max always, the rest inherit the environment's
    when unset (sent as null)."""

    min_replicas: int = Field(..., ge=0, description="Minimum replicas during the window.")
    max_replicas: int = Field(..., ge=1, description="Maximum replicas during the window.")
    concurrency_target: int | None = Field(
        default=None, ge=1, description="Concurrent requests per replica; unset: inherit."
    )
    autoscaling_window: int | None = Field(
        default=None, ge=0, description="Averaging window in seconds; unset: inherit."
    )
    scale_down_delay: int | None = Field(
        default=None, ge=0, description="Seconds before scaling down; unset: inherit."
    )
    target_utilization_percentage: int | None = Field(
        default=None, ge=1, le=100, description="Target utilization (1-100); unset: inherit."
    )
    target_in_flight_tokens: int | None = Field(
        default=None, ge=1, description="Target in-flight tokens (early access); unset: inherit."
    )
    max_scale_down_rate: int | None = Field(
        default=None,
        ge=1,
        le=50,
        description="Most replicas removed per autoscaling window, in percent (1-50); "
        "unset: inherit.",
    )

    @model_validator(mode="after")
    def _min_not_above_max(self) -> ScheduleAutoscaling:
        if self.min_replicas > self.max_replicas:
            raise ValueError(MAX_REPLICAS_RULE_MESSAGE)
        return self


class Schedule(ApiModel):
    """One window: DAILY (weekdays, hours and minutes), HOURLY (weekdays, minutes of every
    hour) or ONE_TIME (startAt to endAt). The cadence rules are CEL in the CRD."""

    name: str = Field(..., min_length=1, max_length=NAME_MAX, description="Schedule name.")
    enabled: bool = Field(default=True, description="Whether the schedule applies.")
    cadence: ScheduleCadence = Field(..., description="DAILY, HOURLY or ONE_TIME.")
    weekdays: list[Weekday] | None = Field(
        default=None, max_length=7, description="Days the window recurs (DAILY, HOURLY)."
    )
    start_hour: int | None = Field(
        default=None, ge=0, le=23, description="Hour the window opens (DAILY only)."
    )
    end_hour: int | None = Field(
        default=None, ge=0, le=23, description="Hour the window closes (DAILY only)."
    )
    start_minute: int = Field(
        default=0, ge=0, le=59, description="Minute the window opens (DAILY, HOURLY)."
    )
    end_minute: int = Field(
        default=0, ge=0, le=59, description="Minute the window closes (DAILY, HOURLY)."
    )
    start_at: str | None = Field(
        default=None,
        max_length=TIME_MAX,
        json_schema_extra={"format": "date-time"},
        description="Start of the window, RFC 3339 (ONE_TIME only).",
    )
    end_at: str | None = Field(
        default=None,
        max_length=TIME_MAX,
        json_schema_extra={"format": "date-time"},
        description="End of the window (exclusive), RFC 3339 (ONE_TIME only).",
    )
    autoscaling: ScheduleAutoscaling = Field(..., description="Settings during the window.")

    @model_validator(mode="after")
    def _cadence_fields(self) -> Schedule:
        one_time = self.cadence == ScheduleCadence.ONE_TIME
        daily = self.cadence == ScheduleCadence.DAILY
        times = (self.start_at is not None, self.end_at is not None)
        hours = (self.start_hour is not None, self.end_hour is not None)
        if not one_time and not self.weekdays:
            raise ValueError(WEEKDAYS_RULE_MESSAGE)
        if one_time and not all(times):
            raise ValueError(ONE_TIME_REQUIRES_TIMES_MESSAGE)
        if not one_time and any(times):
            raise ValueError(TIMES_ONLY_ONE_TIME_MESSAGE)
        if daily and not all(hours):
            raise ValueError(DAILY_REQUIRES_HOURS_MESSAGE)
        if not daily and any(hours):
            raise ValueError(HOURS_ONLY_DAILY_MESSAGE)
        return self


class AutoscalingSchedule(ApiModel):
    """Present: the operator owns the environment's whole schedule collection."""

    timezone: str | None = Field(
        default=None,
        min_length=1,
        max_length=SHORT_MAX,
        description="IANA time zone of every schedule; unset: keep Baseten's.",
    )
    schedules: list[Schedule] | None = Field(
        default=None,
        max_length=SCHEDULES_MAX,
        description="The schedules, by unique name; the operator deletes any other.",
    )


class EnvironmentSpec(ApiModel):
    name: str = Field(
        ...,
        pattern=ENVIRONMENT_NAME_PATTERN,
        max_length=ENVIRONMENT_NAME_MAX,
        description="Baseten environment name (lowercase alphanumeric and '-').",
    )
    autoscaling: Autoscaling | None = Field(
        default=None, description="Environment autoscaling settings; drift is corrected."
    )
    promotion_settings: PromotionSettings | None = Field(
        default=None, description="Environment promotion settings; drift is corrected."
    )
    autoscaling_schedule: AutoscalingSchedule | None = Field(
        default=None,
        description="Autoscaling schedules; drift is corrected. Unset: schedules are never "
        "read or written.",
    )


class OrphanDeploymentCleanup(ApiModel):
    scale_to_zero: bool | None = Field(default=None, description="Set min_replica 0 on orphans.")
    delete: bool | None = Field(default=None, description="Delete old inactive or failed orphans.")
    delete_after_days: int | None = Field(
        default=None, ge=1, description="Delete orphans only when older than this many days."
    )
    min_to_keep: int | None = Field(
        default=None, ge=0, description="Always keep this many newest orphans."
    )
    interval_minutes: int | None = Field(
        default=None, ge=10, description="Minutes between cleanup runs (at least 10)."
    )


# --- trussConfig (field order is the hash order of docs/truss.md) ---------------


class Resources(ApiModel):
    """A GPU (`accelerator`) or a CPU-only instance (`cpu`, `memory`): the rules are CEL in the
    CRD (api/crd.py) and repeated here for objects the API server did not check."""

    accelerator: str | None = Field(
        default=None,
        min_length=1,
        max_length=SHORT_MAX,
        description="Accelerator, e.g. H100:1, A100:4, L4. One of accelerator or cpu is required.",
    )
    use_gpu: bool | None = Field(
        default=None, description="Whether the model uses a GPU (requires accelerator)."
    )
    cpu: str | None = Field(
        default=None,
        min_length=1,
        max_length=SHORT_MAX,
        description='CPU request in truss format, e.g. "2" or "500m" (CPU-only models).',
    )
    memory: str | None = Field(
        default=None, min_length=1, max_length=SHORT_MAX, description="Memory, e.g. 8Gi."
    )

    @model_validator(mode="after")
    def _accelerator_or_cpu(self) -> Resources:
        if self.accelerator is None and self.cpu is None:
            raise ValueError(RESOURCES_RULE_MESSAGE)
        if self.use_gpu and self.accelerator is None:
            raise ValueError(USE_GPU_RULE_MESSAGE)
        return self


class DockerAuth(ApiModel):
    auth_method: str = Field(
        ...,
        max_length=SHORT_MAX,
        description="Registry auth method, e.g. GCP_SERVICE_ACCOUNT_JSON.",
    )
    secret_name: str = Field(
        ...,
        max_length=KUBE_NAME_MAX,
        description="Baseten secret holding the registry credentials.",
    )
    registry: str = Field(
        ..., max_length=KUBE_NAME_MAX, description="Registry host, e.g. us-docker.pkg.dev."
    )


class BaseImage(ApiModel):
    image: str = Field(..., max_length=IMAGE_MAX, description="Base image reference.")
    docker_auth: DockerAuth | None = Field(
        default=None, description="Private registry credentials."
    )


class DockerServer(ApiModel):
    no_build: bool | None = Field(default=None, description="Skip the image build.")
    start_command: str | None = Field(
        default=None, max_length=COMMAND_MAX, description="Command that starts the server."
    )
    readiness_endpoint: str | None = Field(
        default=None, max_length=PATH_MAX, description="Readiness probe path."
    )
    liveness_endpoint: str | None = Field(
        default=None, max_length=PATH_MAX, description="Liveness probe path."
    )
    predict_endpoint: str | None = Field(
        default=None, max_length=PATH_MAX, description="Prediction path."
    )
    server_port: int | None = Field(default=None, description="Server port (8080 is reserved).")


class TrussRuntime(ApiModel):
    predict_concurrency: int | None = Field(default=None, description="Concurrent predictions.")


class ModelMetadata(ApiModel):
    example_model_input: Any = Field(default=None, description="Example input (free JSON).")
    tags: list[Tag] | None = Field(default=None, max_length=MAP_MAX, description="Model tags.")


class ConfigMapKeyRef(ApiModel):
    name: str = Field(..., max_length=KUBE_NAME_MAX, description="ConfigMap name (same namespace).")
    key: str = Field(..., max_length=KUBE_NAME_MAX, description="Key holding the script.")


class SetupScript(ApiModel):
    config_map_ref: ConfigMapKeyRef | None = Field(
        default=None, description="Script read from a ConfigMap key."
    )
    inline: str | None = Field(
        default=None, max_length=SCRIPT_MAX, description="Script text, for small scripts."
    )


class TrussConfig(ApiModel):
    python_version: str | None = Field(
        default=None, max_length=SHORT_MAX, description="Python version, e.g. py311, py312."
    )
    resources: Resources = Field(..., description="Compute resources.")
    secrets: BoundedMap | None = Field(
        default=None,
        max_length=MAP_MAX,
        description="Secret names (values are stored in Baseten).",
    )
    environment_variables: BoundedMap | None = Field(
        default=None,
        max_length=MAP_MAX,
        description="Environment variables of the model server.",
    )
    base_image: BaseImage = Field(..., description="Base image.")
    docker_server: DockerServer | None = Field(default=None, description="Custom server settings.")
    runtime: TrussRuntime | None = Field(default=None, description="Truss runtime settings.")
    model_metadata: ModelMetadata | None = Field(default=None, description="Model metadata.")
    setup_script: SetupScript | None = Field(
        default=None, description="Setup script, uploaded as data/setup.sh."
    )


# --- spec ------------------------------------------------------------------------------


class BasetenModelSpec(ApiModel):
    model_name: str = Field(
        ..., min_length=1, max_length=NAME_MAX, description="Model name in Baseten."
    )
    team: str | None = Field(
        default=None,
        min_length=1,
        max_length=NAME_MAX,
        description="Baseten team of the model (lookups and pushes go through it); "
        "immutable once set.",
    )
    mode: Mode = Field(
        default=Mode.RECONCILE, description="Reconcile (default), Observe (read-only) or Pause."
    )
    deletion_policy: DeletionPolicy = Field(
        default=DeletionPolicy.RETAIN,
        description="What CR deletion does to the Baseten model: Retain (default), "
        "DeleteWithGuardrails or Delete.",
    )
    paused: bool | None = Field(
        default=None, description="Deprecated: use mode: Pause. true pauses whatever mode says."
    )
    source_deployment_name: str | None = Field(
        default=None,
        max_length=NAME_MAX,
        description="Existing deployment to promote (exactly one of sourceDeploymentName "
        "and trussConfig).",
    )
    truss_config: TrussConfig | None = Field(
        default=None,
        description="Deployment the operator pushes with truss (exactly one of "
        "sourceDeploymentName and trussConfig).",
    )
    environment: EnvironmentSpec = Field(..., description="Target Baseten environment.")
    orphan_deployment_cleanup: OrphanDeploymentCleanup | None = Field(
        default=None, description="Scale in and delete deployments no environment uses."
    )
    promotion: Promotion | None = Field(
        default=None,
        description="Progressive delivery of this resource's promotions: a manual hold, and "
        "analysis of the candidate's own metrics.",
    )

    @model_validator(mode="after")
    def _analysis_needs_steps(self) -> BasetenModelSpec:
        if self.promotion is None or self.promotion.analysis is None:
            return self
        settings = self.environment.promotion_settings
        if settings is None or not (settings.rolling_deploy or settings.ramp_up_while_promoting):
            raise ValueError(STEPPED_PROMOTION_MESSAGE)
        return self

    @model_validator(mode="after")
    def _exactly_one_source(self) -> BasetenModelSpec:
        if (self.source_deployment_name is None) == (self.truss_config is None):
            raise ValueError("exactly one of sourceDeploymentName or trussConfig must be set")
        return self

    @property
    def effective_mode(self) -> Mode:
        """The deprecated `paused: true` pauses whatever `mode` says."""
        return Mode.PAUSE if self.paused else self.mode


# --- status ----------------------------------------------------------------------------


# metav1.Condition's schema (k8s.io/apimachinery/pkg/apis/meta/v1), which kstatus and
# `kubectl wait --for=condition=` read: the same required fields, patterns and bounds.
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


class Condition(ApiModel):
    type: str = Field(
        ...,
        max_length=316,
        pattern=CONDITION_TYPE_PATTERN,
        description="Ready, Progressing, Reconciling or Stalled.",
    )
    status: Literal["True", "False", "Unknown"] = Field(..., description="True, False, Unknown.")
    observed_generation: int | None = Field(
        default=None, ge=0, description="metadata.generation the condition was computed from."
    )
    last_transition_time: str = Field(
        ...,
        max_length=TIME_MAX,
        json_schema_extra={"format": "date-time"},
        description="When the status last flipped (RFC 3339).",
    )
    reason: str = Field(
        ...,
        min_length=1,
        max_length=1024,
        pattern=CONDITION_REASON_PATTERN,
        description="The status word: a BasetenModel's deploymentStatus, a BasetenSecret's "
        "state (Unknown when unset).",
    )
    message: str = Field(..., max_length=32768, description="The status message.")


class PromotionProgress(ApiModel):
    phase: str | None = Field(
        max_length=SHORT_MAX, default=None, description="RELEASING, RAMPING_UP, RAMPING_DOWN, ..."
    )
    traffic_percent: int | None = Field(
        default=None, description="Traffic routed to the candidate, in percent."
    )
    analysis: AnalysisStatus | None = Field(
        default=None, description="The analysis of this resource's candidate (spec.promotion)."
    )
    control: PromotionControl | None = Field(
        default=None,
        description="The last pause, resume or rollback this resource asked of Baseten.",
    )


class ConditionedStatus(ApiModel):
    """What every kind's status has: the generation it was computed from, and the Ready,
    Progressing, Reconciling and Stalled conditions (docs/contract.md section 2)."""

    observed_generation: int | None = Field(
        default=None, description="metadata.generation last reconciled."
    )
    conditions: list[Condition] | None = Field(
        default=None, description="Ready, Progressing, Reconciling and Stalled."
    )


class BasetenModelStatus(ConditionedStatus):
    model_id: str | None = Field(
        max_length=NAME_MAX, default=None, alias="modelID", description="Baseten model ID."
    )
    model_id_resolved_time: str | None = Field(
        max_length=TIME_MAX,
        default=None,
        alias="modelIDResolvedTime",
        description="When the model ID was first resolved; never cleared.",
    )
    source_deployment_id: str | None = Field(
        max_length=NAME_MAX,
        default=None,
        alias="sourceDeploymentID",
        description="ID of the last promoted source.",
    )
    source_deployment_name: str | None = Field(
        max_length=NAME_MAX, default=None, description="Name of the source deployment."
    )
    active_deployment_name: str | None = Field(
        max_length=NAME_MAX, default=None, description="Environment's current deployment."
    )
    candidate_deployment_id: str | None = Field(
        max_length=NAME_MAX,
        default=None,
        alias="candidateDeploymentID",
        description="Deployment being promoted.",
    )
    candidate_deployment_name: str | None = Field(
        max_length=NAME_MAX, default=None, description="Name of the deployment being promoted."
    )
    cancelling_deployment_id: str | None = Field(
        max_length=NAME_MAX,
        default=None,
        alias="cancellingDeploymentID",
        description="Candidate whose promotion this CR is cancelling: on record before the "
        "cancel call, cleared once Baseten no longer promotes it.",
    )
    rolled_back_deployment_id: str | None = Field(
        max_length=NAME_MAX,
        default=None,
        alias="rolledBackDeploymentID",
        description="The candidate the analysis rolled back: never promoted again by this "
        "resource until the spec names another source or models.baseten.com/reanalyze "
        "changes.",
    )
    cancel_acknowledged_time: str | None = Field(
        max_length=TIME_MAX,
        default=None,
        alias="cancelAcknowledgedTime",
        description="When Baseten acknowledged the cancel of cancellingDeploymentID's "
        "promotion: an acknowledged cancel is never sent again.",
    )
    deployment_status: str | None = Field(
        max_length=SHORT_MAX,
        default=None,
        description="Baseten deployment status or the operator's own word.",
    )
    active_replica_count: int | None = Field(
        default=None, description="Active replicas of the current deployment."
    )
    message: str | None = Field(
        max_length=MESSAGE_MAX, default=None, description="What the operator is doing."
    )
    truss_config_hash: str | None = Field(
        max_length=SHORT_MAX, default=None, description="Hash of the pushed trussConfig."
    )
    truss_push_status: Literal["TRUSS_PUSHING", "TRUSS_PUSH_DONE", "TRUSS_PUSH_FAILED"] | None = (
        Field(default=None, description="TRUSS_PUSHING, TRUSS_PUSH_DONE or TRUSS_PUSH_FAILED.")
    )
    truss_push_time: str | None = Field(
        max_length=TIME_MAX, default=None, description="When the last push started."
    )
    truss_push_failure_count: int | None = Field(
        default=None, description="Failed pushes of the current deployment name in a row."
    )
    truss_push_last_error: str | None = Field(
        max_length=ERROR_MAX, default=None, description="Error of the last failed push."
    )
    truss_push_next_retry_time: str | None = Field(
        max_length=TIME_MAX, default=None, description="Earliest next push after a failure."
    )
    last_cleanup_time: str | None = Field(
        max_length=TIME_MAX, default=None, description="Last orphan cleanup."
    )
    first_deployment_failure_time: str | None = Field(
        max_length=TIME_MAX, default=None, description="First detection of the failing deployment."
    )
    deployment_retry_count: int | None = Field(default=None, description="Retries so far.")
    next_retry_time: str | None = Field(
        max_length=TIME_MAX, default=None, description="Earliest next retry."
    )
    promotion: PromotionProgress | None = Field(
        default=None, description="The environment's promotion in progress, while one ramps."
    )
    instance_type: str | None = Field(
        max_length=NAME_MAX, default=None, description="The environment's instance type."
    )


class BasetenModel(ApiModel):
    api_version: str | None = Field(default=None, description="models.baseten.com/v1alpha1")
    kind: str | None = Field(default=None, description="BasetenModel")
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: BasetenModelSpec
    status: BasetenModelStatus = Field(default_factory=lambda: BasetenModelStatus())
