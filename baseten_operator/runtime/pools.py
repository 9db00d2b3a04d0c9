"""Kept-alive urllib3 connections to one server, directly or through a proxy, and what
they may repeat on their own.

`ServerPool` settles once what every request to the server would otherwise look up: the
urllib3 pool of its origin (TLS context, the name its certificate is checked against, the
proxy tunnel) or, for plain HTTP through a proxy, the proxy's pool that requests are
forwarded to. urllib3 replaces a kept-alive connection it finds closed before a request
goes out; `SAFE_RETRY` adds what it may repeat without a caller's say.

Failures are urllib3's exceptions; `never_sent` tells those after which the server cannot
have seen the request (the callers' retry rules turn on it).

Neither library bounds an answer's body: `read_body` and `body_lines` (and
`joined_within_bound` under requests) refuse one past MAX_BODY_BYTES, as sent or once
decoded, rather than hold it in memory.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ProxyError,
    ReadTimeoutError,
)
from urllib3.util.retry import Retry

from baseten_operator.runtime.proxyenv import Proxy

# Bigger bodies (as sent, and once decoded), and longer lines of a stream, are refused
# rather than held in memory: the largest the operator reads (a page of 500 objects, a
# model list) is a few MB.
MAX_BODY_BYTES = 64 * 1024 * 1024
# How much a body is read in at a time.
READ_BYTES = 256 * 1024


class AnswerTooLarge(HTTPError):
    """An answer body, or a line of a streamed one, past MAX_BODY_BYTES."""


def joined_within_bound(chunks: Iterable[bytes]) -> bytes:
    """A body's (decoded) pieces joined; AnswerTooLarge once they pass MAX_BODY_BYTES."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise AnswerTooLarge(f"answer body larger than {MAX_BODY_BYTES} bytes")
        parts.append(chunk)
    return b"".join(parts)


def read_body(response: urllib3.BaseHTTPResponse) -> bytes:
    """The whole body of a streamed response; its connection goes back to the pool once it
    is read to the end, or is closed when the body is refused."""
    try:
        return joined_within_bound(response.stream(READ_BYTES))
    except AnswerTooLarge:
        response.close()  # the rest of the body is unread: the connection cannot be reused
        response.release_conn()
        raise


def body_lines(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """The lines of a streamed body as they arrive (urllib3's `iter(response)`), refusing a
    line longer than MAX_BODY_BYTES with AnswerTooLarge."""
    pending = bytearray()
    for chunk in response.stream(READ_BYTES):
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", start)) != -1:
            yield bytes(pending[start : end + 1])
            start = end + 1
        del pending[:start]
        if len(pending) > MAX_BODY_BYTES:
            raise AnswerTooLarge(f"a streamed line longer than {MAX_BODY_BYTES} bytes")
    if pending:
        yield bytes(pending)


class SafeRetry(Retry):
    """urllib3's Retry that never repeats a timeout: a timeout has spent the time a retry
    would need, and the caller's own deadline and backoff decide what comes next."""

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: TracebackType | None = None,
    ) -> SafeRetry:
        retry = self
        if isinstance(error, ReadTimeoutError):
            retry = self.new(read=False)  # raised as it is (requests' ReadTimeout)
        elif isinstance(error, ConnectTimeoutError) and not isinstance(error, NewConnectionError):
            retry = self.new(total=0)  # exhausted: MaxRetryError (requests' ConnectTimeout)
        return Retry.increment(retry, method, url, response, error, _pool, _stacktrace)


# Repeated at once, on a fresh connection: a GET whose connection broke before any answer
# (a kept-alive connection the server closed as the request went out: client-go sends
# those again too). Only a GET: a write on a broken connection may have been carried out.
# Connections that could not be made are the callers' to retry, after a pause. Statuses
# (429, 5xx) and redirects go back to the caller untouched.
SAFE_RETRY = SafeRetry(
    total=None,
    connect=0,
    read=1,
    redirect=0,
    status=0,
    other=0,
    allowed_methods=frozenset({"GET"}),
    raise_on_redirect=False,
    raise_on_status=False,
    respect_retry_after_header=False,
)


def never_sent(exc: BaseException) -> bool:
    """Whether a failure came before the request could reach the server: no connection
    (refused, no route, a name that does not resolve, a connect timeout) or no tunnel
    through the proxy."""
    reason = exc.reason if isinstance(exc, MaxRetryError) else exc
    return isinstance(reason, ConnectTimeoutError | ProxyError)


class ServerPool:
    """Kept-alive connections to the server at `url`. Thread-safe."""

    def __init__(
        self,
        url: str,
        *,
        tls: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        proxy: Proxy | None = None,
        proxy_tls: ssl.SSLContext | None = None,
        maxsize: int = 32,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        settings: dict[str, Any] = {"num_pools": 1, "maxsize": maxsize, "retries": SAFE_RETRY}
        if parts.scheme == "https":
            settings["ssl_context"] = tls or ssl.create_default_context()
            if server_hostname:
                settings["server_hostname"] = server_hostname
        if proxy is not None:
            settings.update(
                proxy_url=proxy.url,
                proxy_headers=dict(proxy.headers),
                proxy_ssl_context=proxy_tls,
            )
        self.url = url
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self._settings = settings
        # Plain HTTP through a proxy is forwarded to it (absolute URLs, its own pool): the
        # manager does that. Anything else goes straight to the origin's pool, tunnelled
        # when there is a proxy.
        self._forwarded = proxy is not None and parts.scheme == "http"
        self._manager, self._pool = self._connect()

    def _connect(self) -> tuple[urllib3.PoolManager, urllib3.HTTPConnectionPool]:
        settings = dict(self._settings)
        manager: urllib3.PoolManager
        if "proxy_url" in settings:
            manager = urllib3.ProxyManager(settings.pop("proxy_url"), **settings)
        else:
            manager = urllib3.PoolManager(**settings)
        return manager, manager.connection_from_url(self.url)

    def renew_connections(self) -> None:
        """Requests from now on go on new connections (a renewed client certificate is
        presented only in a new handshake). Requests in flight finish on theirs; the old
        pool is not closed under them, its connections go with it when it is dropped."""
        self._manager, self._pool = self._connect()

    def request(
        self,
        method: str,
        target: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: urllib3.Timeout,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        """`target`: the path and query. `stream`: return once the head is read, the body
        left to read from the response (which holds its connection until then)."""
        if self._forwarded:
            return self._manager.urlopen(
                method,
                self.origin + target,
                headers=dict(headers),
                body=body,
                timeout=timeout,
                redirect=False,
                preload_content=not stream,
            )
        return self._pool.urlopen(
            method,
            target,
            headers=headers,
            body=body,
            timeout=timeout,
            redirect=False,
            assert_same_host=False,
            preload_content=not stream,
        )

    def close(self) -> None:
        self._manager.clear()
