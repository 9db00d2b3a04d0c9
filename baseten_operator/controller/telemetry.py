"""The reconciler's own metrics (docs/metrics.md): retries, drift, orphans, per-CR gauges."""

from __future__ import annotations

from baseten_operator.api.constants import READY_STATUSES
from baseten_operator.api.types import BasetenModelStatus
from baseten_operator.runtime import metrics


def count_retry(result: str) -> None:
    """`result`: retried, declined, error or exhausted."""
    metrics.DEPLOYMENT_RETRIES.labels(result=result).inc()


def count_drift_correction(group: str) -> None:
    """`group`: autoscaling or promotion."""
    metrics.DRIFT_CORRECTIONS.labels(group=group).inc()


def count_orphans(scaled_in: int, deleted: int) -> None:
    if scaled_in:
        metrics.ORPHANS_SCALED_IN.inc(scaled_in)
    if deleted:
        metrics.ORPHANS_DELETED.inc(deleted)


def record_orphans_holding_replicas(namespace: str, name: str, model: str, count: int) -> None:
    metrics.ORPHAN_SERIES.set(namespace, name, model, values=(count,))


def record_model(
    namespace: str, name: str, model: str, environment: str, status: BasetenModelStatus
) -> None:
    ready = status.deployment_status in READY_STATUSES
    metrics.MODEL_SERIES.set(
        namespace, name, model, environment, values=(int(ready), status.active_replica_count or 0)
    )


def forget_model(namespace: str, name: str) -> None:
    metrics.MODEL_SERIES.forget(namespace, name)
    metrics.ORPHAN_SERIES.forget(namespace, name)
