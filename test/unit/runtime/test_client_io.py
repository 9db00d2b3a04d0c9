"""The Kubernetes client: paths, error typing, keys, watch streams, and requests on real
loopback connections (headers, credentials, what is retried)."""

from __future__ import annotations

import gzip
import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
import urllib3

from baseten_operator.runtime import pools
from baseten_operator.runtime.client import (
    AUTH_REFRESH_INTERVAL,
    CONNECT_RETRY_PAUSES,
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
from baseten_operator.runtime.fence import NotLeader, WriteFence
from baseten_operator.runtime.kubeconfig import (
    ClusterAccess,
    FixedCredentials,
    KubeConfigError,
    TokenFile,
)
from baseten_operator.runtime.pools import ServerPool
from baseten_operator.runtime.resource import CONFIGMAPS, CRDS, LEASES, Resource, object_key
from testsupport.clocks import SleepRecordingClock
from testsupport.polling import wait_for
from testsupport.scripted_http import (
    Peer,
    Request,
    ScriptedServer,
    dropping_reused_connections,
    every_request,
    never_answering,
)


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


def chunked(*lines: bytes, end: bool = True) -> bytes:
    body = b"".join(f"{len(line):x}\r\n".encode() + line + b"\r\n" for line in lines)
    return (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + body
        + (b"0\r\n\r\n" if end else b"")
    )


@pytest.fixture
def stream_of(serve: Callable[..., ScriptedServer]) -> Callable[..., WatchStream]:
    """A WatchStream over a real connection whose answer is `lines`, chunked."""

    def build(*lines: bytes, end: bool = True) -> WatchStream:
        def script(peer: Peer) -> None:
            peer.read_request()
            peer.send(chunked(*lines, end=end))

        pool = ServerPool(serve(script).url)
        timeout = urllib3.Timeout(connect=5, read=5)
        return WatchStream(pool.request("GET", "/w", headers={}, timeout=timeout, stream=True))

    return build


def event(kind: str, obj: dict) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def test_watch_stream_yields_events_and_ends_cleanly(
    stream_of: Callable[..., WatchStream],
) -> None:
    stream = stream_of(
        event("ADDED", {"metadata": {"name": "a"}}),
        b"\n",
        event("BOOKMARK", {"metadata": {"resourceVersion": "9"}}),
    )
    assert [e["type"] for e in stream] == ["ADDED", "BOOKMARK"]


def test_watch_error_event_410_raises_gone(stream_of: Callable[..., WatchStream]) -> None:
    stream = stream_of(
        event("ADDED", {"metadata": {"name": "a"}}),
        event("ERROR", status(410, "Expired")),
    )
    assert next(stream)["type"] == "ADDED"
    with pytest.raises(Gone):
        next(stream)


def test_watch_stream_broken_mid_way_raises_connection_failed(
    stream_of: Callable[..., WatchStream],
) -> None:
    stream = stream_of(event("ADDED", {"metadata": {"name": "a"}}), end=False)
    assert next(stream)["type"] == "ADDED"
    with pytest.raises(ConnectionFailed, match="watch broke: Response ended prematurely"):
        next(stream)


@pytest.mark.parametrize("line", [b"{not json", b"[1, 2]"])
def test_a_watch_line_that_is_not_an_event_is_a_broken_watch(
    stream_of: Callable[..., WatchStream], line: bytes
) -> None:
    with pytest.raises(ConnectionFailed, match="not a watch event"):
        next(stream_of(line + b"\n"))


def test_closed_watch_stream_ends_quietly(stream_of: Callable[..., WatchStream]) -> None:
    stream = stream_of(event("ADDED", {"metadata": {"name": "a"}}))
    stream.close()
    assert list(stream) == []


def test_a_watch_read_to_its_end_leaves_its_connection_for_the_next_request(
    serve: Callable[..., ScriptedServer],
) -> None:
    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(chunked(event("ADDED", {"metadata": {"name": "a"}})))
        while peer.read_request() is not None:
            peer.send(OK)

    server = serve(script)
    kube = bearer_client("t0", server.url)
    assert [e["type"] for e in kube.watch(CONFIGMAPS, "ns")] == ["ADDED"]
    assert kube.get(CONFIGMAPS, "a", "ns") == {"kind": "ConfigMap"}
    assert server.connections == 1


def test_close_from_another_thread_ends_a_watch_blocked_on_a_silent_server(
    serve: Callable[..., ScriptedServer],
) -> None:
    silent = threading.Event()

    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(chunked(event("ADDED", {"metadata": {"name": "a"}}), end=False))
        silent.wait(10)  # then nothing: the reader blocks

    stream = bearer_client("t0", serve(script).url).watch(CONFIGMAPS, "ns", timeout_seconds=60)
    assert next(stream)["type"] == "ADDED"
    outcome: list[BaseException] = []

    def read_on() -> None:
        try:
            next(stream)
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read_on)
    reader.start()
    assert wait_for(stream._reading.locked)  # the reader is in, or about to block
    stream.close()
    reader.join(5)
    silent.set()
    assert not reader.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], StopIteration)


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
    assert client.access.server == "http://127.0.0.1:6443"
    assert client.access.credentials.headers() == {"Authorization": "Bearer secret-token"}
    # Room for every connection one process holds at once (watches, workers, Event writers).
    assert client._http._settings["maxsize"] == 32

    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(KUBECONFIG_YAML)
    assert KubeClient.auto().access.server == "http://127.0.0.1:6443"

    (tmp_path / ".kube" / "config").unlink()
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeConfigError, match="not in a pod"):
        KubeClient.auto()  # neither a kubeconfig nor a pod


def test_from_kubeconfig_selects_the_context(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(
        KUBECONFIG_YAML.replace(
            "clusters: [", "clusters: [{name: c2, cluster: {server: 'http://127.0.0.2:6443'}}, "
        ).replace("{cluster: c, user: u, namespace: other}", "{cluster: c2, user: u}")
    )
    assert KubeClient.from_kubeconfig(str(path)).access.server == "http://127.0.0.1:6443"
    client = KubeClient.from_kubeconfig(str(path), context="two")
    assert client.access.server == "http://127.0.0.2:6443"


PREFIX = "/clusters/c1"  # a server behind a path prefix, as Rancher serves one
CONFIGMAP = b'{"kind": "ConfigMap"}'
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(CONFIGMAP),
    CONFIGMAP,
)


def access(credentials: FixedCredentials | TokenFile, server: str) -> ClusterAccess:
    return ClusterAccess(
        server=server + PREFIX, tls=None, server_hostname=None, proxy=None, credentials=credentials
    )


def bearer_client(token: str, server: str, **options: object) -> KubeClient:
    return KubeClient(
        access(FixedCredentials({"Authorization": f"Bearer {token}"}), server), **options
    )  # type: ignore[arg-type]


def parsed(request: Request) -> tuple[str, str, dict[str, str], dict[str, str]]:
    """(method, path, query, headers by lowercase name) of a request a server read."""
    line, *fields = request[0].decode().split("\r\n")
    method, target, _ = line.split(" ")
    headers = {n.strip().lower(): v.strip() for n, _, v in (f.partition(":") for f in fields)}
    parts = urlsplit(target)
    return method, parts.path, dict(parse_qsl(parts.query)), headers


@pytest.fixture
def api(serve: Callable[..., ScriptedServer]) -> ScriptedServer:
    """A server answering every request with a ConfigMap."""
    return serve(every_request(OK))


def closed_port() -> str:
    """The URL of a port nothing listens on: connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_requests_go_under_the_host_path_with_headers_and_query(api: ScriptedServer) -> None:
    kube = bearer_client("t0", api.url)
    kube.user_agent = "baseten-operator/test (replica-a)"  # set after building
    kube.list(CONFIGMAPS, "ns", label_selector="app in (a,b)", limit=5)
    kube.patch(CONFIGMAPS, "a", {"data": {"k": "v"}}, "ns")
    (list_method, list_path, query, list_headers), patched = (parsed(r) for r in api.requests)
    assert (list_method, list_path) == ("GET", f"{PREFIX}/api/v1/namespaces/ns/configmaps")
    assert query == {"labelSelector": "app in (a,b)", "limit": "5"}
    assert list_headers["authorization"] == "Bearer t0"
    assert list_headers["user-agent"] == "baseten-operator/test (replica-a)"
    assert patched[0] == "PATCH" and patched[1].endswith("/configmaps/a")
    assert patched[3]["content-type"] == "application/merge-patch+json"
    assert json.loads(api.requests[1][1]) == {"data": {"k": "v"}}


def test_a_token_that_can_change_is_asked_for_again_every_few_seconds(
    tmp_path: Path, api: ScriptedServer
) -> None:
    token = tmp_path / "token"
    token.write_text("t1")
    clock = FakeClock()
    kube = KubeClient(access(TokenFile(token), api.url), clock=clock)
    kube.get(CONFIGMAPS, "a", "ns")
    token.write_text("t2")  # rotated
    kube.get(CONFIGMAPS, "a", "ns")  # within the interval: not read again
    clock.advance(AUTH_REFRESH_INTERVAL)
    kube.get(CONFIGMAPS, "a", "ns")
    token.unlink()  # mid-rotation: the last token stands
    clock.advance(AUTH_REFRESH_INTERVAL)
    kube.get(CONFIGMAPS, "a", "ns")
    sent = [parsed(request)[3]["authorization"] for request in api.requests]
    assert sent == ["Bearer t1", "Bearer t1", "Bearer t2", "Bearer t2"]


def test_fixed_credentials_are_read_once(api: ScriptedServer) -> None:
    class Counting(FixedCredentials):
        reads = 0

        def headers(self) -> dict[str, str]:
            Counting.reads += 1
            return super().headers()

    kube = KubeClient(access(Counting({"Authorization": "Bearer t0"}), api.url), clock=FakeClock())
    kube.get(CONFIGMAPS, "a", "ns")
    kube.get(CONFIGMAPS, "a", "ns")
    assert Counting.reads == 1
    assert {parsed(request)[3]["authorization"] for request in api.requests} == {"Bearer t0"}


def test_credentials_that_cannot_be_renewed_fail_the_request_before_it_is_sent(
    api: ScriptedServer,
) -> None:
    class Failing(FixedCredentials):
        changes = True

        def headers(self) -> dict[str, str]:
            raise KubeConfigError("renewing the kubeconfig's credentials failed: exit 1")

    kube = KubeClient(access(Failing({}), api.url), clock=FakeClock())
    with pytest.raises(ConnectionFailed, match="credentials failed: exit 1"):
        kube.get(CONFIGMAPS, "a", "ns")
    assert api.requests == []


def test_a_request_that_could_not_connect_is_tried_again_even_a_post() -> None:
    clock = SleepRecordingClock()
    kube = bearer_client("t0", closed_port(), clock=clock)
    with pytest.raises(ConnectionFailed, match="POST /api/v1/namespaces/ns/configmaps: .*refused"):
        kube.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "ns")
    assert clock.sleeps == list(CONNECT_RETRY_PAUSES)  # one attempt after each pause


def test_a_get_on_a_kept_alive_connection_the_server_just_closed_is_sent_again(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve(dropping_reused_connections(OK))
    kube = bearer_client("t0", server.url)
    assert kube.get(CONFIGMAPS, "a", "ns") == {"kind": "ConfigMap"}
    assert kube.get(CONFIGMAPS, "a", "ns") == {"kind": "ConfigMap"}  # not a failed pass
    assert (len(server.requests), server.connections) == (3, 2)


def test_a_write_that_may_have_reached_the_server_is_never_sent_again(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve(dropping_reused_connections(OK))
    kube = bearer_client("t0", server.url)
    kube.get(CONFIGMAPS, "a", "ns")
    with pytest.raises(ConnectionFailed, match="POST /api/v1/namespaces/ns/configmaps"):
        kube.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "ns")
    assert len(server.requests) == 2  # it may have been acted on: the caller decides


def losing_the_lease_after(checks: int) -> WriteFence:
    """A fence that lets `checks` writes through, then refuses: the Lease was lost."""
    proofs = iter([None] * checks)
    return WriteFence(lambda: next(proofs, "lost the Lease"))


def test_a_write_retried_after_a_refused_connection_passes_the_fence_again() -> None:
    clock = SleepRecordingClock()
    kube = bearer_client("t0", closed_port(), clock=clock).fenced(losing_the_lease_after(1))
    with pytest.raises(NotLeader, match="refused POST /api/v1/namespaces/ns/configmaps"):
        kube.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "ns")
    assert clock.sleeps == [CONNECT_RETRY_PAUSES[0]]  # the second attempt was refused


def test_a_write_sent_again_with_renewed_credentials_passes_the_fence_again(
    serve: Callable[..., ScriptedServer],
) -> None:
    class Renewable(FixedCredentials):
        changes = True

        def renew(self) -> bool:
            return True

    unauthorized = b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\n{}"
    server = serve(every_request(unauthorized))
    kube = KubeClient(
        access(Renewable({"Authorization": "Bearer t0"}), server.url),
        fence=losing_the_lease_after(1),
    )
    with pytest.raises(NotLeader):
        kube.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "ns")
    assert len(server.requests) == 1


def test_the_lease_client_makes_one_attempt_on_its_own_connections() -> None:
    clock = SleepRecordingClock()
    kube = bearer_client("t0", closed_port(), clock=clock)
    lease_client = kube.without_connect_retries()
    assert lease_client._http is not kube._http
    with pytest.raises(ConnectionFailed, match="refused"):
        lease_client.get(CONFIGMAPS, "a", "ns")
    assert clock.sleeps == []


# -- answers parsed by the library (urllib3, http.client), not leniently ----------------------


def answered_with(serve: Callable[..., ScriptedServer], answer: bytes) -> KubeClient:
    return bearer_client("t0", serve(every_request(answer)).url)


def test_a_status_line_with_a_non_ascii_digit_is_a_connection_failure(
    serve: Callable[..., ScriptedServer],
) -> None:
    kube = answered_with(
        serve, "HTTP/1.1 2\u00b200 OK\r\nContent-Length: 2\r\n\r\n{}".encode("latin-1")
    )
    with pytest.raises(ConnectionFailed):  # not a ValueError past the client's handling
        kube.get(CONFIGMAPS, "a", "ns")


def test_transfer_encoding_is_chunked_only_when_it_says_chunked(
    serve: Callable[..., ScriptedServer],
) -> None:
    kube = answered_with(
        serve, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: notchunked\r\nContent-Length: 2\r\n\r\n{}"
    )
    assert kube.get(CONFIGMAPS, "a", "ns") == {}


def test_a_gzip_body_of_several_members_is_read_whole(
    serve: Callable[..., ScriptedServer],
) -> None:
    body = gzip.compress(b'{"kind": ') + gzip.compress(b'"ConfigMap"}')
    head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(body)
    assert answered_with(serve, head + body).get(CONFIGMAPS, "a", "ns") == {"kind": "ConfigMap"}


BOUND = 1000  # pools.MAX_BODY_BYTES, made small for the tests below
_INFLATES = gzip.compress(b"0" * 5000)


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n" + b"x" * 2000,
        chunked(b"x" * 600, b"x" * 600),
        b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 2000,  # ended by the close
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
        % (len(_INFLATES), _INFLATES),  # small as sent, past the bound once decoded
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 2000\r\n\r\n" + b"x" * 2000,
    ],
    ids=["length", "chunked", "close", "gzip", "error-answer"],
)
def test_a_body_past_the_bound_is_refused_as_sent_or_once_decoded(
    serve: Callable[..., ScriptedServer], monkeypatch: pytest.MonkeyPatch, answer: bytes
) -> None:
    monkeypatch.setattr(pools, "MAX_BODY_BYTES", BOUND)

    def once(peer: Peer) -> None:  # then the connection closes
        peer.read_request()
        peer.send(answer)

    kube = bearer_client("t0", serve(once).url)
    with pytest.raises(ConnectionFailed, match=f"GET .*answer body larger than {BOUND} bytes"):
        kube.get(CONFIGMAPS, "a", "ns")


def test_a_body_within_the_bound_keeps_its_connection(
    serve: Callable[..., ScriptedServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pools, "MAX_BODY_BYTES", len(CONFIGMAP))
    server = serve(every_request(OK))
    kube = bearer_client("t0", server.url)
    assert kube.get(CONFIGMAPS, "a", "ns") == {"kind": "ConfigMap"}  # exactly the bound: read
    assert kube.get(CONFIGMAPS, "a", "ns") == {"kind": "ConfigMap"}
    assert server.connections == 1


def test_a_watch_line_past_the_bound_breaks_the_watch(
    stream_of: Callable[..., WatchStream], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pools, "MAX_BODY_BYTES", BOUND)
    stream = stream_of(event("ADDED", {"metadata": {"name": "a"}}), b"x" * 600, b"x" * 600)
    assert next(stream)["type"] == "ADDED"
    with pytest.raises(ConnectionFailed, match=f"watch broke: a streamed line longer than {BOUND}"):
        next(stream)


def test_a_get_that_timed_out_is_not_sent_again_by_the_pool(
    serve: Callable[..., ScriptedServer],
) -> None:
    answered = threading.Event()
    server = serve(never_answering(answered))
    kube = bearer_client("t0", server.url)
    with pytest.raises(ConnectionFailed, match="timed out"):
        kube.get(CONFIGMAPS, "a", "ns", timeout=0.3)
    answered.set()
    assert len(server.requests) == 1  # its time is spent: the caller decides
