"""Where requests go: the CA bundle and the proxy, read from the environment once."""

from __future__ import annotations

import base64
import http.server
import ssl
import subprocess
import threading
from pathlib import Path

import certifi
import pytest

from baseten_operator.baseten.connections import Connections, ca_bundle
from baseten_operator.runtime.http1 import Proxy, TLSFailed
from baseten_operator.runtime.proxies import proxy_for
from baseten_operator.runtime.tlscert import self_signed_pem

BASE = "https://api.baseten.co/v1"


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
    return answer.status


def test_connections_verify_tls_against_the_bundle_file_or_directory(tmp_path: Path) -> None:
    cert, url = _tls_server(tmp_path)
    assert _get(Connections(url, 4, {"SSL_CERT_FILE": str(cert)})) == 200
    with pytest.raises(TLSFailed, match="CERTIFICATE_VERIFY_FAILED"):
        _get(Connections(url, 4, {}))  # certifi's CAs do not know it
    # A directory is OpenSSL's hashed-name store.
    store = tmp_path / "cas"
    store.mkdir()
    subject_hash = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(cert)],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    with pytest.raises(TLSFailed):
        _get(Connections(url, 4, {"REQUESTS_CA_BUNDLE": str(store)}))
    (store / f"{subject_hash}.0").write_bytes(cert.read_bytes())
    assert _get(Connections(url, 4, {"REQUESTS_CA_BUNDLE": str(store)})) == 200


@pytest.mark.parametrize(
    ("environ", "proxy"),
    [
        ({}, None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "http://proxy:3128"),
        ({"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2"}, "http://lower:1"),
        ({"HTTP_PROXY": "http://plain:3128"}, None),  # another scheme's
        ({"ALL_PROXY": "http://all:3128"}, "http://all:3128"),
        ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "baseten.co"}, None),
        ({"HTTPS_PROXY": "http://proxy:3128", "no_proxy": "*"}, None),
        ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "example.com"}, "http://proxy:3128"),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "x.org, .baseten.co"}, None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "api.baseten.co:443"}, None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "api.baseten.co:8443"}, "http://p:1"),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "ten.co"}, "http://p:1"),  # not a parent
    ],
)
def test_the_proxy_follows_the_proxy_variables(environ: dict[str, str], proxy: str | None) -> None:
    assert proxy_for(BASE, environ) == proxy


@pytest.mark.parametrize(
    ("url", "no_proxy", "bypassed"),
    [
        ("http://10.1.2.3:8080/v1", "10.0.0.0/8", True),
        ("http://10.1.2.3:8080/v1", "10.1.2.3", True),
        ("http://192.168.1.1/v1", "10.0.0.0/8", False),
        ("http://[::1]:8080/v1", "::1", True),
        ("http://localhost:8080/v1", "localhost", True),
    ],
)
def test_no_proxy_takes_addresses_and_networks(url: str, no_proxy: str, bypassed: bool) -> None:
    environ = {"HTTP_PROXY": "http://p:1", "NO_PROXY": no_proxy}
    assert (proxy_for(url, environ) is None) == bypassed


def test_a_proxy_tunnels_https_and_carries_its_credentials() -> None:
    environ = {"HTTPS_PROXY": "http://user:p%40ss@proxy:3128"}
    pool = Connections(BASE, 4, environ)._pool
    credentials = base64.b64encode(b"user:p@ss").decode()
    assert pool._proxy == Proxy(
        "http://proxy:3128", {"Proxy-Authorization": f"Basic {credentials}"}
    )
    # HTTPS goes through a CONNECT tunnel to the API's host (runtime/http1.py tests both ways).
    assert (pool.host, pool._forwarded) == ("api.baseten.co", False)


def test_plain_http_through_a_proxy_is_forwarded_to_it() -> None:
    pool = Connections("http://api.test/v1", 4, {"HTTP_PROXY": "http://proxy:3128"})._pool
    assert pool._forwarded
    assert pool._proxy == Proxy("http://proxy:3128", {})
