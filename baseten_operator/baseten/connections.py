"""Where the Baseten client's requests go: one connection pool, its TLS trust and its proxy.

Everything a request would otherwise look up each time is settled once, when a client is
built, from the variables `requests` read on every call:
- TLS (an https base URL: every real one) is always verified, against REQUESTS_CA_BUNDLE,
  CURL_CA_BUNDLE or SSL_CERT_FILE when one is set (a file, or a directory of
  certificates), else certifi's bundle;
- a proxy comes from the proxy variables (runtime/proxies.py); a proxy URL's user:password
  becomes its Proxy-Authorization.
Connections are kept alive (runtime/http1.py). Nothing is retried or redirected here: the
transport decides what may be repeated.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable, Mapping
from typing import Protocol
from urllib.parse import urlsplit

import certifi

from baseten_operator.baseten.deadlines import register_with_deadline
from baseten_operator.runtime.http1 import Answer, Pool
from baseten_operator.runtime.proxies import proxy_for, proxy_from_url

# Checked in this order, as `requests` did, plus OpenSSL's own variable.
CA_BUNDLE_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")


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


def trusted_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """A verifying TLS context that trusts `ca_bundle`'s certificates."""
    trusted = ca_bundle(environ)
    if os.path.isdir(trusted):
        return ssl.create_default_context(capath=trusted)
    return ssl.create_default_context(cafile=trusted)


class Connections:
    """Kept-alive connections to one base URL, directly or through a proxy."""

    def __init__(
        self, base_url: str, pool_size: int = 32, environ: Mapping[str, str] = os.environ
    ) -> None:
        # Loading the trusted CAs costs about 2.5 MB and 30 ms: only an https base URL
        # (every real one) needs them; a plain-HTTP one (a simulator) never verifies.
        https = urlsplit(base_url).scheme == "https"
        proxy = proxy_for(base_url, environ)
        self._pool = Pool(
            base_url,
            tls=trusted_context(environ) if https else None,
            proxy=None if proxy is None else proxy_from_url(proxy),
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
