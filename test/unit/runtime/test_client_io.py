"""Client pieces that need no server: paths, error typing, keys, watch line parsing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import urllib3
from kubernetes import client as k8s_client
from kubernetes.config.config_exception import ConfigException

from baseten_operator.runtime.client import (
    AUTH_REFRESH_INTERVAL,
    CONNECT_RETRY_PAUSES,
    WATCH_CONNECT_RETRIES,
    KubeClient,
    WatchStream,
)
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    ConnectionFailed,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    UnsupportedMediaType,
    api_error,
)
from baseten_operator.runtime.http1 import ConnectFailed, ReadTimedOut
from baseten_operator.runtime.resource import CONFIGMAPS, CRDS, LEASES, Resource, object_key
from testsupport.http_mock import HttpMock


def test_paths_for_core_group_namespaced_and_cluster_scoped() -> None:
    assert CONFIGMAPS.path("ns", "a b") == "/api/v1/namespaces/ns/configmaps/a%20b"
    assert CONFIGMAPS.path() == "/api/v1/configmaps"
    assert LEASES.path("kube-system", "x", "status") == (
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x/status"
    )
    assert CRDS.path("ignored", "c") == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/c"
    assert LEASES.api_version == "coordination.k8s.io/v1"
    assert Resource("", "v1", "pods", "Pod").api_version == "v1"


def status(code: int, reason: str, **extra: object) -> dict:
    return {"kind": "Status", "code": code, "reason": reason, "message": f"m{code}", **extra}


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (410, "Expired", Gone),
        (415, "UnsupportedMediaType", UnsupportedMediaType),
        (422, "Invalid", Invalid),
        (503, "ServiceUnavailable", ServerError),
        (418, "Teapot", ApiError),
    ],
)
def test_status_codes_map_to_typed_errors(code: int, reason: str, expected: type) -> None:
    error = api_error(code, status(code, reason))
    assert type(error) is expected
    assert (error.status, error.reason, error.message) == (code, reason, f"m{code}")
    assert error.body is not None


def test_too_many_requests_reads_retry_after_from_header_or_details() -> None:
    from_header = api_error(429, status(429, "TooManyRequests"), "7")
    assert isinstance(from_header, TooManyRequests)
    assert from_header.retry_after == 7.0
    from_details = api_error(429, status(429, "TooManyRequests", details={"retryAfterSeconds": 3}))
    assert isinstance(from_details, TooManyRequests)
    assert from_details.retry_after == 3.0
    assert isinstance(api_error(429, None), TooManyRequests)


def test_error_without_status_body() -> None:
    error = api_error(502, None)
    assert isinstance(error, ServerError)
    assert error.body is None


def test_object_key() -> None:
    assert object_key({"metadata": {"name": "a", "namespace": "ns"}}) == "ns/a"
    assert object_key({"metadata": {"name": "cluster-wide"}}) == "cluster-wide"


def stream_of(*lines: bytes) -> WatchStream:
    response = urllib3.HTTPResponse(
        body=io.BytesIO(b"".join(lines)), status=200, preload_content=False
    )
    return WatchStream(response)


def event(kind: str, obj: dict) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def test_watch_stream_yields_events_and_ends_cleanly() -> None:
    stream = stream_of(
        event("ADDED", {"metadata": {"name": "a"}}),
        b"\n",
        event("BOOKMARK", {"metadata": {"resourceVersion": "9"}}),
    )
    assert [e["type"] for e in stream] == ["ADDED", "BOOKMARK"]


def test_watch_error_event_410_raises_gone() -> None:
    stream = stream_of(
        event("ADDED", {"metadata": {"name": "a"}}),
        event("ERROR", status(410, "Expired")),
    )
    assert next(stream)["type"] == "ADDED"
    with pytest.raises(Gone):
        next(stream)


def test_watch_stream_broken_mid_way_raises_connection_failed() -> None:
    class Broken(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
            raise ConnectionResetError("peer reset")

    response = urllib3.HTTPResponse(body=Broken(), status=200, preload_content=False)
    with pytest.raises(ConnectionFailed):
        next(WatchStream(response))


def test_closed_watch_stream_ends_quietly() -> None:
    stream = stream_of(event("ADDED", {"metadata": {"name": "a"}}))
    stream.close()
    assert list(stream) == []


KUBECONFIG_YAML = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:6443"}}]
users: [{name: u, user: {token: secret-token}}]
contexts:
- {name: one, context: {cluster: c, user: u}}
- {name: two, context: {cluster: c, user: u, namespace: other}}
current-context: one
"""


def test_auto_uses_kubeconfig_env_then_home_then_in_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG_YAML)
    monkeypatch.setenv("KUBECONFIG", str(path))
    client = KubeClient.auto()
    configuration = client.api_client.configuration
    assert configuration.host == "http://127.0.0.1:6443"
    assert configuration.auth_settings()["BearerToken"]["value"] == "Bearer secret-token"
    assert configuration.retries is WATCH_CONNECT_RETRIES
    # Room for every connection one process holds at once (watches, workers, Event writers).
    assert client.api_client.rest_client.pool_manager.connection_pool_kw["maxsize"] == 32
    assert client._http._maxsize == 32

    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(KUBECONFIG_YAML)
    assert KubeClient.auto().api_client.configuration.host == "http://127.0.0.1:6443"

    (tmp_path / ".kube" / "config").unlink()
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigException):
        KubeClient.auto()  # neither a kubeconfig nor a pod


def test_from_kubeconfig_selects_the_context(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG_YAML)
    client = KubeClient.from_kubeconfig(str(path), context="two")
    assert client.api_client.configuration.host == "http://127.0.0.1:6443"


API = "https://k8s.test/clusters/c1"  # a server behind a path prefix, as Rancher serves one


def bearer_client(token: str) -> tuple[KubeClient, k8s_client.Configuration]:
    configuration = k8s_client.Configuration(host=API)
    configuration.api_key = {"authorization": f"Bearer {token}"}
    return KubeClient.from_configuration(configuration), configuration


def test_requests_go_under_the_host_path_with_headers_and_query() -> None:
    kube, _ = bearer_client("t0")
    kube.api_client.user_agent = "baseten-operator/test (replica-a)"  # set after building
    with HttpMock() as http:
        http.get(f"{API}/api/v1/namespaces/ns/configmaps", json={"items": []})
        http.patch(f"{API}/api/v1/namespaces/ns/configmaps/a", json={"kind": "ConfigMap"})
        kube.list(CONFIGMAPS, "ns", label_selector="app in (a,b)", limit=5)
        kube.patch(CONFIGMAPS, "a", {"data": {"k": "v"}}, "ns")
    listed, patched = (call.request for call in http.calls)
    assert listed.query == {"labelSelector": "app in (a,b)", "limit": "5"}
    assert listed.headers["Authorization"] == "Bearer t0"
    assert listed.headers["User-Agent"] == "baseten-operator/test (replica-a)"
    assert patched.headers["Content-Type"] == "application/merge-patch+json"
    assert patched.body is not None and json.loads(patched.body) == {"data": {"k": "v"}}


def test_a_token_that_can_change_is_asked_for_again_every_few_seconds() -> None:
    configuration = k8s_client.Configuration(host=API)
    configuration.api_key = {"authorization": "Bearer t0"}
    clock = FakeClock()
    kube = KubeClient(k8s_client.ApiClient(configuration), clock=clock)
    tokens = iter(["t1", "t2"])
    # What the kubeconfig loader installs for tokens, exec plugins and OIDC.
    configuration.refresh_api_key_hook = lambda c: c.api_key.update(
        authorization=f"Bearer {next(tokens)}"
    )
    with HttpMock() as http:
        http.get(f"{API}/api/v1/namespaces/ns/configmaps/a", json={"kind": "ConfigMap"})
        kube.get(CONFIGMAPS, "a", "ns")
        kube.get(CONFIGMAPS, "a", "ns")  # within the interval: the hook is not run again
        clock.advance(AUTH_REFRESH_INTERVAL)
        kube.get(CONFIGMAPS, "a", "ns")
    sent = [call.request.headers["Authorization"] for call in http.calls]
    assert sent == ["Bearer t1", "Bearer t1", "Bearer t2"]


def test_a_token_without_a_refresh_hook_is_read_once() -> None:
    kube, configuration = bearer_client("t0")
    with HttpMock() as http:
        http.get(f"{API}/api/v1/namespaces/ns/configmaps/a", json={"kind": "ConfigMap"})
        kube.get(CONFIGMAPS, "a", "ns")
        configuration.api_key = {"authorization": "Bearer changed"}  # nothing re-reads it
        kube.get(CONFIGMAPS, "a", "ns")
    assert {call.request.headers["Authorization"] for call in http.calls} == {"Bearer t0"}


def test_a_refused_connection_is_a_connection_failed_error() -> None:
    kube, _ = bearer_client("t0")
    with HttpMock(), pytest.raises(ConnectionFailed, match="GET /api/v1/namespaces/ns"):
        kube.get(CONFIGMAPS, "a", "ns")  # nothing registered: refused


def test_a_request_that_could_not_connect_is_tried_again_and_one_that_was_sent_never() -> None:
    kube, _ = bearer_client("t0")
    url = f"{API}/api/v1/namespaces/ns/configmaps/a"
    refused = ConnectFailed("Failed to establish a new connection: [Errno 111] refused")
    with HttpMock() as http:
        for _ in CONNECT_RETRY_PAUSES:
            http.get(url, body=refused)
        http.get(url, json={"kind": "ConfigMap"})
        assert kube.get(CONFIGMAPS, "a", "ns") == {"kind": "ConfigMap"}
    assert len(http.calls) == len(CONNECT_RETRY_PAUSES) + 1
    with HttpMock() as http:
        http.post(f"{API}/api/v1/namespaces/ns/configmaps", body=ReadTimedOut("no answer"))
        with pytest.raises(ConnectionFailed, match="no answer"):
            kube.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "ns")
    assert len(http.calls) == 1  # it may have been acted on: the caller decides


def test_the_lease_client_makes_one_attempt_on_its_own_connections() -> None:
    kube, _ = bearer_client("t0")
    lease_client = kube.without_connect_retries()
    assert lease_client._http is not kube._http
    with HttpMock() as http:
        http.get(f"{API}/api/v1/namespaces/ns/configmaps/a", body=ConnectFailed("refused"))
        with pytest.raises(ConnectionFailed, match="refused"):
            lease_client.get(CONFIGMAPS, "a", "ns")
    assert len(http.calls) == 1
