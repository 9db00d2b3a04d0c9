"""A controller: informer events in, keys through a rate-limited queue, reconcile passes out.

The shape and the outcome rules are controller-runtime's:
- a pass returns `Result()` (done: forget the key's failures), `Result(requeue_after=s)`
  (forget, then look again in `s` seconds) or `Result(requeue=True)` (rate-limited);
- an `Exception` requeues the key with the rate limiter's backoff;
- a `TerminalError` is not retried: the object has to change first;
- a `NotLeader` (the write fence refused a write) ends the pass and is not requeued
  here: the replica that leads now owns the object;
- anything else that escapes a pass (a `BaseException` that is not an `Exception`,
  e.g. a stray `sys.exit()` in reconcile code) is counted as a panic, requeued like
  an error, and never takes the worker thread down.
Workers wait for every watched informer to sync before the first pass, so a pass
never acts on a half-filled cache.

Priorities (workqueue.py): a watch event a user caused (an add, a change, a deletion)
is queued at the default priority; the initial list, a resync and every
`requeue_after` re-check at the low one, so periodic work waits behind a user's. A
failed pass is retried at the priority it ran with.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from baseten_operator.runtime import metrics
from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.fence import NotLeader
from baseten_operator.runtime.logging import bound_context
from baseten_operator.runtime.repeats import RepeatLimiter
from baseten_operator.runtime.resource import Resource
from baseten_operator.runtime.workqueue import DEFAULT_PRIORITY, LOW_PRIORITY, RateLimitingQueue

_log = structlog.get_logger(__name__)

# How often a worker re-checks the informers before the caches have synced: soon at first
# (a start is quick), then less and less often, up to the cap (an optional kind whose CRD is
# not installed never syncs, and its workers must not keep waking up for it).
_SYNC_POLL_SECONDS = 0.05
_SYNC_POLL_MAX_SECONDS = 1.0


@dataclass(frozen=True)
class Request:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def for_object(cls, obj: dict) -> Request:
        metadata = obj.get("metadata") or {}
        return cls(metadata.get("namespace") or "", metadata["name"])


@dataclass
class Result:
    requeue_after: float | None = None
    requeue: bool = False


class TerminalError(Exception):
    """The pass cannot succeed until the object changes: do not retry."""


class ReportedError(Exception):
    """A failure the reconciler has already reported (in the object's status): requeued
    rate-limited like any error, but logged without a traceback, which would only repeat
    an expected outcome (a 5xx, a timeout) as if it were a bug."""


class Reconciler(Protocol):
    def reconcile(self, request: Request) -> Result: ...


class EventSource(Protocol):
    """The part of an informer a controller uses."""

    def add_event_handler(
        self,
        on_add: Callable[[dict], None] | None = None,
        on_update: Callable[[dict, dict], None] | None = None,
        on_delete: Callable[[dict], None] | None = None,
    ) -> None: ...

    def has_synced(self) -> bool: ...


MapFunc = Callable[[dict], Iterable[Request]]
UpdateFilter = Callable[[dict, dict], bool]  # (old, new) -> enqueue?

# Fields every write changes whatever it wrote: they say nothing about what changed.
_BOOKKEEPING = ("resourceVersion", "managedFields")


def _without_status(obj: dict) -> dict:
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _BOOKKEEPING}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": metadata}


def _is_resync(old: dict, new: dict) -> bool:
    """An informer resync hands the same object as old and new: nothing changed."""
    version = (old.get("metadata") or {}).get("resourceVersion")
    return version is not None and version == (new.get("metadata") or {}).get("resourceVersion")


def ignore_status_only_updates(old: dict, new: dict) -> bool:
    """An update filter for a controller that owns its objects' status.

    Its own status write comes back as a watch event; reconciling on it again would
    act on a cache that may not yet show the effect of the pass that wrote it (a
    remote change applied asynchronously, an external object just deleted) and
    repeat the side effect. Spec, label, annotation, finalizer and deletion changes still
    pass, and so does a resync (the same resourceVersion on both sides).
    """
    old_version = (old.get("metadata") or {}).get("resourceVersion")
    if old_version == (new.get("metadata") or {}).get("resourceVersion"):
        return True
    return _without_status(old) != _without_status(new)


class Controller:
    def __init__(
        self,
        name: str,
        informer: EventSource,
        reconciler: Reconciler,
        *,
        max_concurrent_reconciles: int = 5,
        queue: RateLimitingQueue | None = None,
        clock: Clock | None = None,
        update_filter: UpdateFilter | None = None,
        for_resource: Resource | None = None,
    ) -> None:
        """`for_resource`: the kind the controller reconciles, named in every pass's log
        lines the way controller-runtime names it (controllerGroup, controllerKind)."""
        if max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be at least 1")
        self._name = name
        self._for_resource = for_resource
        self._reconciler = reconciler
        self._workers_wanted = max_concurrent_reconciles
        self._clock: Clock = clock or RealClock()
        # `is None`, not `or`: an empty queue is falsy.
        self._queue = RateLimitingQueue(name, clock=self._clock) if queue is None else queue
        self._sources: list[EventSource] = []
        self._workers: list[threading.Thread] = []
        self._stop_requested = threading.Event()
        # One failure line per object a minute; the next one says how many were dropped.
        self._failure_log = RepeatLimiter(self._clock)

        self._total = {
            result: metrics.RECONCILE_TOTAL.labels(controller=name, result=result)
            for result in ("success", "error", "requeue", "requeue_after")
        }
        self._errors = metrics.RECONCILE_ERRORS.labels(controller=name)
        self._terminal_errors = metrics.TERMINAL_RECONCILE_ERRORS.labels(controller=name)
        self._panics = metrics.RECONCILE_PANICS.labels(controller=name)
        self._time = metrics.RECONCILE_TIME.labels(controller=name)
        self._active_workers = metrics.ACTIVE_WORKERS.labels(controller=name)
        metrics.MAX_CONCURRENT_RECONCILES.labels(controller=name).set(max_concurrent_reconciles)

        self.watch(informer, lambda obj: [Request.for_object(obj)], update_filter=update_filter)

    @property
    def name(self) -> str:
        return self._name

    @property
    def queue(self) -> RateLimitingQueue:
        return self._queue

    def watch(
        self, informer: EventSource, map_fn: MapFunc, *, update_filter: UpdateFilter | None = None
    ) -> None:
        """Enqueue whatever `map_fn` returns for each add, update (old and new) and delete.

        `update_filter(old, new)` returning False drops that update. Adds of the initial
        list (before the informer synced) and resyncs are queued at low priority.
        """

        def enqueue_mapped(obj: dict, priority: int) -> None:
            try:
                requests = list(map_fn(obj))
            except Exception:
                # A handler that raises would break the informer's dispatch loop.
                _log.exception("mapping a watch event failed", controller=self._name)
                return
            for request in requests:
                self._queue.add(request, priority)

        def on_add(obj: dict) -> None:
            enqueue_mapped(obj, DEFAULT_PRIORITY if informer.has_synced() else LOW_PRIORITY)

        def on_update(old: dict, new: dict) -> None:
            if update_filter is not None and not update_filter(old, new):
                return
            priority = LOW_PRIORITY if _is_resync(old, new) else DEFAULT_PRIORITY
            # Both sides: an object that stops referring to a primary must reach it too.
            enqueue_mapped(old, priority)
            enqueue_mapped(new, priority)

        def on_delete(obj: dict) -> None:
            enqueue_mapped(obj, DEFAULT_PRIORITY)

        informer.add_event_handler(on_add=on_add, on_update=on_update, on_delete=on_delete)
        self._sources.append(informer)

    def longest_running_pass(self) -> float:
        """Seconds the oldest pass in flight has been running (0 when idle)."""
        return max(self._queue.processing_ages(), default=0.0)

    def enqueue(self, request: Request, after: float = 0) -> None:
        """Queue `request` for a pass (a watch-caused one: default priority)."""
        self._queue.add_after(request, after)

    def start(self) -> None:
        if self._workers:
            raise RuntimeError(f"controller {self._name} already started")
        for index in range(self._workers_wanted):
            worker = threading.Thread(
                target=self._run_worker, name=f"{self._name}-worker-{index}", daemon=True
            )
            self._workers.append(worker)
            worker.start()
        _log.info("controller started", controller=self._name, workers=self._workers_wanted)

    def stop(self, drain_timeout: float) -> bool:
        """Start no new pass; wait up to `drain_timeout` (controller clock) for running ones.

        Returns whether every in-flight pass finished in time. Passes that did not
        keep running on their (daemon) threads; their outcome is no longer requeued.
        """
        self._stop_requested.set()
        drained = self._queue.shut_down_with_drain(timeout=drain_timeout)
        if drained:
            for worker in self._workers:
                worker.join()
        else:
            self._queue.shutdown()
        _log.info("controller stopped", controller=self._name, drained=drained)
        return drained

    # --- workers ----------------------------------------------------------------------

    def _run_worker(self) -> None:
        if not self._wait_for_caches():
            return
        while True:
            request, priority, shutdown = self._queue.get_with_priority()
            if shutdown:
                return
            try:
                if not self._stop_requested.is_set():
                    self._reconcile_once(request, priority)
            finally:
                self._queue.done(request)

    def _wait_for_caches(self) -> bool:
        pause = _SYNC_POLL_SECONDS
        while not all(source.has_synced() for source in self._sources):
            if self._stop_requested.wait(pause):
                return False
            pause = min(pause * 2, _SYNC_POLL_MAX_SECONDS)
        return True

    def _reconcile_once(self, request: Request, priority: int) -> None:
        self._active_workers.inc()
        started = self._clock.monotonic()
        try:
            with bound_context(**self._log_keys(request)):
                self._run_pass(request, priority)
        finally:
            self._time.observe(max(0.0, self._clock.monotonic() - started))
            self._active_workers.dec()

    def _log_keys(self, request: Request) -> dict[str, Any]:
        """The keys controller-runtime puts on a reconcile's log lines."""
        keys: dict[str, Any] = {"controller": self._name}
        resource = self._for_resource
        if resource is not None:
            keys["controllerGroup"] = resource.group
            keys["controllerKind"] = resource.kind
            keys[resource.kind] = {"name": request.name, "namespace": request.namespace}
        keys |= {
            "namespace": request.namespace,
            "name": request.name,
            "reconcileID": _new_reconcile_id,  # made only if the pass logs
        }
        return keys

    def _run_pass(self, request: Request, priority: int) -> None:
        try:
            result = self._reconciler.reconcile(request)
        except NotLeader as refused:
            self._queue.forget(request)
            _log.warning("write refused, pass abandoned to the leader", reason=refused.reason)
        except TerminalError as error:
            self._queue.forget(request)
            self._count_error()
            self._terminal_errors.inc()
            self._log_failure(
                request, "reconcile failed terminally, not retrying", error=str(error)
            )
        except ReportedError as error:
            self._queue.add_rate_limited(request, priority)
            self._count_error()
            self._log_failure(request, "reconcile failed", error=str(error))
        except Exception as error:
            self._queue.add_rate_limited(request, priority)
            self._count_error()
            self._log_failure(request, "reconcile failed", error=str(error), exc_info=error)
        except BaseException as crash:  # a worker must survive any pass
            self._queue.add_rate_limited(request, priority)
            self._count_error()
            self._panics.inc()
            self._log_failure(request, "reconcile crashed", error=repr(crash), exc_info=crash)
        else:
            self._apply_result(request, result, priority)

    def _log_failure(self, request: Request, event: str, **fields: object) -> None:
        repeats = self._failure_log.admit((request, event))
        if repeats is None:
            return
        if repeats:
            fields["repeats"] = repeats
        _log.error(event, **fields)

    def _count_error(self) -> None:
        self._errors.inc()
        self._total["error"].inc()

    def _apply_result(self, request: Request, result: Result, priority: int) -> None:
        if result.requeue_after is not None and result.requeue_after > 0:
            self._queue.forget(request)
            # A re-check nobody asked for: behind any watch event.
            self._queue.add_after(request, result.requeue_after, LOW_PRIORITY)
            self._total["requeue_after"].inc()
        elif result.requeue:
            self._queue.add_rate_limited(request, priority)
            self._total["requeue"].inc()
        else:
            self._queue.forget(request)
            self._total["success"].inc()


def _new_reconcile_id() -> str:
    return str(uuid.uuid4())
