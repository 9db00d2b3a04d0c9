"""Where the Baseten client's requests go: one `requests` transport adapter per client (so
one per API key), its pool of kept-alive connections, its TLS trust and its proxy.

Everything a request would otherwise look up each time is settled once, when a client is
built; nothing reads the environment per request:
- TLS (an https base URL: every real one) is always verified, against REQUESTS_CA_BUNDLE,
  CURL_CA_BUNDLE or SSL_CERT_FILE when one is set (a file, or a directory of
  certificates), else certifi's bundle (runtime/trust.py): one context, loaded once, for
  the API and for an https:// proxy;
- the proxy comes from the proxy variables as kubectl reads them (runtime/proxyenv.py);
  requests takes a proxy URL's user:password as its Proxy-Authorization.
The adapter's pool holds `pool_size` connections; each connection a call uses is bounded
by the call's total deadline (deadlines.py), each answer's body by runtime/pools.py's
MAX_BODY_BYTES. urllib3 repeats on its own only a GET whose
kept-alive connection broke before an answer (runtime/pools.py SAFE_RETRY); nothing is
redirected. Everything else is the transport's to decide.

Requests are prepared here, only the parts the transport sets (a `PreparedRequest`'s
method, URL, headers and body: no parameters to encode, no hooks, no auth) and handed to the
adapter (`HTTPAdapter.send`, requests' transport API), not sent through a `Session`: a Session
merges its settings and cookie jar into every request, runs hooks and extracts cookies
from every answer, none of which the transport uses, for about a fifth of a call's CPU.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter

from baseten_operator.baseten.deadlines import deadline_pool_classes
from baseten_operator.runtime.pools import (
    READ_BYTES,
    SAFE_RETRY,
    AnswerTooLarge,
    joined_within_bound,
)
from baseten_operator.runtime.proxyenv import proxy_for
from baseten_operator.runtime.trust import ca_bundle, trusted_context

__all__ = ["Connect", "Connections", "HttpSender", "ca_bundle"]


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
    ) -> requests.Response: ...


# How a client reaches its base URL: the base URL in, what sends its requests out.
Connect = Callable[[str], HttpSender]


class _Adapter(HTTPAdapter):
    """requests' adapter on pools whose connections honour `deadlines.deadline`, with one
    TLS context for every connection (the API's, and an https:// proxy's)."""

    def __init__(self, tls: ssl.SSLContext | None, pool_size: int) -> None:
        self._tls = tls
        self._pool: Any = None
        super().__init__(pool_connections=1, pool_maxsize=pool_size, max_retries=SAFE_RETRY)

    def init_poolmanager(self, *args: Any, **pool_kwargs: Any) -> None:
        if self._tls is not None:
            pool_kwargs["ssl_context"] = self._tls
        super().init_poolmanager(*args, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = deadline_pool_classes()

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        fresh = proxy not in self.proxy_manager
        if fresh and self._tls is not None:
            proxy_kwargs.update(ssl_context=self._tls, proxy_ssl_context=self._tls)
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if fresh:
            manager.pool_classes_by_scheme = deadline_pool_classes()
        return manager

    def get_connection_with_tls_context(
        self, request: Any, verify: Any, proxies: Any = None, cert: Any = None
    ) -> Any:
        # Every request of this adapter goes to one origin, with one proxy setting and one
        # TLS context: the pool is the same each time (the manager keeps one), so it is
        # looked up once rather than keyed again from the URL on every request.
        if self._pool is None:
            self._pool = super().get_connection_with_tls_context(request, verify, proxies, cert)
        return self._pool

    def close(self) -> None:
        self._pool = None
        super().close()

    def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
        # The pools' TLS context already trusts the chosen CAs. requests would name its
        # default bundle on the pool for every request, and urllib3 then load it into
        # that context again for every new connection.
        return


class Connections:
    """Kept-alive connections to one base URL, directly or through a proxy."""

    def __init__(
        self,
        base_url: str,
        pool_size: int = 32,
        environ: Mapping[str, str] = os.environ,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """`tls`: the context an https base URL is verified with (default: the CAs the
        environment names, else certifi's)."""
        parts = urlsplit(base_url)
        # Loading the trusted CAs costs about 2.5 MB and 30 ms: only an https base URL
        # (every real one) needs them; a plain-HTTP one (a simulator) never verifies.
        https = parts.scheme == "https"
        proxy = proxy_for(base_url, environ)
        self._proxies = {} if proxy is None else {parts.scheme: proxy}
        if https and tls is None:
            tls = trusted_context(environ)
        self._adapter = _Adapter(tls if https else None, pool_size)
        self._origin = f"{parts.scheme}://{parts.netloc}"

    def send(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None,
        headers: Mapping[str, str],
        connect_timeout: float,
        read_timeout: float,
    ) -> requests.Response:
        """`target` is the path and query under the base URL's origin."""
        # Prepared step by step, without re-parsing and re-quoting the URL: the origin was
        # checked once, and the transport quotes every part of a target it builds.
        prepared = requests.PreparedRequest()
        prepared.prepare_method(method)
        prepared.url = self._origin + target
        prepared.prepare_headers(headers)
        prepared.prepare_body(body, None)
        response = self._adapter.send(
            prepared,
            stream=True,
            timeout=(connect_timeout, read_timeout),
            verify=True,
            proxies=self._proxies,
        )
        # Read whole now (that releases the connection), as `response.content` would, but
        # within a bound: requests sets no limit on a body.
        try:
            body = joined_within_bound(response.iter_content(READ_BYTES))
        except AnswerTooLarge as exc:
            response.close()  # the rest is unread: the connection cannot carry another
            raise requests.ConnectionError(str(exc), request=prepared) from None
        response._content = body  # what `content` caches (requests' own attribute)
        return response

    def close(self) -> None:
        self._adapter.close()
