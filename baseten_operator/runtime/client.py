"""A thin dynamic Kubernetes client that speaks plain JSON dicts.

It rides on `kubernetes.client.ApiClient` for configuration and authentication (TLS
trust, client certificates, proxy, tokens), but never deserializes into the generated
models: every response is `json.loads`-ed, which is much cheaper and works for custom
resources alike. Requests go through a lean keep-alive pool (http1.py) built from that
configuration; watches, long-lived streams, through the ApiClient's own urllib3 pool. The
generated client's per-request work (serializing the body through its model sanitizer,
rebuilding the URL and the auth settings) would be pure overhead for plain dicts. A
request that could not connect is tried again (CONNECT_RETRY_PAUSES); one that may have
reached the server never is: the caller decides. The bearer token is read
once, unless the configuration has a refresh hook (kubeconfig tokens, exec plugins, OIDC,
the service account's rotated token): that is asked again every few seconds, not on every
request, since each call re-runs the loader.
Errors become the typed `ApiError` subclasses of errors.py; what a request names is a
`Resource` (resource.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import threading
from collections.abc import Iterator
from typing import Any, Literal
from urllib.parse import quote, urlencode, urlsplit

import certifi
import structlog
import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.errors import ConnectionFailed, api_error
from baseten_operator.runtime.fence import WriteFence
from baseten_operator.runtime.http1 import Answer, ConnectFailed, Pool, Proxy
from baseten_operator.runtime.resource import Resource

log = structlog.get_logger(__name__)

DEFAULT_REQUEST_TIMEOUT = 30.0
# A watch is expected to send something (an event or a bookmark) or to end at its
# `timeoutSeconds`; a stream silent well past that is dead and must be abandoned.
WATCH_READ_GRACE = 30.0
WATCH_CONNECT_TIMEOUT = 10.0
# Connections kept open to the API server. The client's default (5 per CPU) is fewer than
# one process uses at once (a watch per informer, the workers, the Event writers): past it,
# every extra request opened a connection and threw it away.
CONNECTION_POOL_SIZE = 32
# How often a configuration's token refresh hook is asked again. The loaders renew a token
# well before it expires (a kubeconfig's 5 minutes early; the service account's file is
# re-read every minute), so asking every few seconds never sends an expired token.
AUTH_REFRESH_INTERVAL = 5.0

QueryParams = list[tuple[str, str]]
# A merge or strategic patch is an object; a JSON patch (RFC 6902) is a list of operations.
PatchBody = dict[str, Any] | list[dict[str, Any]]
# Requests are tried again only when they could not connect (nothing was sent), with
# these pauses between attempts. Answers, 429 and 5xx included, go back to the caller as
# typed errors: sleeping out a Retry-After here would block a worker and hide the
# throttling from the controller.
CONNECT_RETRY_PAUSES = (0.0, 0.2, 0.4)
# Watches: urllib3's equivalent (connect failures only, nothing else retried).
WATCH_CONNECT_RETRIES = urllib3.Retry(
    total=3, connect=3, read=0, status=0, other=0, redirect=0, backoff_factor=0.1,
    respect_retry_after_header=False,
)  # fmt: skip

PatchType = Literal["merge", "json", "strategic"]
_PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}


def _decode(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


class WatchStream(Iterator[dict[str, Any]]):
    """The events of one watch request, read line by line as they arrive.

    `close()` may be called from another thread: it shuts the socket down so a
    reader blocked on it returns at once, and iteration then ends quietly.
    """

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self._response = response
        self._lines = iter(response)
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._finished = False

    def __next__(self) -> dict[str, Any]:
        while True:
            try:
                line = next(self._lines)
            except StopIteration:
                self._finish(reusable=True)
                raise
            except Exception as exc:
                if self._closed.is_set():
                    raise StopIteration from None
                self._finish(reusable=False)
                if isinstance(exc, urllib3.exceptions.HTTPError | OSError | ValueError):
                    raise ConnectionFailed(0, "ConnectionError", f"watch broke: {exc}") from exc
                raise
            if not line.strip():
                continue
            event = json.loads(line)
            if event.get("type") == "ERROR":
                self._finish(reusable=False)
                status = event.get("object") or {}
                raise api_error(int(status.get("code") or 500), status)
            return dict(event)

    def close(self) -> None:
        self._closed.set()
        self._finish(reusable=False)

    def _finish(self, *, reusable: bool) -> None:
        with self._lock:
            if self._finished:
                return
            self._finished = True
            if not reusable:
                # Shut the socket first: that is what wakes a reader blocked in recv.
                with contextlib.suppress(Exception):
                    self._response.shutdown()
                self._response.close()
            self._response.release_conn()


class _Wire:
    """Where an ApiClient's watches go, worked out once: the host's urllib3 pool, the URL
    prefix."""

    def __init__(self, api_client: k8s_client.ApiClient) -> None:
        host = api_client.configuration.host
        manager = api_client.rest_client.pool_manager
        origin = urlsplit(host)
        self.prefix = origin.path.rstrip("/")
        # The ApiClient decided whether a proxy applies (its no_proxy included).
        self.proxied = isinstance(manager, urllib3.ProxyManager)
        # A plain-HTTP API server behind a forwarding proxy gets absolute URLs (the
        # manager does that); anything else goes straight to the host's pool.
        self.forwarded = self.proxied and origin.scheme == "http"
        self.origin = f"{origin.scheme}://{origin.netloc}"
        self.manager = manager
        self.pool = manager.connection_from_url(host)

    def urlopen(
        self, method: str, target: str, *, headers: dict[str, str], timeout: urllib3.Timeout
    ) -> urllib3.BaseHTTPResponse:
        if self.forwarded:
            return self.manager.urlopen(
                method,
                self.origin + target,
                headers=headers,
                timeout=timeout,
                redirect=False,
                preload_content=False,
            )
        return self.pool.urlopen(
            method,
            target,
            headers=headers,
            timeout=timeout,
            redirect=False,
            assert_same_host=False,
            preload_content=False,
        )


class KubeClient:
    def __init__(
        self,
        api_client: k8s_client.ApiClient,
        *,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        fence: WriteFence | None = None,
        clock: Clock | None = None,
        http: Pool | None = None,
        connect_retry_pauses: tuple[float, ...] = CONNECT_RETRY_PAUSES,
    ) -> None:
        self.api_client = api_client
        self.request_timeout = request_timeout
        self._fence = fence
        self._clock: Clock = clock or RealClock()
        self._wire = _Wire(api_client)
        self._http = http or _request_pool(api_client.configuration, proxied=self._wire.proxied)
        self._connect_retry_pauses = connect_retry_pauses
        self._auth: dict[str, str] | None = None
        self._auth_read_at = 0.0

    def fenced(self, fence: WriteFence) -> KubeClient:
        """This client, sharing its connections, with every write passing `fence` first."""
        return KubeClient(
            self.api_client,
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
            self.api_client,
            request_timeout=self.request_timeout,
            clock=self._clock,
            connect_retry_pauses=(),
        )

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, context: str | None = None) -> KubeClient:
        configuration = k8s_client.Configuration()
        k8s_config.load_kube_config(
            config_file=path, context=context, client_configuration=configuration
        )
        return cls.from_configuration(configuration)

    @classmethod
    def in_cluster(cls) -> KubeClient:
        configuration = k8s_client.Configuration()
        k8s_config.load_incluster_config(client_configuration=configuration)
        return cls.from_configuration(configuration)

    @classmethod
    def from_configuration(cls, configuration: k8s_client.Configuration) -> KubeClient:
        configuration.retries = WATCH_CONNECT_RETRIES
        configuration.connection_pool_maxsize = max(
            configuration.connection_pool_maxsize or 0, CONNECTION_POOL_SIZE
        )
        return cls(k8s_client.ApiClient(configuration))

    @classmethod
    def auto(cls) -> KubeClient:
        """$KUBECONFIG, else ~/.kube/config, else the pod's service account."""
        env_path = os.environ.get("KUBECONFIG")
        if env_path:
            return cls.from_kubeconfig(env_path.split(os.pathsep)[0])
        home_config = os.path.expanduser("~/.kube/config")
        if os.path.exists(home_config):
            return cls.from_kubeconfig(home_config)
        return cls.in_cluster()

    def close(self) -> None:
        self._http.close()
        self.api_client.close()

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
        response = self._send(
            "GET",
            res.path(namespace),
            query=query,
            timeout=(WATCH_CONNECT_TIMEOUT, read_timeout),
            accept=_accept(metadata_only, "PartialObjectMetadata"),
        )
        if not 200 <= response.status <= 299:
            self._raise(response)
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
        if method != "GET" and self._fence is not None:
            self._fence.check(f"{method} {path}")
        bound = self.request_timeout if timeout is None else timeout
        payload = None if body is None else json.dumps(body).encode()
        try:
            answer = self._request(
                method, self._target(path, query), self._headers(accept, content_type),
                payload, bound,
            )  # fmt: skip
        except OSError as exc:
            raise ConnectionFailed(0, "ConnectionError", f"{method} {path}: {exc}") from exc
        if not 200 <= answer.status <= 299:
            raise api_error(answer.status, _decode(answer.data), answer.headers.get("Retry-After"))
        return _decode(answer.data)

    def _request(
        self, method: str, target: str, headers: dict[str, str], body: bytes | None, bound: float
    ) -> Answer:
        """Send, trying again after each pause while no connection could be made."""
        pauses = iter(self._connect_retry_pauses)
        while True:
            try:
                return self._http.request(
                    method, target, headers=headers, body=body,
                    connect_timeout=bound, read_timeout=bound,
                )  # fmt: skip
            except ConnectFailed:
                pause = next(pauses, None)
                if pause is None:
                    raise
                self._clock.sleep(pause)

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: QueryParams | None = None,
        timeout: tuple[float, float | None],
        accept: str = "application/json",
    ) -> urllib3.BaseHTTPResponse:
        """A streamed request (watches), through the ApiClient's urllib3 pool."""
        try:
            return self._wire.urlopen(
                method,
                self._target(path, query),
                headers=self._headers(accept, "application/json"),
                timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ConnectionFailed(0, "ConnectionError", f"{method} {path}: {exc}") from exc

    def _target(self, path: str, query: QueryParams | None) -> str:
        target = self._wire.prefix + path
        if query:
            target += "?" + urlencode(query, quote_via=quote)
        return target

    def _headers(self, accept: str, content_type: str) -> dict[str, str]:
        return {
            **self.api_client.default_headers,  # the User-Agent, set after construction too
            "Accept": accept,
            "Content-Type": content_type,
            **self._authorization(),
        }

    def _authorization(self) -> dict[str, str]:
        """The auth headers, asked of the configuration again only where its token can
        change, and then at most every AUTH_REFRESH_INTERVAL."""
        configuration = self.api_client.configuration
        now = self._clock.monotonic()
        if self._auth is not None and (
            configuration.refresh_api_key_hook is None
            or now - self._auth_read_at < AUTH_REFRESH_INTERVAL
        ):
            return self._auth
        headers = {
            setting["key"]: setting["value"]
            for setting in configuration.auth_settings().values()  # runs the refresh hook
            if setting["in"] == "header" and setting["value"]
        }
        self._auth, self._auth_read_at = headers, now
        return headers

    @staticmethod
    def _raise(response: urllib3.BaseHTTPResponse) -> None:
        try:
            data = response.data
        finally:
            response.release_conn()
        raise api_error(response.status, _decode(data), response.headers.get("Retry-After"))


JSON = "application/json"


def _accept(metadata_only: bool, kind: str) -> str:
    """Plain JSON, or only each object's metadata (`as=PartialObjectMetadata[List]`), with
    plain JSON as the fallback a server without that transformation answers with."""
    if not metadata_only:
        return JSON
    return f"{JSON};as={kind};g=meta.k8s.io;v=v1,{JSON}"


def _query(**params: str | int | None) -> QueryParams:
    return [(key, str(value)) for key, value in params.items() if value is not None]


def _request_pool(configuration: k8s_client.Configuration, *, proxied: bool) -> Pool:
    """The requests' connections, configured as the ApiClient's pool would be."""
    tls = None
    if urlsplit(configuration.host).scheme == "https":
        tls = ssl.create_default_context(cafile=configuration.ssl_ca_cert or certifi.where())
        if not configuration.verify_ssl:
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        elif configuration.assert_hostname is False:
            tls.check_hostname = False
        if configuration.cert_file:
            tls.load_cert_chain(configuration.cert_file, configuration.key_file)
    proxy = None
    if proxied and configuration.proxy:
        proxy = Proxy(configuration.proxy, dict(configuration.proxy_headers or {}))
    return Pool(
        configuration.host,
        tls=tls,
        server_hostname=configuration.tls_server_name or None,
        proxy=proxy,
        maxsize=CONNECTION_POOL_SIZE,
    )
