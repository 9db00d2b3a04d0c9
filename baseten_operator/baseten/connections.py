"""Where the Baseten client's requests go: one connection pool, its TLS trust and its proxy.

Everything a request would otherwise look up each time is settled once, when a client is
built, from the variables `requests` read on every call:
- TLS is always verified, against REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE or SSL_CERT_FILE when
  one is set (a file, or a directory of certificates), else certifi's bundle;
- a proxy comes from HTTPS_PROXY / HTTP_PROXY / ALL_PROXY (either case) for the base URL's
  scheme, unless NO_PROXY covers its host; a proxy URL's user:password becomes its
  Proxy-Authorization.
Connections are kept alive (runtime/http1.py). Nothing is retried or redirected here: the
transport decides what may be repeated.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import ssl
from collections.abc import Callable, Mapping
from typing import Protocol
from urllib.parse import SplitResult, unquote, urlsplit

import certifi

from baseten_operator.baseten.deadlines import register_with_deadline
from baseten_operator.runtime.http1 import Answer, Pool, Proxy

# Checked in this order, as `requests` did, plus OpenSSL's own variable.
CA_BUNDLE_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class HttpSender(Protocol):
    """What the transport sends through: one request, its whole answer read."""

    def send(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None,
        headers: Mapping[str, str],
        connect_timeout: float,
        read_timeout: float,
    ) -> Answer: ...


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
    """Kept-alive connections to one base URL, directly or through a proxy."""

    def __init__(
        self, base_url: str, pool_size: int = 32, environ: Mapping[str, str] = os.environ
    ) -> None:
        trusted = ca_bundle(environ)
        if os.path.isdir(trusted):
            tls = ssl.create_default_context(capath=trusted)
        else:
            tls = ssl.create_default_context(cafile=trusted)
        proxy = proxy_for(base_url, environ)
        self._pool = Pool(
            base_url,
            tls=tls,
            proxy=None if proxy is None else _proxy(proxy),
            maxsize=pool_size,
            # A call's deadline shuts down the socket of every connection the call used.
            on_use=register_with_deadline,
        )

    def send(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None,
        headers: Mapping[str, str],
        connect_timeout: float,
        read_timeout: float,
    ) -> Answer:
        """`target` is the path and query under the base URL's origin."""
        return self._pool.request(
            method,
            target,
            headers=headers,
            body=body,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
        )

    def close(self) -> None:
        self._pool.close()


def _proxy(url: str) -> Proxy:
    """The proxy of `url`, its user:password (if any) moved into Proxy-Authorization."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    headers = {}
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
    return Proxy(parts._replace(netloc=netloc).geturl(), headers)
