"""HTTP front end: reads a request, routes it (discovery and OpenAPI documents, the review
APIs, the verbs of verbs.py, watches of watchstream.py, the `/_sim/` controls) and writes the
answer. It serves the `KubeEmulator` it is given.

Responses go out in a single socket write (headers and body together) on sockets with
TCP_NODELAY, so keep-alive requests never wait on Nagle's algorithm.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import structlog

from baseten_operator.runtime.httpserver import BoundedHTTPServer, ConnectionLimits

from . import errors, openapi
from .calls import ApiCall, no_such_path, resolve, verb_of
from .emulator import KubeEmulator
from .errors import ApiError
from .verbs import VERBS
from .watchstream import AbortConnection, WatchStream
from .writelog import WRITE_VERBS

log = structlog.get_logger(__name__)

Obj = dict[str, Any]
VERSION_INFO = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0",
    "gitCommit": "70d3cc986aa8221cd1dfb1121852688902d3bf53",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T17:58:24Z",
    "goVersion": "go1.23.3",
    "compiler": "gc",
    "platform": "linux/amd64",
}


# Every informer and kubectl watch holds a connection for as long as it runs (a watch
# writes and never reads, so the idle timeout does not end it); idle keep-alive
# connections are closed after two minutes, as kube-apiserver's idle timeout does.
LIMITS = ConnectionLimits(max_connections=1024, idle_timeout=120.0)


class KubeHTTPServer(BoundedHTTPServer):
    request_queue_size = 1024
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], emulator: KubeEmulator) -> None:
        self.emulator = emulator
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, KubeRequestHandler, limits=LIMITS)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Hang up on every client, as a stopping API server does (keep-alive included)."""
        with self._open_lock:
            connections = list(self._open)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class KubeRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: KubeHTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http", message=format % args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    @property
    def emulator(self) -> KubeEmulator:
        return self.server.emulator

    # ---- plumbing ------------------------------------------------------------------

    def _send(
        self,
        code: int,
        body: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        phrase = HTTPStatus(code).phrase if code in HTTPStatus._value2member_map_ else "Unknown"
        lines = [
            f"HTTP/1.1 {code} {phrase}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
            "Cache-Control: no-cache, private",
        ]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if self.close_connection:
            lines.append("Connection: close")
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    def _send_json(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(code, json.dumps(obj, separators=(",", ":")).encode(), headers=headers)

    def _send_error(self, error: ApiError) -> None:
        headers = {}
        if error.retry_after is not None:
            headers["Retry-After"] = str(max(1, round(error.retry_after)))
        self._send_json(error.code, error.status(), headers)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            raw = self._read_body()
            if url.path.startswith("/_sim/"):
                self._sim(method, url.path, query, raw)
                return
            if self.emulator.faults.latency > 0:
                time.sleep(self.emulator.faults.latency)
            self._serve(method, url.path, query, raw)
        except ApiError as error:
            self._send_error(error)
        except AbortConnection:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:
            log.exception("request failed", method=method, path=self.path)
            self._send_error(errors.internal(f"emulator error: {exc!r}"))

    # ---- the fault-injection API ---------------------------------------------------

    def _sim(self, method: str, path: str, query: dict[str, str], raw: bytes) -> None:
        emulator = self.emulator
        if path == "/_sim/state" and method == "GET":
            self._send_json(200, emulator.state())
        elif path == "/_sim/writes" and method == "GET":
            since = int(query.get("since") or 0)
            self._send_json(200, emulator.writes.entries(since))
        elif path == "/_sim/faults" and method == "POST":
            try:
                payload = json.loads(raw or b"{}")
                result = emulator.control(payload)
            except (ValueError, TypeError, KeyError) as exc:
                raise errors.bad_request(f"invalid fault request: {exc}") from None
            self._send_json(200, result)
        else:
            raise ApiError(404, "NotFound", f"no simulator endpoint {method} {path}")

    # ---- the Kubernetes API --------------------------------------------------------

    def _serve(self, method: str, path: str, query: dict[str, str], raw: bytes) -> None:
        store = self.emulator.store
        parts = [p for p in path.split("/") if p]
        if method == "GET" and self._serve_static(parts):
            return
        if len(parts) >= 2 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        elif len(parts) == 2 and parts[0] == "apis" and method == "GET":
            with store.lock:
                document = store.registry.api_group(parts[1])
            self._found(document)
            return
        else:
            raise no_such_path()
        if not rest:
            if method != "GET":
                raise errors.method_not_allowed(f"{method} is not allowed here")
            with store.lock:
                document = store.registry.resource_list(group, version)
            self._found(document)
            return
        call = ApiCall(
            target=resolve(store, group, version, rest),
            query=query,
            raw=raw,
            content_type=self.headers.get("Content-Type") or "",
            accept=self.headers.get("Accept") or "",
        )
        target = call.target
        if target.rt.review or target.subresource == "token":
            self._answer_review(method, call)
            return
        verb = verb_of(method, target, query)
        if verb in WRITE_VERBS:
            self.emulator.writes.record(
                verb=verb,
                resource=target.rt.plural,
                namespace=target.namespace,
                name=target.name,
                subresource=target.subresource,
                user_agent=self.headers.get("User-Agent"),
            )
        failure = self.emulator.faults.failure_for(verb, target.rt.plural, target.rt.group)
        if failure is not None:
            raise failure
        if verb == "watch":
            stream = WatchStream(self.emulator, call, self.wfile, self.connection)
            if not stream.serve():
                self.close_connection = True
            return
        code, document = VERBS[verb](self.emulator, call)
        self._send_json(code, document)

    def _found(self, document: Obj | None) -> None:
        if document is None:
            raise no_such_path()
        self._send_json(200, document)

    def _serve_static(self, parts: list[str]) -> bool:
        store = self.emulator.store
        if parts == ["version"]:
            self._send_json(200, VERSION_INFO)
        elif parts and parts[0] in ("healthz", "livez", "readyz"):
            self._send(200, b"ok", "text/plain")
        elif parts == ["api"]:
            host, port = self.server.server_address[:2]
            address = f"{host!s}:{port}"
            self._send_json(200, {
                "kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": address}
                ],
            })  # fmt: skip
        elif parts == ["apis"]:
            with store.lock:
                self._send_json(200, store.registry.api_group_list())
        elif parts == ["openapi", "v2"]:
            self._send(
                200,
                openapi.OPENAPI_V2_PROTOBUF,
                openapi.OPENAPI_V2_CONTENT_TYPE,
            )
        elif parts == ["openapi", "v3"]:
            with store.lock:
                self._send_json(200, openapi.v3_index(store.registry))
        elif parts[:2] == ["openapi", "v3"] and len(parts) in (4, 5):
            group, version = ("", parts[3]) if parts[2] == "api" else (parts[3], parts[4])
            with store.lock:
                self._found(openapi.v3_document(store.registry, group, version))
        else:
            return False
        return True

    # ---- the review APIs (auth.py) ---------------------------------------------------

    def _answer_review(self, method: str, call: ApiCall) -> None:
        if method != "POST":
            raise errors.method_not_allowed(f"{method} is not allowed here: only create")
        auth, target = self.emulator.auth, call.target
        if target.subresource == "token":
            assert target.namespace is not None and target.name is not None
            # `kubectl create token` sends its TokenRequest only as protobuf (protobuf.py).
            self._send_json(201, auth.request_token(target.namespace, target.name, call.body()))
        elif target.rt.plural == "tokenreviews":
            self._send_json(201, auth.review_token(call.body()))
        else:
            self._send_json(201, auth.review_access(call.body()))
