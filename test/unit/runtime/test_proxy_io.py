"""The Kubernetes client through real forward proxies on loopback (testsupport's), and
NO_PROXY read as kubectl reads it.

The API server is `api.test`, a name nothing resolves but the proxy: a request that is
answered went through the proxy.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from baseten_operator.runtime import kubeconfig
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.errors import ConnectionFailed
from baseten_operator.runtime.proxyenv import proxy_for
from baseten_operator.runtime.resource import CONFIGMAPS
from testsupport.forward_proxy import ForwardProxy, ipv6_loopback
from testsupport.scripted_http import ScriptedServer, every_request
from testsupport.tls import serving_context

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

Api = tuple[ScriptedServer, bytes]  # the server and its certificate


@pytest.fixture
def api(serve: Callable[..., ScriptedServer]) -> Api:
    """The API server, HTTPS for `api.test`."""
    context, cert = serving_context("api.test")
    return serve(every_request(OK), context), cert


def client_of(
    api: Api, tmp_path: Path, environ: dict[str, str], scheme: str = "https"
) -> KubeClient:
    """A client of `api.test` (trusting its certificate) in a process whose environment
    is `environ`."""
    server, cert = api
    cluster = {"server": f"{scheme}://api.test:{server.port}"}
    if scheme == "https":
        cluster["certificate-authority-data"] = base64.b64encode(cert).decode()
    path = tmp_path / "config"
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return KubeClient(kubeconfig.from_kubeconfig(str(path), environ=environ))


def test_a_proxy_written_without_a_scheme_is_an_http_proxy(
    api: Api, proxies: Callable[..., ForwardProxy], tmp_path: Path
) -> None:
    proxy = proxies()
    kube = client_of(api, tmp_path, {"HTTPS_PROXY": proxy.address})  # "127.0.0.1:port"
    assert kube.get(CONFIGMAPS, "a", "ns") == {}
    assert [asked.line.rpartition(" ")[0] for asked in proxy.asked] == [
        f"CONNECT api.test:{api[0].port}"
    ]


def test_an_https_proxy_is_spoken_to_over_tls_and_gets_its_credentials_there(
    api: Api, proxies: Callable[..., ForwardProxy], tmp_path: Path
) -> None:
    context, proxy_cert = serving_context("127.0.0.1")
    proxy = proxies(tls=context)
    (tmp_path / "proxy-ca.pem").write_bytes(proxy_cert)
    environ = {
        "HTTPS_PROXY": f"https://ann:s%40cret@{proxy.address}",
        "SSL_CERT_FILE": str(tmp_path / "proxy-ca.pem"),  # what the proxy is trusted by
    }
    kube = client_of(api, tmp_path, environ)
    assert kube.get(CONFIGMAPS, "a", "ns") == {}
    # The proxy read the credentials only inside its TLS: they never crossed in clear.
    assert proxy.asked[0].authorization == "Basic " + base64.b64encode(b"ann:s@cret").decode()


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 on this machine")
def test_an_ipv6_proxy_carries_requests(
    api: Api, proxies: Callable[..., ForwardProxy], tmp_path: Path
) -> None:
    proxy = proxies("::1")
    kube = client_of(api, tmp_path, {"HTTPS_PROXY": proxy.url})  # http://[::1]:port
    assert kube.get(CONFIGMAPS, "a", "ns") == {}
    assert len(proxy.asked) == 1


def test_plain_http_through_a_proxy_is_forwarded_to_it(
    serve: Callable[..., ScriptedServer], proxies: Callable[..., ForwardProxy], tmp_path: Path
) -> None:
    server = serve(every_request(OK))
    proxy = proxies()
    kube = client_of((server, b""), tmp_path, {"HTTP_PROXY": proxy.url}, scheme="http")
    assert kube.get(CONFIGMAPS, "a", "ns") == {}
    assert proxy.asked[0].line.startswith(f"GET http://api.test:{server.port}/api/v1/")


def test_a_host_no_proxy_covers_is_reached_directly(
    api: Api, proxies: Callable[..., ForwardProxy], tmp_path: Path
) -> None:
    proxy = proxies()
    environ = {"HTTPS_PROXY": proxy.url, "NO_PROXY": "*.test"}
    with pytest.raises(ConnectionFailed):  # api.test resolves nowhere but in the proxy
        client_of(api, tmp_path, environ).get(CONFIGMAPS, "a", "ns")
    assert proxy.asked == []


@pytest.mark.parametrize(
    ("url", "no_proxy", "bypassed"),
    [
        ("https://api.example.com", "*.example.com", True),  # kubectl's wildcard
        ("https://example.com", "*.example.com", False),  # subdomains only
        ("https://example.com", "example.com", True),
        ("https://a.b.example.com", "example.com", True),
        ("https://api.example.com", ".example.com", True),
        ("https://ample.com", "example.com", False),
        ("https://[fd00::1]:6443", "[fd00::1]:6443", True),  # kubectl's [v6]:port
        ("https://[fd00::1]:6443", "[fd00::1]:443", False),
        ("https://[fd00::1]:6443", "fd00::1", True),
        ("https://[fd00::1]:6443", "[fd00::1]", True),
        ("https://[fd00::1]:6443", "fd00::/16", True),
        ("https://10.1.2.3:6443", "10.0.0.0/8", True),
        ("https://10.1.2.3:6443", "10.1.2.3:6443", True),
        ("https://10.1.2.3", "10.1.2.3:6443", False),
        ("https://api.example.com", "api.example.com:443", True),  # the scheme's port
        ("https://api.example.com", "a.org example.com", True),  # spaces separate too
        ("https://api.example.com", "*", True),
    ],
)
def test_no_proxy_is_read_as_kubectl_reads_it(url: str, no_proxy: str, bypassed: bool) -> None:
    environ = {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": no_proxy}
    assert (proxy_for(url, environ) is None) == bypassed


@pytest.mark.parametrize(
    ("environ", "proxy"),
    [
        ({}, None),
        ({"HTTPS_PROXY": "proxy.corp:3128"}, "http://proxy.corp:3128"),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "http://proxy:3128"),
        ({"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2"}, "http://lower:1"),
        ({"HTTP_PROXY": "http://plain:3128"}, None),  # another scheme's
        ({"ALL_PROXY": "http://all:3128"}, "http://all:3128"),
    ],
)
def test_the_proxy_follows_the_proxy_variables(environ: dict[str, str], proxy: str | None) -> None:
    assert proxy_for("https://api.example.com", environ) == proxy
