"""The reconciler's own metrics (docs/metrics.md): retries, drift, orphans, per-CR gauges.

The collectors are registered on the operator's one registry (`runtime.metrics.REGISTRY`);
the functions below are how the reconciler updates them.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from baseten_operator.api.constants import READY_STATUSES
from baseten_operator.api.types import BasetenModelStatus
from baseten_operator.runtime.metrics import REGISTRY, ObjectSeries

DEPLOYMENT_RETRIES = Counter(
    "baseten_deployment_retries_total",
    "Retries of failed deployments, by result (retried, declined, error, exhausted).",
    ["result"],
    registry=REGISTRY,
)
DRIFT_CORRECTIONS = Counter(
    "baseten_drift_corrections_total",
    "Out-of-band changes on Baseten put back to the spec, by settings group "
    "(autoscaling, promotion, schedules).",
    ["group"],
    registry=REGISTRY,
)
PROMOTIONS_CANCELLED = Counter(
    "baseten_promotions_cancelled_total",
    "Promotions of a deployment the spec no longer asks for, cancelled by the operator, by "
    "Baseten's answer (CANCELED, RAMPING_DOWN).",
    ["result"],
    registry=REGISTRY,
)
ANALYSIS_CHECKS = Counter(
    "baseten_analysis_checks_total",
    "Analysis checks of candidates being promoted, by result (pass, fail, inconclusive).",
    ["result"],
    registry=REGISTRY,
)
PROMOTION_ROLLBACKS = Counter(
    "baseten_promotion_rollbacks_total",
    "Promotions the analysis rolled back (force_cancel_promotion), by the kind of the metric "
    "that failed (errorRatio, latency, prometheus).",
    ["trigger"],
    registry=REGISTRY,
)
ORPHANS_SCALED_IN = Counter(
    "baseten_orphan_deployments_scaled_in_total",
    "Orphan deployments scaled to zero by cleanup.",
    registry=REGISTRY,
)
ORPHANS_DELETED = Counter(
    "baseten_orphan_deployments_deleted_total",
    "Orphan deployments deleted by cleanup.",
    registry=REGISTRY,
)
ORPHANS_HOLDING_REPLICAS = Gauge(
    "baseten_orphan_deployments_holding_replicas",
    "Orphan deployments of the BasetenModel's model that still keep min_replica above 0 or "
    "active replicas, as of its last cleanup pass.",
    ["namespace", "name", "model"],
    registry=REGISTRY,
)

_MODEL_LABELS = ["namespace", "name", "model", "environment"]
MODEL_READY = Gauge(
    "baseten_model_ready",
    "1 when the BasetenModel's target deployment is active in its environment, else 0.",
    _MODEL_LABELS,
    registry=REGISTRY,
)
MODEL_REPLICAS = Gauge(
    "baseten_model_active_replicas",
    "Active replicas of the BasetenModel's current deployment, as Baseten reports them.",
    _MODEL_LABELS,
    registry=REGISTRY,
)

MODEL_SERIES = ObjectSeries(MODEL_READY, MODEL_REPLICAS)
ORPHAN_SERIES = ObjectSeries(ORPHANS_HOLDING_REPLICAS)


def count_retry(result: str) -> None:
    """`result`: retried, declined, error or exhausted."""
    DEPLOYMENT_RETRIES.labels(result=result).inc()


def count_drift_correction(group: str) -> None:
    """`group`: autoscaling, promotion or schedules."""
    DRIFT_CORRECTIONS.labels(group=group).inc()


def count_cancellation(result: str) -> None:
    """`result`: CANCELED or RAMPING_DOWN, as Baseten answered the cancel."""
    PROMOTIONS_CANCELLED.labels(result=result).inc()


def count_check(verdict: str) -> None:
    """`verdict`: Pass, Fail or Inconclusive."""
    ANALYSIS_CHECKS.labels(result=verdict.lower()).inc()


def count_rollback(trigger: str) -> None:
    """`trigger`: the failed metric's kind (errorRatio, latency, prometheus)."""
    PROMOTION_ROLLBACKS.labels(trigger=trigger).inc()


def count_orphans(scaled_in: int, deleted: int) -> None:
    if scaled_in:
        ORPHANS_SCALED_IN.inc(scaled_in)
    if deleted:
        ORPHANS_DELETED.inc(deleted)


def record_orphans_holding_replicas(namespace: str, name: str, model: str, count: int) -> None:
    ORPHAN_SERIES.set(namespace, name, model, values=(count,))


def record_model(
    namespace: str, name: str, model: str, environment: str, status: BasetenModelStatus
) -> None:
    ready = status.deployment_status in READY_STATUSES
    MODEL_SERIES.set(
        namespace, name, model, environment, values=(int(ready), status.active_replica_count or 0)
    )


def forget_model(namespace: str, name: str) -> None:
    MODEL_SERIES.forget(namespace, name)
    ORPHAN_SERIES.forget(namespace, name)
