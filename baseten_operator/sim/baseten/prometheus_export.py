"""Baseten's metrics export (`/metrics`, Prometheus text format), from the same traffic
history as the metrics API (traffic.py), written with prometheus_client's exposition.

Labels (docs.baseten.co, supported metrics): `baseten_inference_requests_total` (a counter
since the deployment's start) carries model_id, model_name, deployment_id, status_code,
is_async, environment and rollout_phase; *inferred*: the response-time histogram carries the
same but status_code, `baseten_replicas_active` model_id, model_name, deployment_id and
environment ("" for a deployment serving none).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from baseten_operator.sim.baseten.traffic import TrafficLog

# Seconds; the last bucket (+Inf) counts every request.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, math.inf)
IS_ASYNC = "false"  # the simulator's traffic is synchronous


@dataclass(frozen=True)
class Exported:
    """One deployment as the export names it."""

    model_id: str
    model_name: str
    deployment_id: str
    environment: str
    replicas: int


class _Collector:
    def __init__(
        self, log: TrafficLog, deployments: Iterable[Exported], now: float, time_scale: float
    ) -> None:
        self._log = log
        self._deployments = list(deployments)
        self._now = now
        self._time_scale = time_scale

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "baseten_inference_requests",
            "Cumulative number of requests to the model.",
            labels=(
                "model_id",
                "model_name",
                "deployment_id",
                "status_code",
                "is_async",
                "environment",
                "rollout_phase",
            ),
        )
        latency = HistogramMetricFamily(
            "baseten_end_to_end_response_time_seconds",
            "End-to-end response time in seconds.",
            labels=(
                "model_id",
                "model_name",
                "deployment_id",
                "is_async",
                "environment",
                "rollout_phase",
            ),
        )
        replicas = GaugeMetricFamily(
            "baseten_replicas_active",
            "Number of replicas ready to serve requests.",
            labels=("model_id", "model_name", "deployment_id", "environment"),
        )
        for dep in self._deployments:
            self._add_requests(requests, dep)
            self._add_latency(latency, dep)
            replicas.add_metric(
                (dep.model_id, dep.model_name, dep.deployment_id, dep.environment), dep.replicas
            )
        yield from (requests, latency, replicas)

    def _add_requests(self, family: CounterMetricFamily, dep: Exported) -> None:
        counts = self._log.requests(dep.deployment_id, -math.inf, self._now, self._time_scale)
        for (code, environment, phase), count in sorted(counts.items()):
            labels = (
                dep.model_id,
                dep.model_name,
                dep.deployment_id,
                code,
                IS_ASYNC,
                environment,
                phase,
            )
            family.add_metric(labels, math.floor(count))

    def _add_latency(self, family: HistogramMetricFamily, dep: Exported) -> None:
        parts = self._log.latencies(dep.deployment_id, -math.inf, self._now, self._time_scale)
        by_series = defaultdict(list)
        for environment, phase, weight, distribution in parts:
            by_series[(environment, phase)].append((weight, distribution))
        for (environment, phase), weighted in sorted(by_series.items()):
            buckets = [
                (_le(le), math.floor(sum(w * d.cdf(le) for w, d in weighted))) for le in BUCKETS
            ]
            total = sum(w * d.mean for w, d in weighted)
            labels = (dep.model_id, dep.model_name, dep.deployment_id, IS_ASYNC, environment, phase)
            family.add_metric(labels, buckets, total)


def _le(bound: float) -> str:
    return "+Inf" if math.isinf(bound) else repr(bound)


def exposition(
    log: TrafficLog, deployments: Iterable[Exported], now: float, time_scale: float
) -> bytes:
    """The Prometheus text format of these deployments' metrics at `now`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(log, deployments, now, time_scale))
    return generate_latest(registry)
