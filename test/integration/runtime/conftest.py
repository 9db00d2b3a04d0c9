"""The Kubernetes API emulator and clients on it for the runtime integration tests."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.errors import ConnectionFailed
from baseten_operator.runtime.resource import NAMESPACES, Resource
from baseten_operator.sim.kube import KubeApiServer


class ProbedClient(KubeClient):
    """A real client that counts its requests and can be cut off from the API.

    `partitioned` makes every request fail as a network partition would, which is
    how a replica "stops renewing" its Lease without stopping its own process.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.partitioned = threading.Event()
        self.calls: list[tuple[str, str]] = []
        self._calls_lock = threading.Lock()

    def watch(self, res: Resource, namespace: str | None = None, **kwargs: Any) -> Any:
        self._probe("watch", res.path(namespace))
        return super().watch(res, namespace, **kwargs)

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:  # every other request
        self._probe(method, path)
        return super()._json(method, path, **kwargs)

    def _probe(self, verb: str, path: str) -> None:
        if self.partitioned.is_set():
            raise ConnectionFailed(0, "ConnectionError", "partitioned by the test")
        with self._calls_lock:
            self.calls.append((verb, path))

    def count(self, verb: str) -> int:
        with self._calls_lock:
            return sum(1 for call_verb, _ in self.calls if call_verb == verb)


@pytest.fixture
def kube_server() -> Iterator[KubeApiServer]:
    # Short bookmarks so resume-from-bookmark is exercised within a test's time.
    server = KubeApiServer(bookmark_interval=0.5)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(kube_server: KubeApiServer, tmp_path: Path) -> str:
    return kube_server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def make_client(kubeconfig: str) -> Iterator[Callable[[], ProbedClient]]:
    clients: list[ProbedClient] = []

    def build() -> ProbedClient:
        base = KubeClient.from_kubeconfig(kubeconfig)
        client = ProbedClient(base.access, request_timeout=10.0)
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()


@pytest.fixture
def kube(make_client: Callable[[], ProbedClient]) -> ProbedClient:
    return make_client()


@pytest.fixture
def namespace(kube: ProbedClient) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def eventually(predicate: Callable[[], Any], timeout: float = 10.0, message: str = "") -> None:
    """Poll a real state until it holds, failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(message or "condition not reached in time")
        time.sleep(0.01)


@pytest.fixture
def wait_until() -> Callable[..., None]:
    return eventually
