"""Fixtures shared by the runtime-core tests: a fake informer, polling with a deadline."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

import pytest

from baseten_operator.runtime.metrics import REGISTRY


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
    """Poll `predicate` until true; fail after `timeout` real seconds."""

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
