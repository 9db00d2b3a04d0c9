"""A small threaded HTTP/1.1 server around one `handle(Request) -> Response | None` function.

Each response goes out in one write with TCP_NODELAY set (no Nagle stalls on keep-alive
connections), the listen backlog is 128, and `Expect: 100-continue` is honoured (boto3
sends it). A handler returning None drops the connection without answering.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import structlog

from baseten_operator.runtime.httpserver import BoundedHTTPServer, ConnectionLimits

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body.strip() else None


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def json_response(status: int, payload: Any) -> Response:
    return Response(status, json.dumps(payload).encode(), {"Content-Type": "application/json"})


Handler = Callable[[Request], "Response | None"]


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.untrack(self.connection)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(chunks)
                chunks += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _dispatch(self) -> None:
        url = urlsplit(self.path)
        request = Request(
            method=self.command,
            path=url.path,
            query=url.query,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=self._read_body(),
        )
        try:
            response = self.server.handler(request)
        except Exception:
            log.exception("simulator handler crashed", method=self.command, path=url.path)
            response = json_response(
                500, {"code": "INTERNAL", "message": "simulator error", "details": None}
            )
        if response is None:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self._write(response)

    def _write(self, response: Response) -> None:
        try:
            reason = HTTPStatus(response.status).phrase
        except ValueError:
            reason = "Unknown"
        lines = [f"HTTP/1.1 {response.status} {reason}"]
        headers = {"Content-Length": str(len(response.body)), **response.headers}
        if self.close_connection:
            headers["Connection"] = "close"
        lines += [f"{name}: {value}" for name, value in headers.items()]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head + response.body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("simulator request", line=format % args)


# Generous for the operator, its truss children and a test's own clients; still a bound.
LIMITS = ConnectionLimits(max_connections=256, idle_timeout=60.0)


class _Server(BoundedHTTPServer):
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: Handler) -> None:
        self.handler = handler
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _RequestHandler, limits=LIMITS)

    def track(self, conn: socket.socket) -> None:
        with self._connections_lock:
            self._connections.add(conn)

    def untrack(self, conn: socket.socket) -> None:
        with self._connections_lock:
            self._connections.discard(conn)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class HttpServer:
    def __init__(self, handler: Handler, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _Server((host, port), handler)
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # how long stop() may wait for the loop
            name="baseten-sim-http",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.close_connections()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
