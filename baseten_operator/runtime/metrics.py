"""The metrics registry, the runtime's own collectors, and the `/metrics` server.

The controller-runtime, workqueue, leader-election and event-recorder names are the ones
users already scrape and alert on. An operator built on this library registers its own
collectors on `REGISTRY` next to the code that uses them (docs/metrics.md lists every one).
One registry of our own, not prometheus-client's process-wide default, lets tests read
values without interference.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from baseten_operator.runtime.httpserver import (
    Query,
    RequestFilter,
    Response,
    RoutedHTTPServer,
    TLSContextSource,
)

REGISTRY = CollectorRegistry()

# --- controller-runtime -----------------------------------------------------------

# controller-runtime's reconcile_time_seconds buckets: fine below a second, coarse up to a minute.
_RECONCILE_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
    *(0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0),
    *(6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0),
)

RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller, by result "
    "(success, error, requeue, requeue_after).",
    ["controller", "result"],
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller (terminal ones included).",
    ["controller"],
    registry=REGISTRY,
)
TERMINAL_RECONCILE_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors_total",
    "Total number of terminal reconciliation errors (not retried) per controller.",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_PANICS = Counter(
    "controller_runtime_reconcile_panics_total",
    "Total number of reconciliations that crashed with a non-Exception BaseException.",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller.",
    ["controller"],
    buckets=_RECONCILE_BUCKETS,
    registry=REGISTRY,
)
MAX_CONCURRENT_RECONCILES = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller.",
    ["controller"],
    registry=REGISTRY,
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller.",
    ["controller"],
    registry=REGISTRY,
)

# --- workqueue ---------------------------------------------------------------------

# client-go's workqueue buckets: 10ns .. 1000s, one bucket per decade.
_WORKQUEUE_BUCKETS = tuple(10.0**exponent for exponent in range(-8, 4))

WORKQUEUE_DEPTH = Gauge(
    "workqueue_depth", "Current depth of workqueue.", ["name"], registry=REGISTRY
)
WORKQUEUE_ADDS = Counter(
    "workqueue_adds_total",
    "Total number of adds handled by workqueue.",
    ["name"],
    registry=REGISTRY,
)
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested.",
    ["name"],
    buckets=_WORKQUEUE_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    ["name"],
    buckets=_WORKQUEUE_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_RETRIES = Counter(
    "workqueue_retries_total",
    "Total number of retries handled by workqueue.",
    ["name"],
    registry=REGISTRY,
)


class InFlightWork(Protocol):
    """What a queue reports so in-progress work is visible before it finishes."""

    @property
    def name(self) -> str: ...

    def processing_ages(self) -> list[float]:
        """Seconds each item currently being processed has been running."""
        ...


class _InFlightWorkCollector(Collector):
    """Computes the two "work still running" gauges at scrape time.

    client-go refreshes them from a ticker per queue; asking the live queues when
    Prometheus scrapes gives the same numbers without a thread per queue. Queues are
    held weakly so a discarded queue drops out on its own.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: weakref.WeakSet[InFlightWork] = weakref.WeakSet()

    def track(self, queue: InFlightWork) -> None:
        with self._lock:
            self._queues.add(queue)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            queues = list(self._queues)
        unfinished: dict[str, float] = {}
        longest: dict[str, float] = {}
        for queue in queues:
            ages = queue.processing_ages()
            unfinished[queue.name] = unfinished.get(queue.name, 0.0) + sum(ages)
            longest[queue.name] = max(longest.get(queue.name, 0.0), max(ages, default=0.0))
        yield _gauge_family(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads.",
            unfinished,
        )
        yield _gauge_family(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            longest,
        )


def _gauge_family(name: str, documentation: str, values: dict[str, float]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=["name"])
    for queue_name, value in sorted(values.items()):
        family.add_metric([queue_name], value)
    return family


IN_FLIGHT_WORK = _InFlightWorkCollector()
REGISTRY.register(IN_FLIGHT_WORK)

# --- leader election and event recorder ---------------------------------------------

LEADER_ELECTION_MASTER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
    "backup, 1 indicates master. 'name' is the string used to identify the lease.",
    ["name"],
    registry=REGISTRY,
)
EVENTS_DROPPED = Counter(
    "event_recorder_events_dropped_total",
    "Kubernetes Events not written, by reason (queue_full, spam, write_failed).",
    ["component", "reason"],
    registry=REGISTRY,
)


class ObjectSeries:
    """Gauge series kept per Kubernetes object, so a relabelled or deleted object leaves no
    stale line.

    Each series is labelled with the object's namespace and name followed by labels that
    can change over its life (for example a model or an environment); remembering the labels
    each object last used lets an update replace its old series and `forget` remove it.
    """

    def __init__(self, *gauges: Gauge) -> None:
        self._gauges = gauges
        self._lock = threading.Lock()
        # Per object: its labels and its series, looked up once (`labels()` takes each
        # gauge's lock and builds its key: a cost on every pass otherwise).
        self._series: dict[tuple[str, str], tuple[tuple[str, ...], list[Gauge]]] = {}

    def set(self, namespace: str, name: str, *labels: str, values: Sequence[float]) -> None:
        """One value per gauge, in the order the gauges were given."""
        full = (namespace, name, *labels)
        with self._lock:
            known = self._series.get((namespace, name))
            if known is None or known[0] != full:
                if known is not None:
                    self._remove(known[0])
                known = (full, [gauge.labels(*full) for gauge in self._gauges])
                self._series[(namespace, name)] = known
            for series, value in zip(known[1], values, strict=True):
                series.set(value)

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            known = self._series.pop((namespace, name), None)
            if known is not None:
                self._remove(known[0])

    def _remove(self, labels: tuple[str, ...]) -> None:
        for gauge in self._gauges:
            gauge.remove(*labels)


class MetricsServer(RoutedHTTPServer):
    """`/metrics` in the Prometheus text format; address "0" disables it.

    Secure serving is `tls` (HTTPS only) plus a `request_filter` that authenticates and
    authorizes each scrape (runtime/delegatedauth.py).
    """

    def __init__(
        self,
        address: str,
        registry: CollectorRegistry = REGISTRY,
        *,
        tls: TLSContextSource | None = None,
        request_filter: RequestFilter | None = None,
    ) -> None:
        self._registry = registry
        super().__init__(
            address,
            {"/metrics": self._serve},
            name="metrics",
            tls=tls,
            request_filter=request_filter,
        )

    def _serve(self, path: str, query: Query) -> Response:
        return Response(200, generate_latest(self._registry), CONTENT_TYPE_LATEST)
