"""HTTP front end: routes Kubernetes API paths to the store, streams watches.

Responses go out in a single socket write (headers and body together) on sockets with
TCP_NODELAY, so keep-alive requests never wait on Nagle's algorithm.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import structlog
import yaml

from baseten_operator.runtime.httpserver import BoundedHTTPServer, ConnectionLimits

from . import errors, openapi, protobuf, tables
from .errors import ApiError
from .resources import ResourceType
from .selectors import FieldSelector, LabelSelector
from .store import PATCH_TYPES
from .watch import Delivery, Watcher
from .writelog import WRITE_VERBS

if TYPE_CHECKING:
    from .server import KubeApiServer

log = structlog.get_logger(__name__)

Obj = dict[str, Any]
DEFAULT_WATCH_TIMEOUT = 1800.0
# How often an idle watch stream checks whether its client went away.
LIVENESS_CHECK_INTERVAL = 1.0
PROTOBUF_MESSAGE = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml (this Kubernetes API emulator reads protobuf only for "
    "Secrets, DeleteOptions and TokenRequests ({reason}); `kubectl create <generator>` sends "
    "protobuf: write a manifest and use `kubectl apply -f`)"
)
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

    def __init__(self, address: tuple[str, int], api: KubeApiServer) -> None:
        self.api = api
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


@dataclass(frozen=True)
class Target:
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


class _Abort(Exception):
    """The connection must be dropped without a proper end of stream."""


def _truthy(value: str | None) -> bool:
    return value in ("true", "1", "True")


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

    def _parse_body(self, raw: bytes) -> Any:
        content_type = (self.headers.get("Content-Type") or "application/json").lower()
        if "protobuf" in content_type:
            try:
                return protobuf.decode(raw) if raw else None
            except protobuf.ProtobufError as exc:
                raise errors.unsupported_media_type(PROTOBUF_MESSAGE.format(reason=exc)) from None
        if not raw:
            return None
        try:
            if "yaml" in content_type:
                return yaml.safe_load(raw)
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"the request body is not valid: {exc}") from None

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        api = self.server.api
        try:
            raw = self._read_body()
            if url.path.startswith("/_sim/"):
                self._sim(method, url.path, query, raw)
                return
            if api.faults.latency > 0:
                time.sleep(api.faults.latency)
            self._serve(method, url.path, query, raw)
        except ApiError as error:
            self._send_error(error)
        except _Abort:
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
        api = self.server.api
        if path == "/_sim/state" and method == "GET":
            self._send_json(
                200, {"resourceVersion": str(api.store.rv), "watches": api.watch_count()}
            )
        elif path == "/_sim/writes" and method == "GET":
            since = int(query.get("since") or 0)
            self._send_json(200, api.writes.entries(since))
        elif path == "/_sim/faults" and method == "POST":
            try:
                payload = json.loads(raw or b"{}")
                result = api.control(payload)
            except (ValueError, TypeError, KeyError) as exc:
                raise errors.bad_request(f"invalid fault request: {exc}") from None
            self._send_json(200, result)
        else:
            raise ApiError(404, "NotFound", f"no simulator endpoint {method} {path}")

    # ---- the Kubernetes API --------------------------------------------------------

    def _serve(self, method: str, path: str, query: dict[str, str], raw: bytes) -> None:
        api = self.server.api
        registry = api.store.registry
        parts = [p for p in path.split("/") if p]
        if method == "GET" and self._serve_static(parts):
            return
        if len(parts) >= 2 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        elif len(parts) == 2 and parts[0] == "apis" and method == "GET":
            with api.store.lock:
                document = registry.api_group(parts[1])
            self._found(document)
            return
        else:
            raise _no_such_path()
        if not rest:
            if method != "GET":
                raise errors.method_not_allowed(f"{method} is not allowed here")
            with api.store.lock:
                document = registry.resource_list(group, version)
            self._found(document)
            return
        target = self._resolve(group, version, rest)
        if target.rt.review or target.subresource == "token":
            self._answer_review(method, target, raw)
            return
        verb = _verb(method, target, query)
        if verb in WRITE_VERBS:
            api.writes.record(
                verb=verb,
                resource=target.rt.plural,
                namespace=target.namespace,
                name=target.name,
                subresource=target.subresource,
                user_agent=self.headers.get("User-Agent"),
            )
        failure = api.faults.failure_for(verb, target.rt.plural, target.rt.group)
        if failure is not None:
            raise failure
        getattr(self, f"_{verb}")(target, query, raw)

    def _found(self, document: Obj | None) -> None:
        if document is None:
            raise _no_such_path()
        self._send_json(200, document)

    def _serve_static(self, parts: list[str]) -> bool:
        api = self.server.api
        store = api.store
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

    def _resolve(self, group: str, version: str, rest: list[str]) -> Target:
        store = self.server.api.store
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            inner = store.lookup(group, version, rest[2])
            if inner is not None and inner.namespaced:
                namespace, rest = rest[1], rest[2:]
        rt = store.lookup(group, version, rest[0])
        if rt is None or len(rest) > 3:
            raise _no_such_path()
        name = rest[1] if len(rest) > 1 else None
        subresource = rest[2] if len(rest) > 2 else None
        if subresource is not None and not (
            (subresource == "status" and rt.status_subresource)
            or any(subresource == extra for extra, _, _ in rt.create_subresources)
        ):
            raise _no_such_path()
        if rt.namespaced and name is not None and namespace is None:
            raise _no_such_path()
        return Target(rt, namespace, name, subresource)

    # ---- the review APIs (auth.py) ---------------------------------------------------

    def _answer_review(self, method: str, target: Target, raw: bytes) -> None:
        if method != "POST":
            raise errors.method_not_allowed(f"{method} is not allowed here: only create")
        auth = self.server.api.auth
        if target.subresource == "token":
            assert target.namespace is not None and target.name is not None
            # `kubectl create token` sends its TokenRequest only as protobuf (protobuf.py).
            body = self._parse_body(raw)
            self._send_json(201, auth.request_token(target.namespace, target.name, body))
        elif target.rt.plural == "tokenreviews":
            self._send_json(201, auth.review_token(self._parse_body(raw)))
        else:
            self._send_json(201, auth.review_access(self._parse_body(raw)))

    # ---- verbs ---------------------------------------------------------------------

    def _wants_table(self) -> bool:
        return "as=Table" in (self.headers.get("Accept") or "")

    def _wants_metadata(self) -> bool:
        """`as=PartialObjectMetadata` (and `...List`): metadata-only clients (informers)."""
        return "as=PartialObjectMetadata" in (self.headers.get("Accept") or "")

    def _respond_object(self, code: int, rt: ResourceType, obj: Obj, query: dict[str, str]) -> None:
        if self._wants_table():
            now = self.server.api.clock.now()
            include = query.get("includeObject", "Metadata")
            rv = obj.get("metadata", {}).get("resourceVersion", "")
            obj = tables.table(
                rt, [obj], now, include=include, list_metadata={"resourceVersion": rv}
            )
        elif self._wants_metadata():
            obj = tables.partial_metadata(obj)
        self._send_json(code, obj)

    def _get(self, target: Target, query: dict[str, str], raw: bytes) -> None:
        assert target.name is not None
        obj = self.server.api.store.get(target.rt, target.namespace, target.name)
        self._respond_object(200, target.rt, obj, query)

    def _list(self, target: Target, query: dict[str, str], raw: bytes) -> None:
        rt = target.rt
        listed = self.server.api.store.list_objects(
            rt,
            target.namespace,
            LabelSelector.parse(query.get("labelSelector")),
            FieldSelector.parse(query.get("fieldSelector"), rt.field_labels),
            limit=int(query["limit"]) if query.get("limit") else None,
            continue_token=query.get("continue") or None,
        )
        if self._wants_table():
            now = self.server.api.clock.now()
            include = query.get("includeObject", "Metadata")
            listed = tables.table(
                rt, listed["items"], now, include=include, list_metadata=listed["metadata"]
            )
        elif self._wants_metadata():
            listed = tables.partial_metadata_list(listed["items"], listed["metadata"])
        self._send_json(200, listed)

    def _create(self, target: Target, query: dict[str, str], raw: bytes) -> None:
        if target.rt.namespaced and target.namespace is None:
            raise errors.method_not_allowed("create needs a namespace in the path")
        obj = self.server.api.store.create(
            target.rt,
            target.namespace,
            self._parse_body(raw),
            dry_run=_dry_run(query),
            strict=_strict(query),
        )
        self._respond_object(201, target.rt, obj, query)

    def _update(self, target: Target, query: dict[str, str], raw: bytes) -> None:
        assert target.name is not None
        obj = self.server.api.store.update(
            target.rt,
            target.namespace,
            target.name,
            self._parse_body(raw),
            subresource=target.subresource,
            dry_run=_dry_run(query),
            strict=_strict(query),
        )
        self._respond_object(200, target.rt, obj, query)

    def _patch(self, target: Target, query: dict[str, str], raw: bytes) -> None:
        assert target.name is not None
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        patch_type = PATCH_TYPES.get(content_type)
        if patch_type is None:
            raise errors.unsupported_media_type(
                f"the body of the request was in an unknown format ({content_type}) - accepted "
                "media types include: " + ", ".join(PATCH_TYPES)
            )
        obj, created = self.server.api.store.patch(
            target.rt,
            target.namespace,
            target.name,
            patch_type,
            self._parse_body(raw),
            subresource=target.subresource,
            dry_run=_dry_run(query),
            strict=_strict(query),
        )
        self._respond_object(201 if created else 200, target.rt, obj, query)

    def _delete(self, target: Target, query: dict[str, str], raw: bytes) -> None:
        assert target.name is not None
        rt = target.rt
        options = self._parse_body(raw) or {}
        obj, exists = self.server.api.store.delete(
            rt, target.namespace, target.name, options, dry_run=_dry_run(query)
        )
        if exists or not rt.builtin:
            self._respond_object(200, rt, obj, query)
            return
        details: Obj = {"name": target.name, "kind": rt.plural, "uid": obj["metadata"].get("uid")}
        if rt.group:
            details["group"] = rt.group
        self._send_json(200, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details,
        })  # fmt: skip

    def _deletecollection(self, target: Target, query: dict[str, str], raw: bytes) -> None:
        rt = target.rt
        listed = self.server.api.store.delete_collection(
            rt,
            target.namespace,
            LabelSelector.parse(query.get("labelSelector")),
            FieldSelector.parse(query.get("fieldSelector"), rt.field_labels),
            dry_run=_dry_run(query),
        )
        self._send_json(200, listed)

    # ---- watch ---------------------------------------------------------------------

    def _watch(self, target: Target, query: dict[str, str], raw: bytes) -> None:
        api = self.server.api
        rt = target.rt
        bookmarks = _truthy(query.get("allowWatchBookmarks"))
        labels = LabelSelector.parse(query.get("labelSelector"))
        fields = FieldSelector.parse(query.get("fieldSelector"), rt.field_labels)
        if target.name is not None:  # GET .../name?watch=true: a watch of one object
            fields = FieldSelector.parse(
                ",".join(
                    filter(None, [query.get("fieldSelector"), f"metadata.name={target.name}"])
                ),
                rt.field_labels,
            )
        try:
            watcher = api.store.watch(
                rt,
                target.namespace,
                labels,
                fields,
                query.get("resourceVersion"),
                send_initial_events=_truthy(query.get("sendInitialEvents")),
                bookmarks=bookmarks,
            )
        except ApiError as error:
            if error.code != 410:
                raise
            self._start_stream()
            self._write_chunk(self._encode_error(error))
            self._end_stream()
            return
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        try:
            self._start_stream()
            self._pump(watcher, timeout or DEFAULT_WATCH_TIMEOUT, bookmarks, query)
        finally:
            api.store.unwatch(watcher)

    def _start_stream(self) -> None:
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\nCache-Control: no-cache, private\r\n\r\n"
        )
        self.wfile.write(head.encode("latin-1"))

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")

    def _pump(
        self, watcher: Watcher, timeout: float, bookmarks: bool, query: dict[str, str]
    ) -> None:
        api = self.server.api
        start = time.monotonic()
        deadline = start + timeout
        next_bookmark = start + api.bookmark_interval
        first = True
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            wait = min(deadline, now + LIVENESS_CHECK_INTERVAL)
            if bookmarks:
                wait = min(wait, next_bookmark)
            items = watcher.take(max(wait - now, 0.0), api.store.stalled)
            if watcher.closed == "abrupt":
                raise _Abort()
            if watcher.closed is not None:
                break
            if items:
                encoded = []
                for delivery in items:
                    encoded.append(self._encode(watcher.rt, delivery, query, first))
                    first = False
                self._write_chunk(b"".join(encoded))
            elif bookmarks and time.monotonic() >= next_bookmark and not api.store.stalled.is_set():
                bookmark = api.store.idle_bookmark(watcher)
                if bookmark is not None:
                    self._write_chunk(self._encode(watcher.rt, bookmark, query, first))
                next_bookmark = time.monotonic() + api.bookmark_interval
            elif self._client_gone():
                self.close_connection = True
                return
        self._end_stream()

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _encode(
        self, rt: ResourceType, delivery: Delivery, query: dict[str, str], first: bool
    ) -> bytes:
        table = self._wants_table() and delivery.type != "BOOKMARK"
        metadata = self._wants_metadata()
        cache_key = (delivery.type, rt.api_version)
        source = None if table or metadata else delivery.source
        if source is not None and cache_key in source.encoded:
            return source.encoded[cache_key]
        obj = rt.from_storage(delivery.obj)
        if table:
            include = query.get("includeObject", "Metadata")
            rv = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            obj = tables.table(
                rt, [obj], self.server.api.clock.now(), include=include, list_metadata=rv,
                with_columns=first,
            )  # fmt: skip
        elif metadata:
            obj = tables.partial_metadata(obj)
        line = json.dumps({"type": delivery.type, "object": obj}, separators=(",", ":")).encode()
        encoded = line + b"\n"
        if source is not None:
            source.encoded[cache_key] = encoded
        return encoded

    def _encode_error(self, error: ApiError) -> bytes:
        return json.dumps({"type": "ERROR", "object": error.status()}).encode() + b"\n"


def _no_such_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def _dry_run(query: dict[str, str]) -> bool:
    return query.get("dryRun") == "All"


def _strict(query: dict[str, str]) -> bool:
    return query.get("fieldValidation") == "Strict"


def _verb(method: str, target: Target, query: dict[str, str]) -> str:
    if method == "GET":
        if _truthy(query.get("watch")):
            return "watch"
        return "get" if target.name is not None else "list"
    if method == "POST" and target.name is None:
        return "create"
    if method in ("PUT", "PATCH") and target.name is not None:
        return "update" if method == "PUT" else "patch"
    if method == "DELETE":
        return "delete" if target.name is not None else "deletecollection"
    raise errors.method_not_allowed(f"{method} is not allowed on this path")
