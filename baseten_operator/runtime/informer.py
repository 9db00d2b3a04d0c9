"""A shared informer: an indexed cache of one resource kept current by list+watch.

The reflector lists (paged), then watches from the list's resourceVersion with
bookmarks. A watch that ends resumes from the last resourceVersion seen; a 410 Gone
relists and replaces the cache, telling handlers what changed meanwhile. Failures
back off with jitter. Handlers run on the informer's threads; a handler that raises
is logged and never stops the informer.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.clock import Clock, RealClock, sleep_unless
from baseten_operator.runtime.errors import Forbidden, Gone, NotFound, TooManyRequests
from baseten_operator.runtime.resource import Resource, object_key

log = structlog.get_logger(__name__)

IndexFunc = Callable[[dict[str, Any]], list[str]]
AddHandler = Callable[[dict[str, Any]], None]
UpdateHandler = Callable[[dict[str, Any], dict[str, Any]], None]
DeleteHandler = Callable[[dict[str, Any]], None]

ObjectList = list[dict[str, Any]]

NAMESPACE_INDEX = "namespace"
DEFAULT_PAGE_SIZE = 500
# client-go picks each watch's timeout at random in [5 min, 10 min): watches of many
# informers then do not all expire together.
DEFAULT_WATCH_TIMEOUT = 300.0


class Closeable(Protocol):
    def close(self) -> None: ...


def namespace_index(obj: dict[str, Any]) -> list[str]:
    return [(obj.get("metadata") or {}).get("namespace") or ""]


class Backoff:
    """Capped exponential backoff with full jitter on the upper half (client-go style)."""

    def __init__(self, initial: float = 0.2, cap: float = 30.0, factor: float = 2.0) -> None:
        self._initial = initial
        self._cap = cap
        self._factor = factor
        self._current = initial

    def next_delay(self) -> float:
        delay = self._current
        self._current = min(self._cap, self._current * self._factor)
        return delay * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        self._current = self._initial


# A watch that stayed up this long was working, even if it delivered nothing.
HEALTHY_WATCH_SECONDS = 1.0


@dataclass
class _WatchProgress:
    """What one watch attempt achieved: a healthy one resets the reconnect backoff."""

    started: float
    events: int = 0

    def healthy(self, now: float) -> bool:
        return self.events > 0 or now - self.started >= HEALTHY_WATCH_SECONDS


class Store:
    """Thread-safe map of key -> object with secondary indices."""

    def __init__(self, indexers: dict[str, IndexFunc]) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, dict[str, Any]] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        for name, fn in indexers.items():
            self.add_indexer(name, fn)

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        with self._lock:
            if name in self._indexers:
                raise ValueError(f"indexer {name!r} already exists")
            self._indexers[name] = fn
            self._indices[name] = {}
            for key, obj in self._items.items():
                self._index(name, key, obj)

    def upsert(self, key: str, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Store `obj`; returns the previous object under `key`, if any."""
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._unindex(key, old)
            self._items[key] = obj
            for name in self._indexers:
                self._index(name, key, obj)
            return old

    def remove(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._unindex(key, old)
            return old

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._items.get(key)

    def items(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return dict(self._items)

    def by_index(self, name: str, value: str) -> list[dict[str, Any]]:
        with self._lock:
            if name not in self._indices:
                raise KeyError(f"no indexer {name!r}")
            keys = self._indices[name].get(value, ())
            return [self._items[key] for key in sorted(keys)]

    def _index(self, name: str, key: str, obj: dict[str, Any]) -> None:
        for value in self._indexers[name](obj):
            self._indices[name].setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: dict[str, Any]) -> None:
        for name, fn in self._indexers.items():
            index = self._indices[name]
            for value in fn(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]


class _Handlers:
    def __init__(
        self,
        on_add: AddHandler | None,
        on_update: UpdateHandler | None,
        on_delete: DeleteHandler | None,
    ) -> None:
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete


class Informer:
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_period: float | None = None,
        indexers: dict[str, IndexFunc] | None = None,
        clock: Clock | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        watch_timeout: float = DEFAULT_WATCH_TIMEOUT,
        metadata_only: bool = False,
    ) -> None:
        """`metadata_only`: cache each object's metadata only (PartialObjectMetadata);
        `field_selector`: only the objects it selects (`metadata.name=x`: one object)."""
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync_period = resync_period
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.metadata_only = metadata_only
        self._clock: Clock = clock or RealClock()
        self._store = Store({NAMESPACE_INDEX: namespace_index, **(indexers or {})})
        self._handlers: list[_Handlers] = []
        # Held while the store changes and handlers run, so a handler registered late
        # sees every object exactly once (replayed, then live).
        self._dispatch_lock = threading.RLock()
        self._synced = threading.Event()
        # The API server answered the last list with 404: it does not serve the type (a CRD
        # not installed yet). Listed again with backoff, so a CRD installed later is found.
        self._unserved = False
        # The last list or watch was refused (403): what the cache holds may no longer be
        # readable by this client (its RBAC was revoked), however synced it once was.
        self._refused = False
        self._stopped = threading.Event()
        self._wake = threading.Condition()
        self._watch_lock = threading.Lock()
        self._current_watch: Closeable | None = None
        self._threads: list[threading.Thread] = []
        self._last_resource_version: str | None = None
        self._log = log.bind(resource=resource.plural, namespace=namespace or "*")

    # -- public API ---------------------------------------------------------------------

    def add_event_handler(
        self,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: DeleteHandler | None = None,
    ) -> None:
        handlers = _Handlers(on_add, on_update, on_delete)
        with self._dispatch_lock:
            self._handlers.append(handlers)
            if on_add is not None:
                for obj in self._store.items().values():
                    self._call(on_add, obj)

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        self._store.add_indexer(name, fn)

    def start(self) -> None:
        if self._threads:
            return
        name = f"informer-{self.resource.plural}"
        self._threads.append(threading.Thread(target=self._run, name=name, daemon=True))
        if self.resync_period:
            self._threads.append(
                threading.Thread(target=self._resync_loop, name=f"{name}-resync", daemon=True)
            )
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped.set()
        with self._watch_lock:
            if self._current_watch is not None:
                self._current_watch.close()
        with self._wake:
            self._wake.notify_all()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    @property
    def refused(self) -> bool:
        """Whether the last list or watch was refused (403) and no list has worked since."""
        return self._refused

    @property
    def unserved(self) -> bool:
        """Whether the last list was answered 404: the API server does not serve the type."""
        return self._unserved

    def wait_for_sync(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self._store.get(f"{namespace}/{name}" if namespace else name)

    def list(self, namespace: str | None = None) -> ObjectList:
        if namespace is not None:
            return self._store.by_index(NAMESPACE_INDEX, namespace)
        return list(self._store.items().values())

    def by_index(self, index: str, value: str) -> ObjectList:
        return self._store.by_index(index, value)

    @property
    def last_resource_version(self) -> str | None:
        """The resourceVersion a watch would resume from (client-go's LastSyncResourceVersion)."""
        return self._last_resource_version

    # -- reflector ----------------------------------------------------------------------

    def _run(self) -> None:
        backoff = Backoff()
        need_list = True
        while not self._stopped.is_set():
            watch = _WatchProgress(self._clock.monotonic())
            try:
                if need_list:
                    self._list_and_replace()
                    need_list = False
                    backoff.reset()
                self._watch_once(watch)
                if watch.healthy(self._clock.monotonic()):
                    backoff.reset()
                    continue
                # A watch that ended at once with nothing to say: do not spin on it.
            except Gone:
                self._log.info("resourceVersion expired, relisting")
                if not need_list:
                    need_list = True
                    continue
                # Even the fresh list was Gone (an expired continue token): back off.
            except Exception as exc:
                if self._stopped.is_set():
                    return
                self._log_failure(exc, need_list)
                if watch.healthy(self._clock.monotonic()):
                    # It broke after working: a flaky network or an API server restart is
                    # no reason to stretch every reconnect towards the cap.
                    backoff.reset()
                if isinstance(exc, TooManyRequests) and exc.retry_after:
                    self._wait(max(exc.retry_after, backoff.next_delay()))
                    continue
            self._wait(backoff.next_delay())

    def _log_failure(self, exc: Exception, listing: bool) -> None:
        unserved = listing and isinstance(exc, NotFound)
        if not unserved:
            self._log.warning("list/watch failed", error=str(exc), relist=listing)
        elif not self._unserved:
            # Said once, not at every retry: an operator may run for good without a CRD it
            # can use (one installed after it is picked up at the next list).
            self._log.warning(
                "the API server does not serve this resource (is its CRD installed?); "
                "listing again with backoff",
                error=str(exc),
            )
        self._unserved = unserved
        self._refused = isinstance(exc, Forbidden)

    def _list_and_replace(self) -> None:
        items: list[dict[str, Any]] = []
        continue_token: str | None = None
        while True:
            page = self.client.list(
                self.resource,
                self.namespace,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                limit=self.page_size,
                continue_token=continue_token,
                metadata_only=self.metadata_only,
            )
            for item in page.get("items") or []:
                # List items carry no type: give them one so handlers see whole objects.
                item.setdefault("apiVersion", self.resource.api_version)
                item.setdefault("kind", self.resource.kind)
                items.append(item)
            meta = page.get("metadata") or {}
            continue_token = meta.get("continue") or None
            if continue_token is None:
                self._last_resource_version = meta.get("resourceVersion")
                break
        self._replace({object_key(item): item for item in items})
        self._unserved = self._refused = False
        if not self._synced.is_set():
            self._log.info("informer synced", objects=len(items))
            self._synced.set()
            with self._wake:
                self._wake.notify_all()  # the resync loop starts counting now

    def _replace(self, fresh: dict[str, dict[str, Any]]) -> None:
        with self._dispatch_lock:
            current = self._store.items()
            for key, gone in current.items():
                if key not in fresh:
                    self._store.remove(key)
                    self._dispatch_delete(gone)
            for key, obj in fresh.items():
                previous = self._store.upsert(key, obj)
                if previous is None:
                    self._dispatch_add(obj)
                elif _resource_version(previous) != _resource_version(obj):
                    self._dispatch_update(previous, obj)

    def _watch_once(self, progress: _WatchProgress) -> None:
        """Run one watch to its end, counting into `progress` what it delivered."""
        timeout = int(self.watch_timeout * random.uniform(1.0, 2.0))
        stream = self.client.watch(
            self.resource,
            self.namespace,
            resource_version=self._last_resource_version,
            timeout_seconds=max(1, timeout),
            allow_bookmarks=True,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            metadata_only=self.metadata_only,
        )
        with self._watch_lock:
            self._current_watch = stream
        try:
            if self._stopped.is_set():
                progress.events += 1  # stopping: nothing to back off from
                return
            for event in stream:
                progress.events += 1
                self._apply(event)
                if self._stopped.is_set():
                    break
        finally:
            with self._watch_lock:
                self._current_watch = None
            stream.close()

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        version = _resource_version(obj)
        if kind == "BOOKMARK":
            if version:
                self._last_resource_version = version
            return
        key = object_key(obj)
        with self._dispatch_lock:
            if kind in ("ADDED", "MODIFIED"):
                old = self._store.upsert(key, obj)
                if old is None:
                    self._dispatch_add(obj)
                else:
                    self._dispatch_update(old, obj)
            elif kind == "DELETED":
                self._store.remove(key)
                self._dispatch_delete(obj)
            else:
                self._log.warning("unknown watch event type", type=kind)
        if version:
            self._last_resource_version = version

    def _wait(self, seconds: float) -> None:
        sleep_unless(self._clock, self._wake, self._stopped, seconds)

    def _resync_loop(self) -> None:
        assert self.resync_period is not None
        with self._wake:
            while not (self._synced.is_set() or self._stopped.is_set()):
                self._wake.wait()
        while not self._stopped.is_set():
            self._wait(self.resync_period)
            if self._stopped.is_set():
                return
            with self._dispatch_lock:
                for obj in self._store.items().values():
                    self._dispatch_update(obj, obj)

    # -- dispatch -----------------------------------------------------------------------

    def _dispatch_add(self, obj: dict[str, Any]) -> None:
        for handlers in self._handlers:
            if handlers.on_add is not None:
                self._call(handlers.on_add, obj)

    def _dispatch_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        for handlers in self._handlers:
            if handlers.on_update is not None:
                self._call(handlers.on_update, old, new)

    def _dispatch_delete(self, obj: dict[str, Any]) -> None:
        for handlers in self._handlers:
            if handlers.on_delete is not None:
                self._call(handlers.on_delete, obj)

    def _call(self, handler: Callable[..., None], *objs: dict[str, Any]) -> None:
        try:
            handler(*objs)
        except Exception:
            self._log.exception("event handler failed", handler=getattr(handler, "__name__", "?"))


def _resource_version(obj: dict[str, Any]) -> str | None:
    version = (obj.get("metadata") or {}).get("resourceVersion")
    return str(version) if version is not None else None
