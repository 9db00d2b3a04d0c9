"""The Baseten client's metrics: requests, their latency, and time spent rate limited.

Registered on the operator's one registry (`runtime.metrics.REGISTRY`) when the client is
imported; docs/metrics.md lists them.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from baseten_operator.runtime.metrics import REGISTRY

BASETEN_API_REQUESTS = Counter(
    "baseten_api_requests_total",
    "Requests to the Baseten Management API by endpoint template, method and HTTP code "
    "('0' for connection errors).",
    ["endpoint", "method", "code"],
    registry=REGISTRY,
)
BASETEN_API_LATENCY = Histogram(
    "baseten_api_request_duration_seconds",
    "Latency of Baseten Management API requests by endpoint template and method.",
    ["endpoint", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    registry=REGISTRY,
)
BASETEN_RATE_LIMIT_WAIT = Counter(
    "baseten_api_rate_limit_wait_seconds_total",
    "Seconds spent waiting for a client-side token bucket or a server Retry-After, by endpoint.",
    ["endpoint"],
    registry=REGISTRY,
)
