"""Where requests go: the CA bundle and the proxy, read from the environment once, and
real traffic through the session: TLS verification, forward proxies on loopback
(testsupport's), and what urllib3 may send again on its own."""

from __future__ import annotations

import base64
import http.server
import random
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import certifi
import pytest
import requests

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.connections import Connections, ca_bundle
from baseten_operator.baseten.errors import BasetenAPIError, ConfigError
from baseten_operator.runtime import pools
from baseten_operator.runtime.tlscert import self_signed_pem
from testsupport.clocks import SleepRecordingClock
from testsupport.forward_proxy import ForwardProxy, ipv6_loopback
from testsupport.scripted_http import (
    ScriptedServer,
    answering,
    dropping_reused_connections,
    every_request,
    never_answering,
)
from testsupport.tls import serving_context

BASE = "https://api.baseten.co/v1"
MODELS = b'{"models": []}'
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(MODELS),
    MODELS,
)


def test_tls_trusts_certifi_unless_a_bundle_variable_names_another(tmp_path: Path) -> None:
    assert ca_bundle({}) == certifi.where()
    assert ca_bundle({"SSL_CERT_FILE": "/etc/ssl/corp.pem"}) == "/etc/ssl/corp.pem"
    # requests' own variables first, as requests read them.
    both = {"SSL_CERT_FILE": "/etc/ssl/corp.pem", "REQUESTS_CA_BUNDLE": "/opt/ca.pem"}
    assert ca_bundle(both) == "/opt/ca.pem"
    assert ca_bundle({"CURL_CA_BUNDLE": "/opt/curl.pem", "SSL_CERT_FILE": "x"}) == "/opt/curl.pem"
    assert ca_bundle({"REQUESTS_CA_BUNDLE": "  "}) == certifi.where()  # blank is unset


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


def _serve(tls: ssl.SSLContext | None = None) -> int:
    """A server answering `{}` to everything; its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def _tls_server(tmp_path: Path) -> tuple[Path, str]:
    """An HTTPS server for `localhost`, and its certificate."""
    cert_pem, key_pem = self_signed_pem(("localhost",))
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    cert.write_bytes(cert_pem)
    key.write_bytes(key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return cert, f"https://localhost:{_serve(context)}"


def test_a_plain_http_base_url_loads_no_trusted_certificates() -> None:
    # Loading this bundle would fail: a client of a plain-HTTP simulator never tries.
    missing = {"SSL_CERT_FILE": "/nonexistent/ca.pem"}
    assert _get(Connections(f"http://127.0.0.1:{_serve()}", 4, missing)) == 200
    with pytest.raises(FileNotFoundError):
        Connections(BASE, 4, missing)


def _get(connections: Connections) -> int:
    answer = connections.send(
        "GET", "/v1/models", body=None, headers={}, connect_timeout=5, read_timeout=5
    )
    return answer.status_code


def test_connections_verify_tls_against_the_bundle_file_or_directory(tmp_path: Path) -> None:
    cert, url = _tls_server(tmp_path)
    assert _get(Connections(url, 4, {"SSL_CERT_FILE": str(cert)})) == 200
    with pytest.raises(requests.exceptions.SSLError, match="CERTIFICATE_VERIFY_FAILED"):
        _get(Connections(url, 4, {}))  # certifi's CAs do not know it
    # A directory is OpenSSL's hashed-name store.
    store = tmp_path / "cas"
    store.mkdir()
    subject_hash = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(cert)],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    with pytest.raises(requests.exceptions.SSLError):
        _get(Connections(url, 4, {"REQUESTS_CA_BUNDLE": str(store)}))
    (store / f"{subject_hash}.0").write_bytes(cert.read_bytes())
    assert _get(Connections(url, 4, {"REQUESTS_CA_BUNDLE": str(store)})) == 200


# -- real traffic through proxies -----------------------------------------------------------
# The API is `api.test`, a name nothing resolves but the proxy: a call that is answered
# went through the proxy.


@pytest.fixture
def api(serve: Callable[..., ScriptedServer], tmp_path: Path) -> tuple[int, Path]:
    """An HTTPS API for `api.test` answering every call with no models: its port, and a
    CA bundle that trusts it."""
    context, cert = serving_context("api.test")
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(cert)
    return serve(every_request(OK), context).port, bundle


def client(
    port: int, environ: dict[str, str], clock: SleepRecordingClock | None = None
) -> BasetenClient:
    return BasetenClient(
        "k",
        f"https://api.test:{port}/v1",
        connect=lambda url: Connections(url, 4, environ),
        clock=clock or SleepRecordingClock(),
        rng=random.Random(7),
    )


def test_a_proxy_written_without_a_scheme_is_an_http_proxy(
    api: tuple[int, Path], proxies: Callable[..., ForwardProxy]
) -> None:
    port, bundle = api
    proxy = proxies()
    environ = {"HTTPS_PROXY": proxy.address, "SSL_CERT_FILE": str(bundle)}  # "127.0.0.1:port"
    assert client(port, environ).list_models() == []
    assert [asked.line.rpartition(" ")[0] for asked in proxy.asked] == [f"CONNECT api.test:{port}"]


def test_an_https_proxy_is_spoken_to_over_tls_and_gets_its_credentials_there(
    api: tuple[int, Path], proxies: Callable[..., ForwardProxy]
) -> None:
    port, bundle = api
    context, proxy_cert = serving_context("127.0.0.1")
    proxy = proxies(tls=context)
    bundle.write_bytes(bundle.read_bytes() + proxy_cert)  # a corporate bundle trusts both
    environ = {"HTTPS_PROXY": f"https://ann:s%40cret@{proxy.address}", "SSL_CERT_FILE": str(bundle)}
    assert client(port, environ).list_models() == []
    # The proxy read the credentials only inside its TLS: they never crossed in clear.
    assert proxy.asked[0].authorization == "Basic " + base64.b64encode(b"ann:s@cret").decode()


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 on this machine")
def test_an_ipv6_proxy_carries_calls(
    api: tuple[int, Path], proxies: Callable[..., ForwardProxy]
) -> None:
    port, bundle = api
    proxy = proxies("::1")
    environ = {"HTTPS_PROXY": proxy.url, "SSL_CERT_FILE": str(bundle)}  # http://[::1]:port
    assert client(port, environ).list_models() == []
    assert len(proxy.asked) == 1


def test_a_host_no_proxy_covers_is_reached_directly(
    api: tuple[int, Path], proxies: Callable[..., ForwardProxy]
) -> None:
    port, bundle = api
    proxy = proxies()
    environ = {"HTTPS_PROXY": proxy.url, "NO_PROXY": "*.test", "SSL_CERT_FILE": str(bundle)}
    with pytest.raises(BasetenAPIError) as caught:  # api.test resolves nowhere but there
        BasetenClient(
            "k", f"https://api.test:{port}/v1", clock=SleepRecordingClock(), max_attempts=1,
            connect=lambda url: Connections(url, 4, environ),
        ).list_models()  # fmt: skip
    assert caught.value.is_connection_error
    assert proxy.asked == []


# -- what is sent again -------------------------------------------------------------------


def test_a_get_on_a_kept_alive_connection_the_server_just_closed_is_sent_again_at_once(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve(dropping_reused_connections(OK))
    clock = SleepRecordingClock()
    baseten = BasetenClient("k", f"{server.url}/v1", clock=clock)
    assert baseten.list_models() == []
    assert baseten.list_models() == []
    assert clock.sleeps == []  # no backoff: the GET went again on a fresh connection
    assert (len(server.requests), server.connections) == (3, 2)


def test_a_post_that_may_have_reached_the_server_is_not_sent_again(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve(dropping_reused_connections(OK))
    baseten = BasetenClient("k", f"{server.url}/v1", clock=SleepRecordingClock())
    baseten.list_models()
    with pytest.raises(BasetenAPIError, match="connection error on POST"):
        baseten.activate_deployment("m1", "d1")
    assert len(server.requests) == 2


def test_a_post_that_could_not_connect_is_tried_again(unused_port: int) -> None:
    clock = SleepRecordingClock()
    baseten = BasetenClient("k", f"http://127.0.0.1:{unused_port}/v1", clock=clock, max_attempts=3)
    with pytest.raises(BasetenAPIError, match="Connection refused") as caught:
        baseten.activate_deployment("m1", "d1")
    assert caught.value.status_code == 0
    assert len(clock.sleeps) == 2  # backed off between the three attempts


def test_an_answer_body_past_the_bound_is_refused_and_its_connection_dropped(
    serve: Callable[..., ScriptedServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pools, "MAX_BODY_BYTES", len(MODELS))
    large = b'{"models": [], "padding": "%s"}' % (b"x" * 2 * pools.READ_BYTES)  # left unread
    server = serve(
        answering(
            OK,
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(large), large),
            OK,
        )
    )
    baseten = BasetenClient("k", f"{server.url}/v1", clock=SleepRecordingClock(), max_attempts=1)
    assert baseten.list_models() == []  # exactly the bound: read
    refused = f"ConnectionError: answer body larger than {len(MODELS)} bytes"
    with pytest.raises(BasetenAPIError, match=refused):
        baseten.list_models()
    assert baseten.list_models() == []
    assert server.connections == 2  # the half-read answer's connection was not reused


@pytest.fixture
def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("key", ["sk-abc\nX-Injected: yes", "sk-abc\rdef", "sk-ä"])
def test_a_key_no_header_can_carry_is_a_clear_configuration_error(key: str) -> None:
    with pytest.raises(ConfigError, match="line break or another character"):
        BasetenClient(key, BASE)


def test_a_get_that_timed_out_is_not_sent_again_by_the_pool(
    serve: Callable[..., ScriptedServer],
) -> None:
    answered = threading.Event()
    server = serve(never_answering(answered))
    baseten = BasetenClient(
        "k", f"{server.url}/v1", clock=SleepRecordingClock(), timeout=0.3, max_attempts=1
    )
    with pytest.raises(BasetenAPIError, match="^timeout on GET /v1/models"):
        baseten.list_models()
    answered.set()
    assert len(server.requests) == 1
