"""The reconciler's own metrics (DESIGN.md: retries, drift corrections, orphans, per-CR gauges)."""

from __future__ import annotations

import threading

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


# (namespace, name) -> the model label of its orphan gauge series, so a deleted CR or a
# changed modelName leaves no stale series behind.
_orphan_series: dict[tuple[str, str], str] = {}
_orphan_series_lock = threading.Lock()


def record_orphans_holding_replicas(namespace: str, name: str, model: str, count: int) -> None:
    with _orphan_series_lock:
        previous = _orphan_series.get((namespace, name))
        if previous is not None and previous != model:
            metrics.ORPHANS_HOLDING_REPLICAS.remove(namespace, name, previous)
        _orphan_series[(namespace, name)] = model
        metrics.ORPHANS_HOLDING_REPLICAS.labels(namespace, name, model).set(count)


def record_model(
    namespace: str, name: str, model: str, environment: str, status: BasetenModelStatus
) -> None:
    metrics.MODEL_SERIES.set(
        namespace,
        name,
        model,
        environment,
        ready=status.deployment_status in READY_STATUSES,
        replicas=status.active_replica_count or 0,
    )


def forget_model(namespace: str, name: str) -> None:
    metrics.MODEL_SERIES.forget(namespace, name)
    with _orphan_series_lock:
        model = _orphan_series.pop((namespace, name), None)
        if model is not None:
            metrics.ORPHANS_HOLDING_REPLICAS.remove(namespace, name, model)
