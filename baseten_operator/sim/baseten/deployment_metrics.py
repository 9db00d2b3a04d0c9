"""`GET /v1/models/{model_id}/deployments/{deployment_id}/metrics`: a deployment's metrics
over a window (GetModelMetricsResponseV1), read from its traffic history (traffic.py).

Modes, as the spec states them: CURRENT (one snapshot at now; start and end must be
omitted), SUMMARY (one value set over the window), SERIES (value sets evenly spaced over the
window). The window defaults to the hour before its end, its end to now, and spans at most
7 days. Metrics served: `baseten_replicas_active` (GAUGE), `baseten_inference_requests_total`
(COUNTER, one series per status code and rollout phase) and
`baseten_end_to_end_response_time_seconds` (HISTOGRAM: quantiles 0.5, 0.9, 0.95, 0.99 and
the average, in seconds). A series with no data in a step is null.

*Inferred* (the spec does not say): a SERIES step is the window's duration over 60, rounded
up to whole seconds (at least 1); CURRENT's counters and latencies cover the trailing
simulated minute and its window reads start = end = now; a gauge over a step is the
time-weighted mean of its values.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Protocol

from baseten_operator.sim.baseten import query_params as params
from baseten_operator.sim.baseten.errors import bad_request
from baseten_operator.sim.baseten.traffic import QUANTILES, TrafficLog, mixture_quantile

REPLICAS = "baseten_replicas_active"
REQUESTS = "baseten_inference_requests_total"
LATENCY = "baseten_end_to_end_response_time_seconds"
DEFAULT_METRICS = (REPLICAS, REQUESTS, LATENCY)
MODES = ("CURRENT", "SUMMARY", "SERIES")

DEFAULT_WINDOW_MS = 3600 * 1000
MAX_WINDOW_MS = 7 * 24 * 3600 * 1000
SERIES_POINTS = 60
CURRENT_LOOKBACK = 60.0  # simulated seconds

_DESCRIPTORS: dict[str, dict[str, str]] = {
    REPLICAS: {"unit_hint": "COUNT", "kind": "GAUGE"},
    REQUESTS: {"unit_hint": "COUNT", "kind": "COUNTER"},
    LATENCY: {"unit_hint": "SECONDS", "kind": "HISTOGRAM"},
}
LATENCY_LABEL_SETS: list[dict[str, str]] = [
    *({"quantile": str(q)} for q in QUANTILES),
    {"stat": "avg"},
]


@dataclass(frozen=True)
class MetricsQuery:
    mode: str = "CURRENT"
    start_ms: int | None = None
    end_ms: int | None = None
    metrics: tuple[str, ...] = DEFAULT_METRICS

    @classmethod
    def parse(cls, query: dict[str, list[str]]) -> MetricsQuery:
        """The query parameters as sent; 400 for what the spec does not allow."""
        mode = params.one(query, "mode") or "CURRENT"
        if mode not in MODES:
            raise bad_request(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        start, end = (
            params.integer(query, "start_epoch_millis"),
            params.integer(query, "end_epoch_millis"),
        )
        if mode == "CURRENT" and (start is not None or end is not None):
            raise bad_request(
                "start_epoch_millis and end_epoch_millis must be omitted in CURRENT mode"
            )
        names = tuple(dict.fromkeys(query.get("metrics") or DEFAULT_METRICS))
        unknown = [name for name in names if name not in _DESCRIPTORS]
        if unknown:
            raise bad_request(
                f"Unknown metric {unknown[0]!r}; the simulator serves {', '.join(DEFAULT_METRICS)}"
            )
        return cls(mode, start, end, names)


@dataclass(frozen=True)
class _Window:
    start_ms: int
    end_ms: int
    step_seconds: int | None
    # (value set start in ms, span start, span end in clock seconds)
    spans: tuple[tuple[int, float, float], ...]


def _window(query: MetricsQuery, now: float, time_scale: float) -> _Window:
    now_ms = int(now * 1000)
    if query.mode == "CURRENT":
        return _Window(now_ms, now_ms, None, ((now_ms, now - CURRENT_LOOKBACK * time_scale, now),))
    end = query.end_ms if query.end_ms is not None else now_ms
    start = query.start_ms if query.start_ms is not None else end - DEFAULT_WINDOW_MS
    if start >= end:
        raise bad_request("start_epoch_millis must be before end_epoch_millis")
    if end - start > MAX_WINDOW_MS:
        raise bad_request("The window between start and end must not exceed 7 days")
    if query.mode == "SUMMARY":
        return _Window(start, end, None, ((start, start / 1000, end / 1000),))
    step = max(1, math.ceil((end - start) / 1000 / SERIES_POINTS))
    spans = tuple(
        (at, at / 1000, min(at + step * 1000, end) / 1000) for at in range(start, end, step * 1000)
    )
    return _Window(start, end, step, spans)


def metrics_answer(
    log: TrafficLog, dep_id: str, query: MetricsQuery, now: float, time_scale: float
) -> dict[str, Any]:
    window = _window(query, now, time_scale)
    # Nothing is known past now: spans are cut there (a span wholly after it has no data).
    spans = [(at, start, min(end, now)) for at, start, end in window.spans]
    readers: dict[str, _Reader] = {
        REPLICAS: _ReplicasReader(log, dep_id),
        REQUESTS: _RequestsReader(log, dep_id, time_scale, spans),
        LATENCY: _LatencyReader(log, dep_id, time_scale),
    }
    chosen = [readers[name] for name in query.metrics]
    return {
        "start_epoch_millis": window.start_ms,
        "end_epoch_millis": window.end_ms,
        "mode": query.mode,
        "step_seconds": window.step_seconds,
        "metric_descriptors": [
            {"name": name, **_DESCRIPTORS[name], "label_sets": reader.label_sets}
            for name, reader in zip(query.metrics, chosen, strict=True)
        ],
        "metric_values": [
            {
                "start_epoch_millis": at,
                "values": [
                    reader.values(start, end) if start < end else [None] * len(reader.label_sets)
                    for reader in chosen
                ],
            }
            for at, start, end in spans
        ],
    }


class _Reader(Protocol):
    """One metric: its series (label sets), and their values over a span."""

    label_sets: list[dict[str, str]]

    def values(self, start: float, end: float) -> list[float | None]: ...


class _ReplicasReader:
    def __init__(self, log: TrafficLog, dep_id: str) -> None:
        self.label_sets: list[dict[str, str]] = [{}]
        self._log = log
        self._dep_id = dep_id

    def values(self, start: float, end: float) -> list[float | None]:
        return [self._log.replicas(self._dep_id, start, end)]


class _RequestsReader:
    """One series per (status code, rollout phase) the deployment answered in the window;
    a step's count is the difference of the floors of the counts up to its two ends."""

    def __init__(
        self,
        log: TrafficLog,
        dep_id: str,
        time_scale: float,
        spans: list[tuple[int, float, float]],
    ) -> None:
        self._log = log
        self._dep_id = dep_id
        self._time_scale = time_scale
        seen: set[tuple[str, str]] = set()
        for _, start, end in spans:
            if start < end:
                seen |= {key for key, count in self._counts(start, end).items() if count > 0}
        self._keys = sorted(seen)
        self.label_sets = [
            {"status_code": code, "rollout_phase": phase} for code, phase in self._keys
        ]

    def _counts(self, start: float, end: float) -> dict[tuple[str, str], float]:
        by_series: dict[tuple[str, str], float] = defaultdict(float)
        for (code, _, phase), count in self._log.requests(
            self._dep_id, start, end, self._time_scale
        ).items():
            by_series[(code, phase)] += count
        return by_series

    def values(self, start: float, end: float) -> list[float | None]:
        before = self._counts(-math.inf, start)
        during = self._counts(start, end)
        return [
            float(math.floor(before.get(key, 0.0) + during[key]) - math.floor(before.get(key, 0.0)))
            if during.get(key, 0.0) > 0
            else None
            for key in self._keys
        ]


class _LatencyReader:
    def __init__(self, log: TrafficLog, dep_id: str, time_scale: float) -> None:
        self.label_sets = LATENCY_LABEL_SETS
        self._log = log
        self._dep_id = dep_id
        self._time_scale = time_scale

    def values(self, start: float, end: float) -> list[float | None]:
        parts = [
            (weight, latency)
            for _, _, weight, latency in self._log.latencies(
                self._dep_id, start, end, self._time_scale
            )
        ]
        total = sum(weight for weight, _ in parts)
        if total <= 0:
            return [None] * len(self.label_sets)
        average = sum(weight * latency.mean for weight, latency in parts) / total
        return [*(mixture_quantile(parts, q) for q in QUANTILES), round(average, 9)]
