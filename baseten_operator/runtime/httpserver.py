"""Threaded HTTP servers with bounded cost, and the router behind metrics and probes.

`BoundedHTTPServer` is the base of every HTTP server the project runs (metrics, probes,
both simulators). A thread per connection is simple and fast, but unbounded it lets
anyone who can reach the port spend a thread per idle or half-sent connection. So each
connection gets a socket timeout (a request that stops arriving, or a keep-alive
connection left idle, is closed after `idle_timeout`) and the number of connections
served at once is capped: one beyond the cap is closed at once instead of costing a
thread. With a TLS context the handshake runs on the connection's own thread under the
same timeout, so a client that never finishes it cannot stall the accept loop. The accept
loop sleeps until a connection or `shutdown` wakes it, where socketserver's polls a few
times a second (an idle operator's main cost). An address with an empty host listens on
IPv6 and IPv4 at once (controller-runtime's `:8443`), so probes reach it on any cluster.

`BoundedRequestHandler` (the metrics and probe servers' handler) also bounds the request
head as a whole: its status line and headers must have arrived `idle_timeout` after the
server began waiting for them, however the bytes trickle in. A per-read timeout alone
lets a client that sends a byte every few seconds hold a slot for ever.

`RoutedHTTPServer` maps path prefixes to handlers that return a whole `Response`. The
response leaves in one write (buffered writer, flushed once per request) with
`TCP_NODELAY` set, and the listen backlog is real: a keep-alive scrape otherwise stalls
~40 ms per request on Nagle + delayed ACK.
"""

from __future__ import annotations

import contextlib
import functools
import io
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import BaseRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import structlog

_log = structlog.get_logger(__name__)

# An address with an empty host (":8080") binds every interface, IPv6 and IPv4 alike, as
# controller-runtime's bind-address flags do: in a pod, the kubelet's probes and Prometheus
# come from outside, over whichever family the cluster runs. Tests and the sandbox pass
# "127.0.0.1:0" explicitly.
DEFAULT_HOST = "::"
_IPV4_ANY = "0.0.0.0"  # where a kernel without IPv6 listens instead
DISABLED = "0"
# How long closing a server waits for the threads of the connections it ended.
_CLOSE_TIMEOUT = 5.0


@dataclass(frozen=True)
class ConnectionLimits:
    """What one server may spend on its clients."""

    max_connections: int = 64
    # Seconds a connection may go without sending anything (headers, body, next request).
    idle_timeout: float = 30.0


TLSContextSource = Callable[[], ssl.SSLContext]  # the context for the next connection


@functools.cache
def _ipv6_available() -> bool:
    """Whether this kernel makes IPv6 sockets (a node booted with IPv6 off does not)."""
    try:
        socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()
    except OSError:
        return False
    return True


class BoundedHTTPServer(ThreadingHTTPServer):
    """A thread per connection, at most `limits.max_connections` of them at once."""

    daemon_threads = True
    request_queue_size = 128
    # `handle_request` waits at most this for a connection that vanished before its accept.
    timeout = 1.0

    def __init__(
        self,
        address: tuple[str, int],
        handler_class: type[BaseRequestHandler],
        *,
        limits: ConnectionLimits,
        tls: TLSContextSource | None = None,
    ) -> None:
        self.limits = limits
        self._tls = tls
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        # `shutdown` writes to the pair to wake the accept loop; `_serving` is clear while
        # the loop runs.
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._closing = threading.Event()
        self._serving = threading.Event()
        self._serving.set()
        # The connections being served (their current socket, TLS-wrapped once it is), so
        # that `server_close` ends them rather than leaving their threads behind.
        self._served: set[socket.socket] = set()
        self._served_changed = threading.Condition()
        host, port = address
        if host == DEFAULT_HOST and not _ipv6_available():
            host = _IPV4_ANY
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), handler_class)

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6 and self.server_address[0] == DEFAULT_HOST:
            # Dual-stack: IPv4 clients arrive as ::ffff:a.b.c.d (some systems default to
            # IPv6 only).
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept connections until `shutdown`; `poll_interval` is ignored: nothing polls."""
        self._serving.clear()
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                selector.register(self._wake_reader, selectors.EVENT_READ)
                while not self._closing.is_set():
                    for key, _ in selector.select():
                        if key.fileobj is self and not self._closing.is_set():
                            self.handle_request()  # ready: accepts without waiting
        finally:
            self._serving.set()

    def shutdown(self) -> None:
        """Stop the accept loop and wait for it (at once if it is not running)."""
        self._closing.set()
        self._wake_writer.send(b"\0")
        self._serving.wait()

    def server_close(self) -> None:
        """Close the listener, then end every connection still open (an idle keep-alive, a
        request in flight) and wait for their threads: a closed server holds nothing."""
        super().server_close()
        self._wake_reader.close()
        self._wake_writer.close()
        with self._served_changed:
            for connection in list(self._served):
                with contextlib.suppress(OSError):
                    # The plain socket's shutdown, also under TLS: it wakes the reading
                    # thread without touching the TLS state that thread is using.
                    socket.socket.shutdown(connection, socket.SHUT_RDWR)
            self._served_changed.wait_for(lambda: not self._served, timeout=_CLOSE_TIMEOUT)

    def _track(self, connection: socket.socket, replacing: socket.socket | None = None) -> None:
        with self._served_changed:
            if replacing is not None:
                self._served.discard(replacing)
            self._served.add(connection)

    def _untrack(self, connection: socket.socket) -> None:
        with self._served_changed:
            self._served.discard(connection)
            self._served_changed.notify_all()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            _log.debug("connection refused: at the connection limit", client=client_address)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        self._track(request)
        try:
            request.settimeout(self.limits.idle_timeout)
            if self._tls is not None:
                try:
                    wrapped = self._tls().wrap_socket(request, server_side=True)
                except (OSError, ssl.SSLError) as error:
                    _log.debug("tls handshake failed", client=client_address, error=str(error))
                    self.shutdown_request(request)
                    return
                self._track(wrapped, replacing=request)
                request = wrapped
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()
            self._untrack(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up or timing out mid-request is routine, not a server error.
        _log.debug("connection error", client=client_address, exc_info=True)


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


Query = Mapping[str, list[str]]
Handler = Callable[[str, Query], Response]  # (path, query) -> response
# (method, path, headers by lower-case name) -> a refusal, or None to let the request through.
RequestFilter = Callable[[str, str, Mapping[str, str]], "Response | None"]


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """ "host:port" -> (host, port); "[v6]:port" -> (v6, port); ":port" -> every interface,
    both families; "0" -> None (disabled)."""
    if address == DISABLED:
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"invalid bind address {address!r}: expected [host]:port or '0'")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return (host or DEFAULT_HOST, int(port))


class _HeadDeadline(io.RawIOBase):
    """A connection's reads, cut short once a request head is overdue.

    While `arm`ed, no read waits past the deadline (the socket's timeout is lowered to what
    is left); a read that would start after it fails as a timeout. Disarmed, reads wait the
    socket's own timeout. A head that arrives in one read, the usual case, costs no extra
    system call.
    """

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self._sock = sock
        self._timeout = timeout
        self._deadline: float | None = None
        self._lowered = False

    def arm(self) -> None:
        self._deadline = time.monotonic() + self._timeout

    def disarm(self) -> None:
        self._deadline = None
        if self._lowered:
            self._sock.settimeout(self._timeout)
            self._lowered = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._deadline is not None:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the request head did not arrive in time")
            if remaining < self._timeout:
                self._sock.settimeout(remaining)
                self._lowered = True
        return self._sock.recv_into(buffer)


class BoundedRequestHandler(BaseHTTPRequestHandler):
    """A request handler whose request heads must arrive within the server's idle timeout
    (counted from when it starts waiting for one, the keep-alive wait included)."""

    server: BoundedHTTPServer

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the socket's own reader, replaced: closing it frees the socket
        self._head = _HeadDeadline(self.connection, self.server.limits.idle_timeout)
        self.rfile = io.BufferedReader(self._head)

    def handle_one_request(self) -> None:
        # An overdue head is a TimeoutError, which the base class answers by closing.
        self._head.arm()
        try:
            super().handle_one_request()
        finally:
            self._head.disarm()

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # reads the headers: the head is complete
        self._head.disarm()
        return parsed


class _Server(BoundedHTTPServer):
    def __init__(
        self,
        address: tuple[str, int],
        routes: Mapping[str, Handler],
        request_filter: RequestFilter | None,
        *,
        limits: ConnectionLimits,
        tls: TLSContextSource | None,
    ) -> None:
        self.routes = routes
        self.request_filter = request_filter
        super().__init__(address, _RequestHandler, limits=limits, tls=tls)


class _RequestHandler(BoundedRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    wbufsize = 1 << 16  # headers and body collect here and leave in one send
    server: _Server

    def do_GET(self) -> None:
        self._respond(send_body=True)

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def _respond(self, *, send_body: bool) -> None:
        url = urlsplit(self.path)
        response = self._filtered(url.path) or self._handled(url.path, url.query)
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if send_body:
            self.wfile.write(response.body)

    def _filtered(self, path: str) -> Response | None:
        request_filter = self.server.request_filter
        if request_filter is None:
            return None
        try:
            headers = {name.lower(): value for name, value in self.headers.items()}
            return request_filter(self.command, path, headers)
        except Exception:
            _log.exception("http request filter failed", path=path)
            return Response(500, b"internal error\n")

    def _handled(self, path: str, query: str) -> Response:
        handler = self._route(path)
        if handler is None:
            return Response(404, b"not found\n")
        try:
            return handler(path, parse_qs(query, keep_blank_values=True))
        except Exception:
            _log.exception("http handler failed", path=path)
            return Response(500, b"internal error\n")

    def _route(self, path: str) -> Handler | None:
        for prefix, handler in self.server.routes.items():
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return handler
        return None

    def log_message(self, format: str, *args: object) -> None:
        # Scrapes and probes arrive every few seconds: not worth an INFO line each.
        _log.debug("http request", request=format % args)


class RoutedHTTPServer:
    """Serves `routes` on `address` from a background thread, once started.

    With `tls` it speaks HTTPS only; `request_filter` sees every request before its
    handler (authentication, authorization) and may answer it instead.
    """

    def __init__(
        self,
        address: str,
        routes: Mapping[str, Handler],
        *,
        name: str,
        limits: ConnectionLimits | None = None,
        tls: TLSContextSource | None = None,
        request_filter: RequestFilter | None = None,
    ) -> None:
        self._bind = parse_bind_address(address)
        self._routes = dict(routes)
        self._name = name
        self._limits = limits or ConnectionLimits()
        self._tls = tls
        self._request_filter = request_filter
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self._bind is not None

    @property
    def scheme(self) -> str:
        return "https" if self._tls is not None else "http"

    @property
    def bound_address(self) -> tuple[str, int] | None:
        """(host, port) actually listened on (the real port for ":0"), None when not serving."""
        if self._server is None:
            return None
        host, port = self._server.server_address[:2]
        return (str(host), int(port))

    def start(self) -> None:
        if self._bind is None or self._server is not None:
            return
        self._server = _Server(
            self._bind, self._routes, self._request_filter, limits=self._limits, tls=self._tls
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            name=f"{self._name}-http",
            daemon=True,
        )
        self._thread.start()
        _log.info("serving", server=self._name, address=self.bound_address, scheme=self.scheme)

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None
