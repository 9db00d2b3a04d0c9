"""BasetenSecret metrics (docs/metrics.md): writes, failures, and the age of each CR's last
write. No label or value carries a secret's value; the Baseten secret's name is a label."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from prometheus_client import Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.metrics import REGISTRY

SECRET_SYNCS = Counter(
    "baseten_secret_syncs_total",
    "Values written to Baseten secrets (upserts) by BasetenSecrets.",
    registry=REGISTRY,
)
SECRET_SYNC_FAILURES = Counter(
    "baseten_secret_sync_failures_total",
    "BasetenSecret passes that could not write or check their Baseten secret, by reason "
    "(baseten: a Baseten call failed; forbidden: the Secret may not be read; input: the "
    "Secret's value is unusable).",
    ["reason"],
    registry=REGISTRY,
)


def count_sync() -> None:
    SECRET_SYNCS.inc()


def count_failure(reason: str) -> None:
    """`reason`: baseten, forbidden or input."""
    SECRET_SYNC_FAILURES.labels(reason=reason).inc()


class LastSyncAges(Collector):
    """`baseten_secret_seconds_since_last_sync{namespace, name, secret}`, computed when
    scraped from each CR's last write (its status.lastSyncTime)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], tuple[str, float]] = {}

    def record(self, namespace: str, name: str, secret: str, at: float) -> None:
        with self._lock:
            self._last[(namespace, name)] = (secret, at)

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            self._last.pop((namespace, name), None)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "baseten_secret_seconds_since_last_sync",
            "Seconds since the BasetenSecret last wrote its value to Baseten.",
            labels=["namespace", "name", "secret"],
        )
        now = self._clock.now()
        with self._lock:
            last = dict(self._last)
        for (namespace, name), (secret, at) in sorted(last.items()):
            family.add_metric([namespace, name, secret], max(0.0, now - at))
        yield family


# The one the operator exports (tests make their own, on the fake clock, unregistered).
LAST_SYNC_AGES = LastSyncAges(RealClock())
REGISTRY.register(LAST_SYNC_AGES)
