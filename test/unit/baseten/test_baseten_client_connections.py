"""Where requests go: the CA bundle and the proxy, read from the environment once."""

from __future__ import annotations

from pathlib import Path

import certifi
import pytest
import urllib3

from baseten_operator.baseten.connections import Connections, ca_bundle, proxy_for

BASE = "https://api.baseten.co/v1"


def test_tls_trusts_certifi_unless_a_bundle_variable_names_another(tmp_path: Path) -> None:
    assert ca_bundle({}) == certifi.where()
    assert ca_bundle({"SSL_CERT_FILE": "/etc/ssl/corp.pem"}) == "/etc/ssl/corp.pem"
    # requests' own variables first, as requests read them.
    both = {"SSL_CERT_FILE": "/etc/ssl/corp.pem", "REQUESTS_CA_BUNDLE": "/opt/ca.pem"}
    assert ca_bundle(both) == "/opt/ca.pem"
    assert ca_bundle({"CURL_CA_BUNDLE": "/opt/curl.pem", "SSL_CERT_FILE": "x"}) == "/opt/curl.pem"
    assert ca_bundle({"REQUESTS_CA_BUNDLE": "  "}) == certifi.where()  # blank is unset


def test_connections_verify_tls_against_the_bundle_file_or_directory(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text(Path(certifi.where()).read_text())
    pool = Connections(BASE, 4, {"SSL_CERT_FILE": str(bundle)})._pool
    assert isinstance(pool, urllib3.HTTPSConnectionPool)
    assert (pool.cert_reqs, pool.ca_certs) == ("CERT_REQUIRED", str(bundle))
    pool = Connections(BASE, 4, {"SSL_CERT_FILE": str(tmp_path)})._pool
    assert isinstance(pool, urllib3.HTTPSConnectionPool)
    assert (pool.ca_cert_dir, pool.ca_certs) == (str(tmp_path), None)


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
    connections = Connections(BASE, 4, environ)
    manager = connections._manager
    assert isinstance(manager, urllib3.ProxyManager)
    assert manager.proxy is not None and manager.proxy.url == "http://proxy:3128"
    assert (
        manager.proxy_headers["proxy-authorization"]
        == urllib3.make_headers(proxy_basic_auth="user:p@ss")["proxy-authorization"]
    )
    # HTTPS goes through a CONNECT tunnel: the pool is the API host's, not the proxy's.
    assert connections._pool.host == "api.baseten.co"
    assert not connections._forwarded


def test_plain_http_through_a_proxy_is_forwarded_to_it() -> None:
    connections = Connections("http://api.test/v1", 4, {"HTTP_PROXY": "http://proxy:3128"})
    assert connections._forwarded
    assert isinstance(connections._manager, urllib3.ProxyManager)
