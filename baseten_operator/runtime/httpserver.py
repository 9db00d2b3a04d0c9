"""A tiny threaded HTTP server for the operator's own endpoints (metrics, probes).

Each server maps path prefixes to handlers that return a whole `Response`. The
response leaves in one write (buffered writer, flushed once per request) with
`TCP_NODELAY` set, and the listen backlog is real: a keep-alive scrape otherwise
stalls ~40 ms per request on Nagle + delayed ACK.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import structlog

_log = structlog.get_logger(__name__)

# An address with an empty host (":8080") binds every interface, as the Go operator's
# flags of the same names do: in a pod, the kubelet's probes and Prometheus come from
# outside. Tests and the sandbox pass "127.0.0.1:0" explicitly.
DEFAULT_HOST = "0.0.0.0"
DISABLED = "0"


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


Query = Mapping[str, list[str]]
Handler = Callable[[str, Query], Response]  # (path, query) -> response


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """ "host:port" -> (host, port); ":port" -> every interface; "0" -> None (disabled)."""
    if address == DISABLED:
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"invalid bind address {address!r}: expected [host]:port or '0'")
    return (host or DEFAULT_HOST, int(port))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], routes: Mapping[str, Handler]) -> None:
        self.routes = routes
        super().__init__(address, _RequestHandler)


class _RequestHandler(BaseHTTPRequestHandler):
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
        handler = self._route(url.path)
        if handler is None:
            response = Response(404, b"not found\n")
        else:
            try:
                response = handler(url.path, parse_qs(url.query, keep_blank_values=True))
            except Exception:
                _log.exception("http handler failed", path=url.path)
                response = Response(500, b"internal error\n")
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if send_body:
            self.wfile.write(response.body)

    def _route(self, path: str) -> Handler | None:
        for prefix, handler in self.server.routes.items():
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return handler
        return None

    def log_message(self, format: str, *args: object) -> None:
        # Scrapes and probes arrive every few seconds: not worth an INFO line each.
        _log.debug("http request", request=format % args)


class RoutedHTTPServer:
    """Serves `routes` on `address` from a background thread, once started."""

    def __init__(self, address: str, routes: Mapping[str, Handler], *, name: str) -> None:
        self._bind = parse_bind_address(address)
        self._routes = dict(routes)
        self._name = name
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self._bind is not None

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
        self._server = _Server(self._bind, self._routes)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"{self._name}-http",
            daemon=True,
        )
        self._thread.start()
        _log.info("serving", server=self._name, address=self.bound_address)

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None
