"""The pusher's metrics: pushes by result and their duration.

Registered on the operator's one registry (`runtime.metrics.REGISTRY`) when the pusher is
imported; docs/metrics.md lists them.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from baseten_operator.runtime.metrics import REGISTRY

TRUSS_PUSHES = Counter(
    "baseten_truss_pushes_total",
    "Truss pushes finished, by result (succeeded, failed, timeout).",
    ["result"],
    registry=REGISTRY,
)
TRUSS_PUSH_DURATION = Histogram(
    "baseten_truss_push_duration_seconds",
    "Wall time of a truss push, from launch to outcome.",
    buckets=(1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 180.0, 300.0, 600.0, 900.0, 1800.0),
    registry=REGISTRY,
)
