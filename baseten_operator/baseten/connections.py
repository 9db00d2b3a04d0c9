"""Where the Baseten client's requests go: one urllib3 pool, its TLS trust and its proxy.

Everything a request would otherwise look up each time is settled once, when a client is
built, from the variables `requests` read on every call:
- TLS is always verified, against REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE or SSL_CERT_FILE when
  one is set (a file, or a directory of certificates), else certifi's bundle;
- a proxy comes from HTTPS_PROXY / HTTP_PROXY / ALL_PROXY (either case) for the base URL's
  scheme, unless NO_PROXY covers its host; a proxy URL's user:password becomes its
  Proxy-Authorization.
Connections are pooled per host and kept alive. urllib3 never retries or follows a
redirect here: the transport decides what may be repeated.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Mapping
from typing import Protocol
from urllib.parse import SplitResult, unquote, urlsplit

import certifi
import urllib3

from baseten_operator.baseten.deadlines import deadline_pool_classes

# Checked in this order, as `requests` did, plus OpenSSL's own variable.
CA_BUNDLE_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Pools kept: the API's host, and a few more only when a proxy or a redirect of the
# base URL's host would need them.
_NUM_POOLS = 4


class HttpSender(Protocol):
    """What the transport sends through: one request, its whole answer read."""

    def send(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None,
        headers: Mapping[str, str],
        timeout: urllib3.Timeout,
    ) -> urllib3.BaseHTTPResponse: ...


# How a client reaches its base URL: the base URL in, what sends its requests out.
Connect = Callable[[str], HttpSender]


def ca_bundle(environ: Mapping[str, str]) -> str:
    """The file or directory of trusted CA certificates."""
    for variable in CA_BUNDLE_VARIABLES:
        value = environ.get(variable, "").strip()
        if value:
            return value
    return certifi.where()


def proxy_for(url: str, environ: Mapping[str, str]) -> str | None:
    """The proxy a request to `url` goes through, per the proxy variables; None for none."""
    proxies = _proxies_from(environ)
    parts = urlsplit(url)
    if parts.hostname and _bypassed(parts, proxies):
        return None
    return proxies.get(parts.scheme) or proxies.get("all") or None


def _proxies_from(environ: Mapping[str, str]) -> dict[str, str]:
    """urllib's `getproxies_environment` over `environ`: {"https": url, "no": hosts, ...},
    a lowercase variable winning over its uppercase twin."""
    proxies: dict[str, str] = {}
    for name, value in environ.items():
        key = name.lower()
        if value and key.endswith("_proxy") and (name == key or key not in environ):
            proxies[key.removesuffix("_proxy")] = value
    return proxies


def _bypassed(parts: SplitResult, proxies: Mapping[str, str]) -> bool:
    """Whether NO_PROXY covers the URL's host: `*`, the host or a parent domain (with or
    without a leading dot, optionally with the port), or an IP address or network."""
    host = (parts.hostname or "").lower()
    for entry in (e.strip().lower() for e in proxies.get("no", "").split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        name, _, port = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
        if port and str(parts.port or _DEFAULT_PORTS.get(parts.scheme)) != port:
            continue
        if _in_network(host, name):
            return True
        name = name.lstrip(".")
        if host == name or host.endswith("." + name):
            return True
    return False


def _has_port(entry: str) -> bool:
    """`host:port` (one colon, digits after it); an IPv6 address has several colons."""
    return entry.count(":") == 1 and entry.rpartition(":")[2].isdigit()


def _in_network(host: str, entry: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")) in ipaddress.ip_network(
            entry.strip("[]"), strict=False
        )
    except ValueError:
        return False  # not an address, or not a network


class Connections:
    """A keep-alive pool for one base URL, directly or through a proxy."""

    def __init__(
        self, base_url: str, pool_size: int = 32, environ: Mapping[str, str] = os.environ
    ) -> None:
        trusted = ca_bundle(environ)
        directory = os.path.isdir(trusted)
        ca_certs, ca_cert_dir = (None, trusted) if directory else (trusted, None)
        proxy = proxy_for(base_url, environ)
        manager: urllib3.PoolManager
        if proxy is None:
            manager = urllib3.PoolManager(
                num_pools=_NUM_POOLS,
                maxsize=pool_size,
                cert_reqs="CERT_REQUIRED",
                ca_certs=ca_certs,
                ca_cert_dir=ca_cert_dir,
            )
        else:
            manager = urllib3.ProxyManager(
                _without_credentials(proxy),
                num_pools=_NUM_POOLS,
                maxsize=pool_size,
                proxy_headers=_proxy_headers(proxy),
                cert_reqs="CERT_REQUIRED",
                ca_certs=ca_certs,
                ca_cert_dir=ca_cert_dir,
            )
        manager.pool_classes_by_scheme = deadline_pool_classes()
        origin = urlsplit(base_url)
        self._origin = f"{origin.scheme}://{origin.netloc}"
        # A plain-HTTP request through a proxy is forwarded (the proxy's pool, an absolute
        # URL): the manager does that. Anything else goes straight to the host's pool.
        self._forwarded = proxy is not None and origin.scheme == "http"
        self._manager = manager
        self._pool = manager.connection_from_url(base_url)

    def send(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None,
        headers: Mapping[str, str],
        timeout: urllib3.Timeout,
    ) -> urllib3.BaseHTTPResponse:
        """`target` is the path and query under the base URL's origin."""
        if self._forwarded:
            return self._manager.urlopen(
                method,
                self._origin + target,
                body=body,
                headers=headers,
                timeout=timeout,
                retries=False,
                redirect=False,
                preload_content=True,
            )
        return self._pool.urlopen(
            method,
            target,
            body=body,
            headers=headers,
            timeout=timeout,
            retries=False,
            redirect=False,
            assert_same_host=False,
            preload_content=True,
        )

    def close(self) -> None:
        self._manager.clear()


def _without_credentials(proxy: str) -> str:
    parts = urlsplit(proxy)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return parts._replace(netloc=netloc).geturl()


def _proxy_headers(proxy: str) -> dict[str, str] | None:
    parts = urlsplit(proxy)
    if parts.username is None:
        return None
    credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return urllib3.make_headers(proxy_basic_auth=credentials)
