"""A BasetenModel's progressive delivery (docs/contract.md section 14): `spec.promotion` (a
manual hold, and the analysis that judges the candidate of a promotion by its own metrics)
and what the operator records of it in `status.promotion`.

The rules JSON schema cannot say (one kind of check per metric, a bound for a Prometheus
check, the interval's minimum, analysis only for a promotion in steps) are CEL in the CRD
(api/crd.py), and the same rules are validators here.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from baseten_operator.api.base import (
    DURATION_PATTERN,
    MESSAGE_MAX,
    PATH_MAX,
    SHORT_MAX,
    TIME_MAX,
    ApiModel,
    SecretKeyRef,
    duration_seconds,
)

METRICS_MAX = 10
METRIC_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
METRIC_NAME_MAX = 63
QUERY_MAX = 4096
ADDRESS_PATTERN = r"^https?://[^\s]+$"
INTERVAL_MIN = "30s"
INTERVAL_MIN_MESSAGE = f"interval must be at least {INTERVAL_MIN}"
ONE_CHECK_MESSAGE = "exactly one of errorRatio, latency or prometheus must be set"
PROMETHEUS_BOUND_MESSAGE = "max or min must be set"
UNIQUE_METRICS_MESSAGE = "metric names must be unique"
STEPPED_PROMOTION_MESSAGE = (
    "promotion.analysis needs environment.promotionSettings.rollingDeploy or "
    "rampUpWhilePromoting: an atomic promotion has no step to judge"
)


class AnalysisMode(StrEnum):
    GUARD = "Guard"  # judge while Baseten ramps; act on failure
    GATE = "Gate"  # pause at every step; resume only after a passing check


class FailureAction(StrEnum):
    ROLLBACK = "Rollback"  # force_cancel_promotion: the previous deployment serves at once
    PAUSE = "Pause"  # pause_promotion: a person decides


class Quantile(StrEnum):
    P50 = "p50"
    P90 = "p90"
    P95 = "p95"
    P99 = "p99"


# Baseten's response-time histogram labels each quantile series by its fraction.
QUANTILE_LABELS = {
    Quantile.P50: "0.5",
    Quantile.P90: "0.9",
    Quantile.P95: "0.95",
    Quantile.P99: "0.99",
}


class ErrorRatioCheck(ApiModel):
    max_percent: float = Field(
        ...,
        ge=0,
        le=100,
        description="Highest share of the candidate's requests answered 5xx, in percent.",
    )


class LatencyCheck(ApiModel):
    quantile: Quantile = Field(..., description="p50, p90, p95 or p99.")
    max_milliseconds: float = Field(
        ..., gt=0, description="Highest end-to-end response time at that quantile, in ms."
    )


class PrometheusCheck(ApiModel):
    address: str = Field(
        ...,
        max_length=PATH_MAX,
        pattern=ADDRESS_PATTERN,
        description="Prometheus' base URL (http:// or https://), e.g. "
        "http://prometheus.monitoring:9090.",
    )
    query: str = Field(
        ...,
        min_length=1,
        max_length=QUERY_MAX,
        description="PromQL giving one number; {{deploymentID}}, {{modelID}} and "
        "{{environment}} are replaced by the candidate's.",
    )
    max: float | None = Field(default=None, description="Fail above this value.")
    min: float | None = Field(default=None, description="Fail below this value.")
    bearer_token_secret_ref: SecretKeyRef | None = Field(
        default=None, description="A bearer token for Prometheus, from a Secret."
    )
    ca_secret_ref: SecretKeyRef | None = Field(
        default=None, description="The CA (PEM) Prometheus' certificate is checked against."
    )

    @model_validator(mode="after")
    def _bounded(self) -> PrometheusCheck:
        if self.max is None and self.min is None:
            raise ValueError(PROMETHEUS_BOUND_MESSAGE)
        return self


class AnalysisMetric(ApiModel):
    name: str = Field(
        ...,
        min_length=1,
        max_length=METRIC_NAME_MAX,
        pattern=METRIC_NAME_PATTERN,
        description="The metric's name, unique in the analysis (it names it in messages).",
    )
    error_ratio: ErrorRatioCheck | None = Field(
        default=None, description="The candidate's share of 5xx answers."
    )
    latency: LatencyCheck | None = Field(
        default=None, description="The candidate's end-to-end response time at a quantile."
    )
    prometheus: PrometheusCheck | None = Field(
        default=None, description="A query to your own Prometheus."
    )

    @model_validator(mode="after")
    def _one_check(self) -> AnalysisMetric:
        if sum(c is not None for c in (self.error_ratio, self.latency, self.prometheus)) != 1:
            raise ValueError(ONE_CHECK_MESSAGE)
        return self


class PromotionAnalysis(ApiModel):
    mode: AnalysisMode = Field(
        default=AnalysisMode.GUARD,
        description="Guard (default: judge while Baseten ramps, act on failure) or Gate "
        "(pause at every step, resume only after a passing check).",
    )
    interval: str = Field(
        default="1m",
        max_length=SHORT_MAX,
        pattern=DURATION_PATTERN,
        description="How often the candidate is checked, and the window each check reads, "
        "as a duration (1m, 90s); at least 30s.",
    )
    failure_limit: int = Field(
        default=2, ge=1, description="Consecutive failed checks before onFailure acts."
    )
    min_requests: int = Field(
        default=50,
        ge=0,
        description="Fewer candidate requests than this in a window: the check is "
        "inconclusive (never a pass).",
    )
    on_failure: FailureAction = Field(
        default=FailureAction.ROLLBACK,
        description="Rollback (default: force_cancel_promotion) or Pause (pause_promotion).",
    )
    metrics: list[AnalysisMetric] = Field(
        ..., min_length=1, max_length=METRICS_MAX, description="What each check judges."
    )

    @model_validator(mode="after")
    def _valid(self) -> PromotionAnalysis:
        if self.interval_seconds < duration_seconds(INTERVAL_MIN):
            raise ValueError(INTERVAL_MIN_MESSAGE)
        names = [metric.name for metric in self.metrics]
        if len(set(names)) != len(names):
            raise ValueError(UNIQUE_METRICS_MESSAGE)
        return self

    @property
    def interval_seconds(self) -> float:
        return duration_seconds(self.interval)


class Promotion(ApiModel):
    hold: bool = Field(
        default=False,
        description="true: pause this resource's promotion at the next step; false resumes "
        "a promotion it held.",
    )
    analysis: PromotionAnalysis | None = Field(
        default=None,
        description="Judge the candidate by its own metrics while it is promoted; roll back "
        "(or pause) on evidence (needs rollingDeploy or rampUpWhilePromoting).",
    )


# --- status ------------------------------------------------------------------------------


class AnalysisPhase(StrEnum):
    RUNNING = "Running"
    PASSED = "Passed"
    FAILED = "Failed"
    HELD = "Held"
    INCONCLUSIVE = "Inconclusive"


class Verdict(StrEnum):
    PASS = "Pass"
    FAIL = "Fail"
    INCONCLUSIVE = "Inconclusive"


class ControlAction(StrEnum):
    """A signal this resource sent about its own promotion."""

    PAUSE = "Pause"
    RESUME = "Resume"
    ROLLBACK = "Rollback"


class ControlReason(StrEnum):
    HOLD = "hold"  # spec.promotion.hold
    GATE = "gate"  # Gate: pause at each step, resume after a passing check
    ANALYSIS = "analysis"  # onFailure


class MetricResult(ApiModel):
    name: str = Field(..., max_length=METRIC_NAME_MAX, description="The metric's name.")
    kind: str = Field(
        default="", max_length=SHORT_MAX, description="errorRatio, latency or prometheus."
    )
    value: float | None = Field(default=None, description="What the check read (none: no data).")
    limit: float | None = Field(default=None, description="The bound it was held to.")
    verdict: str = Field(..., max_length=SHORT_MAX, description="Pass, Fail or Inconclusive.")
    message: str = Field(default="", max_length=MESSAGE_MAX, description="The verdict, in words.")


class AnalysisStatus(ApiModel):
    phase: str = Field(
        ..., max_length=SHORT_MAX, description="Running, Passed, Failed, Held or Inconclusive."
    )
    candidate_deployment_id: str | None = Field(
        default=None,
        max_length=SHORT_MAX * 4,
        alias="candidateDeploymentID",
        description="The candidate judged.",
    )
    consecutive_failures: int = Field(
        default=0,
        ge=0,
        description="Failed checks in a row (an inconclusive one neither "
        "counts nor resets them).",
    )
    checks: int = Field(default=0, ge=0, description="Checks made of this candidate.")
    last_check_time: str | None = Field(
        default=None, max_length=TIME_MAX, description="When the last check ran."
    )
    next_check_time: str | None = Field(
        default=None, max_length=TIME_MAX, description="When the next check is due."
    )
    step_percent: int | None = Field(
        default=None, description="Gate: the traffic share of the step being judged."
    )
    reanalyze: str | None = Field(
        default=None,
        max_length=SHORT_MAX * 4,
        description="The models.baseten.com/reanalyze annotation when this analysis began.",
    )
    results: list[MetricResult] | None = Field(
        default=None, max_length=METRICS_MAX, description="Each metric's last verdict."
    )


class PromotionControl(ApiModel):
    """The last signal this resource sent about its promotion: on record before the call,
    acknowledged after it; an acknowledged signal is never sent again."""

    action: str = Field(..., max_length=SHORT_MAX, description="Pause, Resume or Rollback.")
    reason: str = Field(..., max_length=SHORT_MAX, description="hold, gate or analysis.")
    candidate_deployment_id: str | None = Field(
        default=None,
        max_length=SHORT_MAX * 4,
        alias="candidateDeploymentID",
        description="The candidate whose promotion it was about.",
    )
    percent: int | None = Field(default=None, description="The candidate's traffic then.")
    requested_time: str | None = Field(default=None, max_length=TIME_MAX)
    acknowledged_time: str | None = Field(default=None, max_length=TIME_MAX)
