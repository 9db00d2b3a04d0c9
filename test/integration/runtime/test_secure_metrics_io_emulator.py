"""Secure metrics on the emulator: HTTPS, each scrape's token reviewed and authorized
by the API server, the answers cached for a minute (on the fake clock)."""

from __future__ import annotations

import socket
import ssl
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import urllib3

from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.delegatedauth import CACHE_TTL, DelegatedAuth
from baseten_operator.runtime.metrics import MetricsServer
from baseten_operator.runtime.resource import Resource
from baseten_operator.runtime.tlscert import self_signed
from baseten_operator.sim.kube import KubeApiServer

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
CLUSTER_ROLES = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False
)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def secure_metrics(kube: KubeClient, clock: FakeClock) -> Iterator[str]:
    server = MetricsServer(
        "127.0.0.1:0", tls=self_signed(), request_filter=DelegatedAuth(kube, clock=clock)
    )
    server.start()
    assert server.bound_address is not None
    host, port = server.bound_address
    yield f"https://{host}:{port}/metrics"
    server.stop()


def _token(kube_server: KubeApiServer, kube: KubeClient, namespace: str, name: str) -> str:
    kube.create(SERVICE_ACCOUNTS, {"metadata": {"name": name}}, namespace)
    issued: dict[str, Any] = kube_server.auth.request_token(namespace, name, None)
    return str(issued["status"]["token"])


def _bind_metrics_reader(kube: KubeClient, namespace: str, account: str) -> None:
    role = f"metrics-reader-{uuid.uuid4().hex[:6]}"
    kube.create(
        CLUSTER_ROLES,
        {
            "metadata": {"name": role},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
    )
    kube.create(
        CLUSTER_ROLE_BINDINGS,
        {
            "metadata": {"name": role},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
    )


def _scrape(url: str, token: str | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with pytest.warns(urllib3.exceptions.InsecureRequestWarning):
        return requests.get(url, headers=headers, timeout=5, verify=False)


def test_scrapes_need_a_token_the_api_server_authorizes_for_get_metrics(
    secure_metrics: str,
    kube_server: KubeApiServer,
    kube: KubeClient,
    namespace: str,
    clock: FakeClock,
) -> None:
    assert _scrape(secure_metrics).status_code == 401
    assert _scrape(secure_metrics, "not-a-token").status_code == 401

    token = _token(kube_server, kube, namespace, "scraper")
    denied = _scrape(secure_metrics, token)
    assert denied.status_code == 403
    assert f"system:serviceaccount:{namespace}:scraper" in denied.text

    _bind_metrics_reader(kube, namespace, "scraper")
    assert _scrape(secure_metrics, token).status_code == 403  # the denial is cached
    clock.advance(CACHE_TTL + 1)
    allowed = _scrape(secure_metrics, token)
    assert allowed.status_code == 200
    assert "controller_runtime_reconcile_total" in allowed.text


def test_the_answers_are_cached_for_a_minute(
    secure_metrics: str,
    kube_server: KubeApiServer,
    kube: KubeClient,
    namespace: str,
    clock: FakeClock,
) -> None:
    token = _token(kube_server, kube, namespace, "cached")
    _bind_metrics_reader(kube, namespace, "cached")
    assert _scrape(secure_metrics, token).status_code == 200
    kube.delete(SERVICE_ACCOUNTS, "cached", namespace)  # the token is now invalid
    assert _scrape(secure_metrics, token).status_code == 200
    clock.advance(CACHE_TTL + 1)
    assert _scrape(secure_metrics, token).status_code == 401


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated")
def test_only_tls_1_2_or_newer_and_http_1_1_are_offered(secure_metrics: str) -> None:
    host, port = secure_metrics.removeprefix("https://").split("/")[0].split(":")
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.check_hostname, old.verify_mode = False, ssl.CERT_NONE
    old.minimum_version = old.maximum_version = ssl.TLSVersion.TLSv1_1
    old.set_ciphers("ALL:@SECLEVEL=0")
    with pytest.raises(ssl.SSLError), socket.create_connection((host, int(port)), 5) as raw:
        old.wrap_socket(raw)
    modern = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    modern.check_hostname, modern.verify_mode = False, ssl.CERT_NONE
    modern.set_alpn_protocols(["h2", "http/1.1"])
    with modern.wrap_socket(socket.create_connection((host, int(port)), timeout=5)) as tls:
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
        assert tls.selected_alpn_protocol() == "http/1.1"
