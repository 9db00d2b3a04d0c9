"""One analysis check of a candidate (docs/contract.md section 14): its own metrics over the
last `interval`, each judged Pass, Fail or Inconclusive.

Inconclusive is never a pass: fewer than `minRequests` requests in the window, no data, a
metrics error or timeout, a Prometheus query with no result or that could not be asked. A
check fails when any metric fails; it passes only when every one passes.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from baseten_operator.api.analysis import (
    QUANTILE_LABELS,
    AnalysisMetric,
    PrometheusCheck,
    PromotionAnalysis,
    Verdict,
)
from baseten_operator.api.base import SecretKeyRef
from baseten_operator.baseten.deployment_metrics import (
    INFERENCE_REQUESTS,
    RESPONSE_TIME,
    SUMMARY,
    Values,
    total,
)
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import DeploymentV1
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.prometheus.client import PrometheusError
from baseten_operator.runtime.errors import Forbidden


@dataclass(frozen=True)
class MetricVerdict:
    name: str
    kind: str  # errorRatio, latency or prometheus
    verdict: Verdict
    value: float | None = None
    limit: float | None = None
    unit: str = ""  # how value and limit read: "%", "ms", or nothing
    below: bool = False  # failed under a minimum (else over a maximum)
    reason: str = ""  # an inconclusive verdict's cause

    def describe(self) -> str:
        """`errors 30.1% above 2%`, or why it is inconclusive."""
        if self.verdict == Verdict.INCONCLUSIVE:
            return f"{self.name} inconclusive: {self.reason}"
        side = ("below" if self.below else "above") if self.verdict == Verdict.FAIL else "within"
        return (
            f"{self.name} {messages.number(self.value, self.unit)} {side} "
            f"{messages.number(self.limit, self.unit)}"
        )


@dataclass(frozen=True)
class Check:
    results: list[MetricVerdict]

    @property
    def verdict(self) -> Verdict:
        verdicts = {result.verdict for result in self.results}
        if Verdict.FAIL in verdicts:
            return Verdict.FAIL
        if Verdict.INCONCLUSIVE in verdicts:
            return Verdict.INCONCLUSIVE
        return Verdict.PASS

    @property
    def deciding(self) -> MetricVerdict | None:
        """The first failed metric, else the first inconclusive one."""
        for wanted in (Verdict.FAIL, Verdict.INCONCLUSIVE):
            found = next((r for r in self.results if r.verdict == wanted), None)
            if found is not None:
                return found
        return None


@dataclass(frozen=True)
class _Window:
    """What Baseten's metrics say of the candidate's window; `problem` when nothing can be
    judged from them (every metric is then inconclusive)."""

    requests: float = 0.0
    errors: float = 0.0
    latency: Values | None = None
    problem: str | None = None


def run_check(
    p: Pass, model_id: str, candidate: DeploymentV1, analysis: PromotionAnalysis
) -> Check:
    window = _read_window(p, model_id, candidate, analysis)
    return Check([_judge(p, model_id, candidate, metric, window) for metric in analysis.metrics])


def _read_window(
    p: Pass, model_id: str, candidate: DeploymentV1, analysis: PromotionAnalysis
) -> _Window:
    now = p.deps.clock.now()
    # The interval is a spec-given duration: scaled with every other delay (--time-scale).
    start = now - analysis.interval_seconds * p.deps.timing.scale
    try:
        answer = p.deps.baseten.get_deployment_metrics(
            model_id,
            candidate.id,
            mode=SUMMARY,
            start_ms=int(start * 1000),
            end_ms=int(now * 1000),
            metrics=(INFERENCE_REQUESTS, RESPONSE_TIME),
        )
        counts = answer.summary(INFERENCE_REQUESTS)
        latency = answer.summary(RESPONSE_TIME)
    except BasetenAPIError as error:
        return _Window(problem=messages.metrics_unreadable(error))
    requests = total(counts) or 0.0
    if requests < analysis.min_requests:
        return _Window(problem=messages.too_few_requests(requests, analysis.min_requests))
    errors = total(counts, where=lambda labels: labels.get("status_code", "").startswith("5"))
    return _Window(requests=requests, errors=errors or 0.0, latency=latency)


def _judge(
    p: Pass, model_id: str, candidate: DeploymentV1, metric: AnalysisMetric, window: _Window
) -> MetricVerdict:
    if window.problem is not None:
        kind = _kind(metric)
        return MetricVerdict(metric.name, kind, Verdict.INCONCLUSIVE, reason=window.problem)
    if metric.error_ratio is not None:
        value = 100 * window.errors / window.requests
        return _bounded(metric.name, "errorRatio", value, metric.error_ratio.max_percent, None, "%")
    if metric.latency is not None:
        label = frozenset({("quantile", QUANTILE_LABELS[metric.latency.quantile])})
        seconds = (window.latency or {}).get(label)
        if seconds is None:
            reason = messages.no_latency(metric.latency.quantile)
            return MetricVerdict(metric.name, "latency", Verdict.INCONCLUSIVE, reason=reason)
        limit = metric.latency.max_milliseconds
        return _bounded(metric.name, "latency", seconds * 1000, limit, None, "ms")
    assert metric.prometheus is not None
    return _prometheus(p, model_id, candidate, metric.name, metric.prometheus)


def _kind(metric: AnalysisMetric) -> str:
    if metric.error_ratio is not None:
        return "errorRatio"
    return "latency" if metric.latency is not None else "prometheus"


def _bounded(
    name: str, kind: str, value: float, maximum: float | None, minimum: float | None, unit: str
) -> MetricVerdict:
    if maximum is not None and value > maximum:
        return MetricVerdict(name, kind, Verdict.FAIL, value, maximum, unit)
    if minimum is not None and value < minimum:
        return MetricVerdict(name, kind, Verdict.FAIL, value, minimum, unit, below=True)
    limit = maximum if maximum is not None else minimum
    return MetricVerdict(name, kind, Verdict.PASS, value, limit, unit)


def _prometheus(
    p: Pass, model_id: str, candidate: DeploymentV1, name: str, check: PrometheusCheck
) -> MetricVerdict:
    def inconclusive(reason: str) -> MetricVerdict:
        return MetricVerdict(name, "prometheus", Verdict.INCONCLUSIVE, reason=reason)

    prometheus = p.deps.prometheus
    if prometheus is None:
        return inconclusive(messages.PROMETHEUS_UNAVAILABLE)
    query = (
        check.query.replace("{{deploymentID}}", candidate.id)
        .replace("{{modelID}}", model_id)
        .replace("{{environment}}", p.env)
    )
    try:
        token = _secret_text(p, check.bearer_token_secret_ref)
        ca_pem = _secret_text(p, check.ca_secret_ref)
        value = prometheus.query(check.address, query, token=token, ca_pem=ca_pem)
    except (PrometheusError, SecretUnusable) as error:
        return inconclusive(str(error))
    if value is None:
        return inconclusive(messages.NO_QUERY_RESULT)
    return _bounded(name, "prometheus", value, check.max, check.min, "")


class SecretUnusable(Exception):
    """A Secret a check names cannot give its value (missing, refused, empty)."""


def _secret_text(p: Pass, ref: SecretKeyRef | None) -> str | None:
    if ref is None:
        return None
    secrets = p.deps.secrets
    where = f"{p.namespace}/{ref.name}"
    try:
        secret = secrets.get(p.namespace, ref.name) if secrets is not None else None
    except Forbidden:
        raise SecretUnusable(messages.check_secret_forbidden(where)) from None
    if secret is None:
        raise SecretUnusable(messages.check_secret_missing(where))
    encoded = (secret.get("data") or {}).get(ref.key)
    try:
        text = base64.b64decode(encoded or "", validate=True).decode().strip()
    except (binascii.Error, UnicodeDecodeError):
        text = ""
    if not text:
        raise SecretUnusable(messages.check_secret_key_missing(where, ref.key))
    return text
