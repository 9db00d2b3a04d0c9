"""Fixtures of the runtime unit tests: a fake informer fired by hand, a scriptable
list/watch client and an in-memory Lease store, metric samples, polling with a deadline."""

from __future__ import annotations

import copy
import queue
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.errors import AlreadyExists, Conflict, NotFound
from baseten_operator.runtime.metrics import REGISTRY
from baseten_operator.runtime.resource import Resource
from testsupport.forward_proxy import proxies  # noqa: F401 (a fixture)
from testsupport.scripted_http import serve  # noqa: F401 (a fixture)


class FakeInformer:
    """The informer surface a controller uses, fired by hand."""

    def __init__(self, synced: bool = True) -> None:
        self.synced = synced
        self._handlers: list[tuple[Callable | None, Callable | None, Callable | None]] = []
        self._lock = threading.Lock()

    def add_event_handler(
        self,
        on_add: Callable[[dict], None] | None = None,
        on_update: Callable[[dict, dict], None] | None = None,
        on_delete: Callable[[dict], None] | None = None,
    ) -> None:
        with self._lock:
            self._handlers.append((on_add, on_update, on_delete))

    def has_synced(self) -> bool:
        return self.synced

    def fire_add(self, obj: dict) -> None:
        for on_add, _, _ in self._handlers:
            if on_add:
                on_add(obj)

    def fire_update(self, old: dict, new: dict) -> None:
        for _, on_update, _ in self._handlers:
            if on_update:
                on_update(old, new)

    def fire_delete(self, obj: dict) -> None:
        for _, _, on_delete in self._handlers:
            if on_delete:
                on_delete(obj)


def make_object(name: str, namespace: str = "default", **metadata: object) -> dict:
    return {"metadata": {"name": name, "namespace": namespace, **metadata}}


@pytest.fixture
def informer_factory() -> Callable[..., FakeInformer]:
    return FakeInformer


@pytest.fixture
def obj() -> Callable[..., dict]:
    return make_object


@pytest.fixture
def wait_until() -> Callable[..., None]:
    """Poll `predicate` until true; fail after `timeout` real seconds. For states reached on
    another thread (a controller's workers, an informer's watch), never for fake time."""

    def wait(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what or predicate}")
            time.sleep(0.002)

    return wait


@pytest.fixture
def unique_name() -> str:
    """Metric series are process-wide: a fresh label per test keeps counts independent."""
    return f"test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def sample() -> Callable[..., float]:
    def read(metric: str, /, **labels: str) -> float:
        return REGISTRY.get_sample_value(metric, labels) or 0.0

    return read


# The API a controller's informer and the leader elector talk to, scripted by the test.

END = object()  # a clean end of the watch stream (the server's timeout)


class FakeWatch:
    """A watch whose events the test feeds; iteration blocks like a real stream."""

    def __init__(self, resource_version: str | None) -> None:
        self.resource_version = resource_version
        self._events: queue.Queue[Any] = queue.Queue()
        self.closed = threading.Event()

    def feed(self, item: Any) -> None:
        self._events.put(item)

    def end(self) -> None:
        """The server ends the stream cleanly (its timeoutSeconds)."""
        self._events.put(END)

    def close(self) -> None:
        self.closed.set()
        self._events.put(END)

    def __iter__(self) -> FakeWatch:
        return self

    def __next__(self) -> dict[str, Any]:
        item = self._events.get()
        if item is END:
            self.closed.set()
            raise StopIteration
        if isinstance(item, Exception):
            raise item
        return dict(item)


class FakeListWatchClient:
    """Serves `list` from `objects` (paged) and hands out `FakeWatch`es in order."""

    def __init__(self) -> None:
        self.objects: list[dict[str, Any]] = []
        self.resource_version = "100"
        self.list_calls: list[dict[str, Any]] = []
        self.list_errors: list[Exception] = []
        self.watches: list[FakeWatch] = []
        self._lock = threading.Condition()

    def list(self, res: Resource, namespace: str | None = None, **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            self.list_calls.append(kwargs)
            if self.list_errors:
                raise self.list_errors.pop(0)
            start = int(kwargs.get("continue_token") or 0)
            limit = kwargs.get("limit") or len(self.objects)
            page = [copy.deepcopy(obj) for obj in self.objects[start : start + limit]]
            meta: dict[str, Any] = {"resourceVersion": self.resource_version}
            if start + limit < len(self.objects):
                meta["continue"] = str(start + limit)
            return {"kind": "List", "metadata": meta, "items": page}

    def watch(self, res: Resource, namespace: str | None = None, **kwargs: Any) -> FakeWatch:
        with self._lock:
            stream = FakeWatch(kwargs.get("resource_version"))
            self.watches.append(stream)
            self._lock.notify_all()
            return stream

    def wait_for_watch(self, count: int, timeout: float = 5.0) -> FakeWatch:
        """The `count`-th watch (1-based), once the informer has opened it."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.watches) >= count, timeout):
                raise AssertionError(f"watch #{count} never opened ({len(self.watches)} so far)")
            return self.watches[count - 1]


def make_obj(name: str, namespace: str = "default", rv: str = "1", **labels: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "resourceVersion": rv,
            "labels": dict(labels),
        },
    }


class FakeLeaseClient:
    """An in-memory Lease API with resourceVersion checks, as the elector uses it."""

    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self._rv = 0
        self._lock = threading.Lock()
        self.fail: Callable[[str], Exception | None] = lambda verb: None
        # The timeout of each request, in order: renewals must be bounded by the deadline.
        self.timeouts: list[float | None] = []

    def _bump(self, obj: dict[str, Any]) -> dict[str, Any]:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        return copy.deepcopy(obj)

    def get(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        with self._lock:
            self.timeouts.append(timeout)
            error = self.fail("get")
            if error:
                raise error
            lease = self.leases.get((namespace or "", name))
            if lease is None:
                raise NotFound(404, "NotFound", name)
            return copy.deepcopy(lease)

    def create(
        self,
        res: Resource,
        body: dict,
        namespace: str | None = None,
        *,
        timeout: float | None = None,
    ) -> dict:
        with self._lock:
            self.timeouts.append(timeout)
            error = self.fail("create")
            if error:
                raise error
            key = (namespace or "", body["metadata"]["name"])
            if key in self.leases:
                raise AlreadyExists(409, "AlreadyExists", key[1])
            self.leases[key] = copy.deepcopy(body)
            return self._bump(self.leases[key])

    def update(self, res: Resource, body: dict, *, timeout: float | None = None) -> dict:
        with self._lock:
            self.timeouts.append(timeout)
            error = self.fail("update")
            if error:
                raise error
            meta = body["metadata"]
            key = (meta["namespace"], meta["name"])
            current = self.leases[key]
            if current["metadata"]["resourceVersion"] != meta.get("resourceVersion"):
                raise Conflict(409, "Conflict", "stale resourceVersion")
            self.leases[key] = copy.deepcopy(body)
            return self._bump(self.leases[key])


@pytest.fixture
def list_watch_client() -> FakeListWatchClient:
    return FakeListWatchClient()


@pytest.fixture(name="make_obj")
def make_obj_fixture() -> Callable[..., dict]:
    return make_obj


@pytest.fixture
def lease_client() -> FakeLeaseClient:
    return FakeLeaseClient()


def advance_until(clock: FakeClock, predicate: Callable[[], Any], step: float) -> None:
    """Move fake time on in steps until `predicate` holds.

    The thread under test may not be waiting yet when the test first advances; a
    single big advance could land before its wait starts and be missed.
    """
    deadline = time.monotonic() + 5.0
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached while advancing the fake clock")
        clock.advance(step)
        time.sleep(0.005)


@pytest.fixture(name="advance_until")
def advance_until_fixture() -> Callable[..., None]:
    return advance_until
