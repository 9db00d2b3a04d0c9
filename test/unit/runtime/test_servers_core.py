from __future__ import annotations

import http.client
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.parser import text_string_to_metric_families

from baseten_operator.runtime import metrics
from baseten_operator.runtime.health import HealthServer
from baseten_operator.runtime.httpserver import Response, RoutedHTTPServer, parse_bind_address
from baseten_operator.runtime.metrics import MetricsServer


def fetch(address: tuple[str, int] | None, path: str) -> tuple[int, str]:
    assert address is not None
    connection = http.client.HTTPConnection(*address, timeout=5)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


@pytest.fixture
def metrics_server() -> Iterator[MetricsServer]:
    server = MetricsServer("127.0.0.1:0")
    server.start()
    yield server
    server.stop()


def test_bind_addresses_follow_the_flag_conventions() -> None:
    assert parse_bind_address("0") is None
    assert parse_bind_address("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_bind_address(":8080") == ("::", 8080)  # both families
    assert parse_bind_address("[::1]:8080") == ("::1", 8080)
    assert parse_bind_address("0.0.0.0:9090") == ("0.0.0.0", 9090)
    for bad in ("8080", "host:", "host:http", ":70000"):
        with pytest.raises(ValueError):
            parse_bind_address(bad)


def test_metrics_are_scraped_over_http_in_prometheus_text(
    metrics_server: MetricsServer, unique_name: str
) -> None:
    metrics.RECONCILE_TOTAL.labels(controller=unique_name, result="success").inc(2)
    metrics.WORKQUEUE_ADDS.labels(name=unique_name).inc()
    status, body = fetch(metrics_server.bound_address, "/metrics")
    assert status == 200
    families = {family.name: family for family in text_string_to_metric_families(body)}
    reconciles = families["controller_runtime_reconcile"]
    assert reconciles.type == "counter"
    values = {
        (s.labels["controller"], s.labels["result"]): s.value
        for s in reconciles.samples
        if s.name == "controller_runtime_reconcile_total"
    }
    assert values[(unique_name, "success")] == 2
    assert "workqueue_adds" in families
    for name in (
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
    ):
        assert families[name].type == "gauge"


def test_metrics_server_keeps_connections_alive_and_404s_unknown_paths(
    metrics_server: MetricsServer,
) -> None:
    connection = http.client.HTTPConnection(*metrics_server.bound_address, timeout=5)  # type: ignore[misc]
    try:
        for path, expected in (("/metrics", 200), ("/nope", 404), ("/metrics", 200)):
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            assert response.status == expected
    finally:
        connection.close()


def test_a_disabled_server_does_not_listen() -> None:
    server = MetricsServer("0")
    server.start()
    assert not server.enabled and server.bound_address is None
    server.stop()


def test_object_series_are_replaced_and_removed_with_their_object() -> None:
    registry = CollectorRegistry()
    label_names = ["namespace", "name", "model", "environment"]
    ready = Gauge("object_ready", "ready", label_names, registry=registry)
    replicas = Gauge("object_replicas", "replicas", label_names, registry=registry)
    series = metrics.ObjectSeries(ready, replicas)
    labels = {"namespace": "ns-series", "name": "m", "model": "llama", "environment": "production"}
    series.set("ns-series", "m", "llama", "production", values=(1, 3))
    assert registry.get_sample_value("object_ready", labels) == 1
    assert registry.get_sample_value("object_replicas", labels) == 3
    series.set("ns-series", "m", "llama", "staging", values=(0, 0))
    assert registry.get_sample_value("object_ready", labels) is None
    staging = {**labels, "environment": "staging"}
    assert registry.get_sample_value("object_ready", staging) == 0
    series.set("ns-series", "m", "llama", "staging", values=(1, 2))  # same labels: new values
    assert registry.get_sample_value("object_ready", staging) == 1
    assert registry.get_sample_value("object_replicas", staging) == 2
    series.forget("ns-series", "m")
    assert registry.get_sample_value("object_ready", staging) is None
    assert registry.get_sample_value("object_replicas", staging) is None


@pytest.fixture
def synced() -> dict[str, bool]:
    return {"caches": False}


@pytest.fixture
def health(synced: dict[str, bool]) -> Iterator[HealthServer]:
    server = HealthServer("127.0.0.1:0", {"informer-sync": lambda: synced["caches"]})
    server.start()
    yield server
    server.stop()


def test_readyz_fails_naming_the_check_until_it_passes(
    health: HealthServer, synced: dict[str, bool]
) -> None:
    status, body = fetch(health.bound_address, "/readyz")
    assert status == 500
    assert "[-]informer-sync failed" in body and "[+]ping ok" in body
    assert body.rstrip().endswith("readyz check failed")
    assert fetch(health.bound_address, "/readyz?exclude=informer-sync") == (200, "ok")
    synced["caches"] = True
    assert fetch(health.bound_address, "/readyz") == (200, "ok")
    status, body = fetch(health.bound_address, "/readyz?verbose")
    assert status == 200 and "[+]informer-sync ok" in body and "readyz check passed" in body
    assert fetch(health.bound_address, "/readyz/informer-sync") == (200, "ok")
    assert fetch(health.bound_address, "/readyz/unknown")[0] == 404


def test_a_raising_check_fails_and_shutdown_fails_readiness_only() -> None:
    def leader_election() -> bool:
        raise RuntimeError("lease renew overdue")

    health = HealthServer(
        "127.0.0.1:0", {"informer-sync": lambda: True, "leader-election": leader_election}
    )
    health.start()
    try:
        status, body = fetch(health.bound_address, "/readyz")
        assert status == 500 and "[-]leader-election failed" in body
        assert "lease renew overdue" not in body  # reasons are withheld, as Kubernetes does
        assert fetch(health.bound_address, "/healthz") == (200, "ok")
        health.set_shutting_down()
        status, body = fetch(health.bound_address, "/readyz?exclude=leader-election")
        assert status == 500 and "[-]shutdown failed" in body
        assert fetch(health.bound_address, "/healthz") == (200, "ok")
    finally:
        health.stop()


def test_liveness_checks_fail_healthz() -> None:
    alive = {"ok": True}
    server = HealthServer("127.0.0.1:0", liveness_checks={"workers": lambda: alive["ok"]})
    server.start()
    try:
        assert fetch(server.bound_address, "/healthz") == (200, "ok")
        alive["ok"] = False
        status, body = fetch(server.bound_address, "/healthz")
        assert status == 500 and "[-]workers failed" in body
    finally:
        server.stop()


def test_stopping_a_server_ends_the_connections_it_still_holds() -> None:
    server = RoutedHTTPServer(
        "127.0.0.1:0", {"/x": lambda path, query: Response(200, b"ok")}, name="test"
    )
    server.start()
    address = server.bound_address
    assert address is not None
    client = http.client.HTTPConnection(*address, timeout=5)
    client.request("GET", "/x")
    assert client.getresponse().read() == b"ok"  # the connection stays open, idle
    server.stop()
    assert client.sock is not None
    assert client.sock.recv(1) == b""  # closed by the server, not left to its idle timeout
    client.close()
