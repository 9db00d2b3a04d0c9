"""A deployment's metrics as Baseten answers them (GetModelMetricsResponseV1), and reading
them safely.

The answer is index-mapped: `metric_descriptors[i]` names metric i and lists its series
(label sets); each value set's `values[i]` is metric i's list, aligned to those label sets.
A misaligned answer would put a number under the wrong metric or series, so the readers
check the alignment of what they read and raise `MetricsUnreadable` rather than guess.
Missing data reads as "no data": a metric Baseten did not return reads as no series, a null
value (or a list that is null, or a value that is not a finite number) as None. Label sets
are frozensets of (label, value) pairs: `{frozenset({("status_code", "500"), ...}): 12.0}`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated

from pydantic import Field, StrictFloat, StrictInt

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import ApiResponse

Labels = frozenset[tuple[str, str]]
Values = dict[Labels, float | None]
# Strict: a count sent as a string or a boolean is a malformed answer, not a number.
Number = Annotated[StrictInt | StrictFloat | None, Field()]

# Documented modes (ModelMetricModeV1) and the metrics the operator reads.
CURRENT = "CURRENT"
SUMMARY = "SUMMARY"
SERIES = "SERIES"
REPLICAS_ACTIVE = "baseten_replicas_active"
INFERENCE_REQUESTS = "baseten_inference_requests_total"
RESPONSE_TIME = "baseten_end_to_end_response_time_seconds"


class MetricsUnreadable(BasetenAPIError):
    """A metrics answer whose shape does not say which number is which."""

    def __init__(self, problem: str) -> None:
        super().__init__(200, f"unreadable metrics answer: {problem}")


class MetricDescriptorV1(ApiResponse):
    name: str
    unit_hint: str | None = None
    kind: str | None = None
    # None (not sent): the series are unknown, so no value can be placed.
    label_sets: list[dict[str, str]] | None = None


class MetricValueSetV1(ApiResponse):
    start_epoch_millis: int | None = None
    values: list[list[Number] | None]


class DeploymentMetrics(ApiResponse):
    start_epoch_millis: int | None = None
    end_epoch_millis: int | None = None
    mode: str | None = None
    step_seconds: int | None = None
    metric_descriptors: list[MetricDescriptorV1]
    metric_values: list[MetricValueSetV1]

    def names(self) -> list[str]:
        return [d.name for d in self.metric_descriptors]

    def descriptor(self, name: str) -> MetricDescriptorV1 | None:
        matches = [d for d in self.metric_descriptors if d.name == name]
        if len(matches) > 1:
            raise MetricsUnreadable(f"{name} is described {len(matches)} times")
        return matches[0] if matches else None

    def summary(self, name: str) -> Values:
        """The metric's one value set (SUMMARY, CURRENT): {labels: value}; {} when Baseten
        returned no such metric or no value set."""
        steps = self.series(name)
        if len(steps) > 1:
            raise MetricsUnreadable(f"{len(steps)} value sets where one was expected")
        return steps[0][1] if steps else {}

    def series(self, name: str) -> list[tuple[int | None, Values]]:
        """(step start in epoch ms, {labels: value}) for each value set, in order."""
        descriptor = self.descriptor(name)
        if descriptor is None:
            return []
        index = self.metric_descriptors.index(descriptor)
        labels = _label_keys(descriptor)
        steps = []
        for value_set in self.metric_values:
            if len(value_set.values) != len(self.metric_descriptors):
                raise MetricsUnreadable(
                    f"a value set has {len(value_set.values)} metrics for "
                    f"{len(self.metric_descriptors)} descriptors"
                )
            values = value_set.values[index]
            if values is None:
                values = [None] * len(labels)
            if len(values) != len(labels):
                raise MetricsUnreadable(
                    f"{name} has {len(values)} values for {len(labels)} label sets"
                )
            steps.append(
                (value_set.start_epoch_millis, dict(zip(labels, map(_finite, values), strict=True)))
            )
        return steps


def _label_keys(descriptor: MetricDescriptorV1) -> list[Labels]:
    if descriptor.label_sets is None:
        raise MetricsUnreadable(f"{descriptor.name} has no label_sets")
    keys = [frozenset(label_set.items()) for label_set in descriptor.label_sets]
    if len(set(keys)) != len(keys):
        raise MetricsUnreadable(f"{descriptor.name} lists a label set twice")
    return keys


def _finite(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def total(
    values: Values, where: Callable[[dict[str, str]], bool] = lambda labels: True
) -> float | None:
    """The sum of the series whose labels satisfy `where` (e.g. a 5xx status code); None
    when none of them has data."""
    present = [v for key, v in values.items() if v is not None and where(dict(key))]
    return sum(present) if present else None
