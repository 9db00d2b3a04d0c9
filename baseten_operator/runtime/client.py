"""A thin dynamic Kubernetes client that speaks plain JSON dicts.

Where the API server is and how to authenticate come from kubeconfig.py (a kubeconfig
or the pod's service account). Every request, watches included, goes through one urllib3
pool of kept-alive connections (pools.py); answers are `json.loads`-ed and never turned
into generated model classes, which is much cheaper and works for custom resources
alike. A request that could not connect is tried again (CONNECT_RETRY_PAUSES), a GET whose
kept-alive connection broke before any answer once at once (pools.SAFE_RETRY); one that
may have reached the server never is: the caller decides. Credentials that can change (a
rotated service account token, a kubeconfig's token file, exec plugins, OIDC) are asked
again every few seconds, not on every request, and at once when the server answers 401
(an exec plugin's credentials revoked or expired early), for one more try.
Errors become the typed `ApiError` subclasses of errors.py; what a request names is a
`Resource` (resource.py).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any, Literal
from urllib.parse import quote, urlencode, urlsplit

import structlog
import urllib3
from urllib3.exceptions import HTTPError

from baseten_operator.runtime import kubeconfig
from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.errors import ConnectionFailed, api_error
from baseten_operator.runtime.fence import WriteFence
from baseten_operator.runtime.kubeconfig import ClusterAccess, KubeConfigError
from baseten_operator.runtime.pools import ServerPool, body_lines, never_sent, read_body
from baseten_operator.runtime.resource import Resource

log = structlog.get_logger(__name__)

DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_USER_AGENT = "python-kube-client"  # the operator names itself and its replica
# A watch is expected to send something (an event or a bookmark) or to end at its
# `timeoutSeconds`; a stream silent well past that is dead and must be abandoned.
WATCH_READ_GRACE = 30.0
WATCH_CONNECT_TIMEOUT = 10.0
# Connections kept open to the API server: one process uses this many at once (a watch
# per informer, the workers, the Event writers); past it, every extra request would open
# a connection and throw it away.
CONNECTION_POOL_SIZE = 32
# How often credentials that can change are asked again. Their sources renew a token well
# before it expires (a kubeconfig's exec plugin 5 minutes early; the kubelet rewrites the
# service account's token at 80% of its life), so asking every few seconds never sends an
# expired token.
AUTH_REFRESH_INTERVAL = 5.0

QueryParams = list[tuple[str, str]]
# A merge or strategic patch is an object; a JSON patch (RFC 6902) is a list of operations.
PatchBody = dict[str, Any] | list[dict[str, Any]]
# Requests, watches included, are tried again only when they could not connect (nothing
# was sent), with these pauses between attempts. Answers, 429 and 5xx included, go back
# to the caller as typed errors: sleeping out a Retry-After here would block a worker and
# hide the throttling from the controller.
CONNECT_RETRY_PAUSES = (0.0, 0.2, 0.4)

PatchType = Literal["merge", "json", "strategic"]
_PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
_UNAUTHORIZED = 401
JSON = "application/json"


def _decode(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


class WatchStream(Iterator[dict[str, Any]]):
    """The events of one watch request, read line by line as they arrive.

    `close()` may be called from another thread: it shuts the connection's reading side
    down so a reader blocked on it returns at once, and iteration then ends quietly. The
    response is released on the thread that reads it (or by `close` when nobody does), so
    no two threads ever hand its connection back.
    """

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self._response = response
        self._lines = body_lines(response)
        self._closed = threading.Event()
        self._reading = threading.Lock()  # held while a line is being read
        self._released = False

    def __next__(self) -> dict[str, Any]:
        with self._reading:
            while True:
                if self._closed.is_set():  # lines already read stay unread
                    self._release()
                    raise StopIteration
                try:
                    line = next(self._lines)
                except StopIteration:
                    self._release()
                    raise
                except Exception as exc:
                    self._release()
                    if self._closed.is_set():
                        raise StopIteration from None
                    if isinstance(exc, HTTPError | OSError):
                        raise ConnectionFailed(0, "ConnectionError", f"watch broke: {exc}") from exc
                    raise
                if not line.strip():
                    continue
                event = _decode(line)
                if not isinstance(event, dict):
                    self._release()
                    raise ConnectionFailed(
                        0, "ConnectionError", f"watch broke: not a watch event: {line[:80]!r}"
                    )
                if event.get("type") == "ERROR":
                    self._release()
                    status = event.get("object") or {}
                    raise api_error(int(status.get("code") or 500), status)
                return dict(event)

    def close(self) -> None:
        self._closed.set()
        if self._reading.acquire(blocking=False):  # nobody reads: release it here
            try:
                self._release()
            finally:
                self._reading.release()
            return
        with contextlib.suppress(Exception):  # its connection may be gone already
            self._response.shutdown()  # wakes the reader, which releases it

    def _release(self) -> None:
        """Close the response (a stream cut short cannot carry another request) and hand
        its connection back to the pool, once."""
        if self._released:
            return
        self._released = True
        self._response.close()
        self._response.release_conn()


class KubeClient:
    def __init__(
        self,
        access: ClusterAccess,
        *,
        user_agent: str = DEFAULT_USER_AGENT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        fence: WriteFence | None = None,
        clock: Clock | None = None,
        http: ServerPool | None = None,
        connect_retry_pauses: tuple[float, ...] = CONNECT_RETRY_PAUSES,
    ) -> None:
        self.access = access
        # Who the requests say they come from (audit logs); set it before deriving clients.
        self.user_agent = user_agent
        self.request_timeout = request_timeout
        self._fence = fence
        self._clock: Clock = clock or RealClock()
        self._prefix = urlsplit(access.server).path.rstrip("/")
        self._http = http or ServerPool(
            access.server,
            tls=access.tls,
            server_hostname=access.server_hostname,
            proxy=access.proxy,
            proxy_tls=access.proxy_tls,
            maxsize=CONNECTION_POOL_SIZE,
        )
        self._connect_retry_pauses = connect_retry_pauses
        self._timeout = urllib3.Timeout(connect=request_timeout, read=request_timeout)
        self._auth: dict[str, str] | None = None
        self._auth_read_at = 0.0

    def fenced(self, fence: WriteFence) -> KubeClient:
        """This client, sharing its connections, with every write passing `fence` first."""
        return KubeClient(
            self.access,
            user_agent=self.user_agent,
            request_timeout=self.request_timeout,
            fence=fence,
            clock=self._clock,
            http=self._http,
            connect_retry_pauses=self._connect_retry_pauses,
        )

    def without_connect_retries(self) -> KubeClient:
        """A client whose requests end at their timeout: no connection retry after it.

        For calls bounded by a deadline (Lease renewals), where retrying a connection
        would give each attempt a fresh timeout. Its connections are its own.
        """
        return KubeClient(
            self.access,
            user_agent=self.user_agent,
            request_timeout=self.request_timeout,
            clock=self._clock,
            connect_retry_pauses=(),
        )

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(cls, path: str, context: str | None = None) -> KubeClient:
        return cls(kubeconfig.from_kubeconfig(path, context))

    @classmethod
    def auto(cls) -> KubeClient:
        """$KUBECONFIG, else ~/.kube/config, else the pod's service account."""
        return cls(kubeconfig.locate())

    def close(self) -> None:
        self._http.close()

    # -- reads --------------------------------------------------------------------------

    def get(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        return self._json("GET", res.path(namespace, name), timeout=timeout)

    def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """`metadata_only`: items are PartialObjectMetadata (metadata, no spec or data)."""
        query = _query(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=limit,
            resourceVersion=resource_version,
            **{"continue": continue_token},
        )
        accept = _accept(metadata_only, "PartialObjectMetadataList")
        return self._json("GET", res.path(namespace), query=query, accept=accept)

    def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> WatchStream:
        """Open a watch; iterate the result for {"type", "object"} events.

        An ERROR event raises its typed error (`Gone` for an expired resourceVersion);
        the server ending the stream (its timeout) ends the iteration.
        """
        query = _query(
            watch="true",
            resourceVersion=resource_version,
            timeoutSeconds=timeout_seconds,
            allowWatchBookmarks="true" if allow_bookmarks else None,
            labelSelector=label_selector,
            fieldSelector=field_selector,
        )
        read_timeout = None if timeout_seconds is None else timeout_seconds + WATCH_READ_GRACE
        timeout = urllib3.Timeout(connect=WATCH_CONNECT_TIMEOUT, read=read_timeout)
        path = res.path(namespace)
        response = self._send(
            "GET", path, query, accept=_accept(metadata_only, "PartialObjectMetadata"),
            timeout=timeout, stream=True,
        )  # fmt: skip
        if not 200 <= response.status <= 299:
            data = self._body(response, "GET", path)
            raise api_error(response.status, _decode(data), response.headers.get("Retry-After"))
        return WatchStream(response)

    # -- writes -------------------------------------------------------------------------

    def create(
        self,
        res: Resource,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        namespace = namespace or (body.get("metadata") or {}).get("namespace")
        return self._json(
            "POST",
            res.path(namespace),
            body=body,
            query=_query(dryRun="All" if dry_run else None),
            timeout=timeout,
        )

    def update(
        self,
        res: Resource,
        body: dict[str, Any],
        *,
        dry_run: bool = False,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        meta = body["metadata"]
        return self._json(
            "PUT",
            res.path(meta.get("namespace"), meta["name"]),
            body=body,
            query=_query(dryRun="All" if dry_run else None),
            timeout=timeout,
        )

    def update_status(self, res: Resource, body: dict[str, Any]) -> dict[str, Any]:
        meta = body["metadata"]
        return self._json("PUT", res.path(meta.get("namespace"), meta["name"], "status"), body=body)

    def patch(
        self,
        res: Resource,
        name: str,
        body: PatchBody,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        return self._json(
            "PATCH",
            res.path(namespace, name, subresource),
            body=body,
            content_type=_PATCH_CONTENT_TYPES[patch_type],
            query=_query(dryRun="All" if dry_run else None),
        )

    def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        preconditions: dict[str, Any] | None = None,
        propagation_policy: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any] | None:
        """Delete; returns the object as the server last saw it, or None for a bare Status."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if preconditions:
            options["preconditions"] = preconditions
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if dry_run:
            options["dryRun"] = ["All"]
        result = self._json("DELETE", res.path(namespace, name), body=options)
        if not isinstance(result, dict) or result.get("kind") == "Status":
            return None
        return result

    # -- plumbing -----------------------------------------------------------------------

    def _json(
        self,
        method: str,
        path: str,
        *,
        query: QueryParams | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        accept: str = "application/json",
    ) -> Any:
        """One request; `timeout` (default `request_timeout`) bounds connecting and each
        read."""
        bound = self._timeout if timeout is None else urllib3.Timeout(connect=timeout, read=timeout)
        payload = None if body is None else json.dumps(body).encode()
        response = self._send(
            method, path, query, accept=accept, content_type=content_type, body=payload,
            timeout=bound, stream=True,
        )  # fmt: skip
        data = self._body(response, method, path)
        if not 200 <= response.status <= 299:
            raise api_error(response.status, _decode(data), response.headers.get("Retry-After"))
        return _decode(data)

    @staticmethod
    def _body(response: urllib3.BaseHTTPResponse, method: str, path: str) -> bytes:
        """The answer's body, read whole (within pools.MAX_BODY_BYTES); a failure to read it
        is a ConnectionFailed."""
        try:
            return read_body(response)
        except (HTTPError, OSError) as exc:
            raise ConnectionFailed(0, "ConnectionError", f"{method} {path}: {exc}") from exc

    def _send(
        self,
        method: str,
        path: str,
        query: QueryParams | None,
        *,
        accept: str,
        timeout: urllib3.Timeout,
        content_type: str = JSON,
        body: bytes | None = None,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        """Send, tried again after each pause while no connection could be made, and once
        more with fresh credentials when the server answers 401 to ones that can change;
        a failure to get an answer is a ConnectionFailed. A write passes the fence before
        every attempt: connecting and renewing credentials (an exec plugin runs up to a
        minute) take long enough for the Lease to be lost in between."""
        target = self._target(path, query)
        pauses = iter(self._connect_retry_pauses)
        reauthenticated = False
        while True:
            if method != "GET" and self._fence is not None:
                self._fence.check(f"{method} {path}")
            headers = self._headers(accept, content_type)
            try:
                response = self._http.request(
                    method, target, headers=headers, body=body, timeout=timeout, stream=stream
                )
            except (HTTPError, OSError) as exc:
                pause = next(pauses, None) if never_sent(exc) else None
                if pause is None:
                    raise ConnectionFailed(0, "ConnectionError", f"{method} {path}: {exc}") from exc
                self._clock.sleep(pause)
                continue
            if response.status != _UNAUTHORIZED or reauthenticated or not self._renewed():
                return response
            with contextlib.suppress(HTTPError, OSError):  # as drain_conn, but bounded
                read_body(response)
            reauthenticated = True

    def _renewed(self) -> bool:
        """After a 401: whether the credentials could be renewed now (an exec plugin run
        again), not at the next refresh. A renewed client certificate is presented only by
        new connections: the kept-alive ones go."""
        try:
            renewed = self.access.credentials.renew()
        except KubeConfigError as exc:  # nothing was sent: retried like a refused connection
            raise ConnectionFailed(0, "ConnectionError", str(exc)) from exc
        if renewed:
            self._auth = None
            self._http.renew_connections()
        return renewed

    def _target(self, path: str, query: QueryParams | None) -> str:
        target = self._prefix + path
        if query:
            target += "?" + urlencode(query, quote_via=quote)
        return target

    def _headers(self, accept: str, content_type: str) -> dict[str, str]:
        return {
            "User-Agent": self.user_agent,
            "Accept": accept,
            "Content-Type": content_type,
            **self._authorization(),
        }

    def _authorization(self) -> dict[str, str]:
        """The auth headers, asked of the credentials again only where they can change,
        and then at most every AUTH_REFRESH_INTERVAL."""
        now = self._clock.monotonic()
        credentials = self.access.credentials
        if self._auth is not None and (
            not credentials.changes or now - self._auth_read_at < AUTH_REFRESH_INTERVAL
        ):
            return self._auth
        try:
            self._auth = credentials.headers()
        except KubeConfigError as exc:  # nothing was sent: retried like a refused connection
            raise ConnectionFailed(0, "ConnectionError", str(exc)) from exc
        self._auth_read_at = now
        return self._auth


def _accept(metadata_only: bool, kind: str) -> str:
    """Plain JSON, or only each object's metadata (`as=PartialObjectMetadata[List]`), with
    plain JSON as the fallback a server without that transformation answers with."""
    if not metadata_only:
        return JSON
    return f"{JSON};as={kind};g=meta.k8s.io;v=v1,{JSON}"


def _query(**params: str | int | None) -> QueryParams:
    return [(key, str(value)) for key, value in params.items() if value is not None]
