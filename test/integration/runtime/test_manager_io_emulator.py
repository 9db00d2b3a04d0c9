"""The manager on the emulator: probes, controllers gated on leadership, shutdown paths."""

from __future__ import annotations

import os
import signal
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from baseten_operator.runtime.controller import Controller, Request, Result
from baseten_operator.runtime.manager import Manager, install_signal_handlers
from baseten_operator.runtime.options import ManagerOptions
from baseten_operator.runtime.resource import CONFIGMAPS


class RecordingReconciler:
    """Records every request; a pass can be held open to test draining."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.hold = threading.Event()
        self.release = threading.Event()
        self.release.set()
        self.in_pass = threading.Event()
        self.finished: list[str] = []
        self._lock = threading.Lock()

    def reconcile(self, request: Request) -> Result:
        with self._lock:
            self.seen.append(request.name)
        if self.hold.is_set():
            self.in_pass.set()
            self.release.wait(30)
        with self._lock:
            self.finished.append(request.name)
        return Result()


def status_of(address: tuple[str, int] | None, path: str) -> int:
    assert address is not None
    host, port = address
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def configmap(name: str, namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": {}}


@pytest.fixture
def make_manager(
    make_client: Callable[[], Any], namespace: str
) -> Iterator[Callable[..., tuple[Manager, RecordingReconciler, Any]]]:
    managers: list[tuple[Manager, Any]] = []

    def build(
        identity: str | None = None, **options: Any
    ) -> tuple[Manager, RecordingReconciler, Any]:
        client = make_client()
        manager = Manager(
            client,
            ManagerOptions(
                metrics_bind_address="127.0.0.1:0",
                health_probe_bind_address="127.0.0.1:0",
                namespace=namespace,
                **{"leader_election_id": f"it-{uuid.uuid4().hex[:6]}", **options},
            ),
            identity=identity,
        )
        reconciler = RecordingReconciler()
        informer = manager.informer(CONFIGMAPS)
        name = f"cm-{uuid.uuid4().hex[:6]}"
        manager.add(Controller(name, informer, reconciler, max_concurrent_reconciles=1))
        managers.append((manager, client))
        return manager, reconciler, client

    yield build
    for manager, client in managers:
        client.partitioned.clear()
        manager.stop()


def test_ready_after_sync_reconciles_and_stop_drains_in_flight_pass(
    make_manager: Callable, kube: Any, namespace: str, wait_until: Callable
) -> None:
    kube.create(CONFIGMAPS, configmap("first", namespace))
    manager, reconciler, _ = make_manager(shutdown_timeout=10.0)
    manager.start()
    assert manager.is_leader  # no election: leader at once
    wait_until(lambda: status_of(manager.health_address, "/readyz") == 200)
    assert status_of(manager.health_address, "/healthz") == 200
    assert status_of(manager.metrics_address, "/metrics") == 200
    wait_until(lambda: "first" in reconciler.finished)

    reconciler.hold.set()
    reconciler.release.clear()
    kube.create(CONFIGMAPS, configmap("slow", namespace))
    assert reconciler.in_pass.wait(10)

    stopper = threading.Thread(target=manager.stop)
    stopper.start()
    # Shutdown has begun (readiness drops) while the pass is still running.
    wait_until(lambda: status_of(manager.health_address, "/readyz") == 500)
    assert "slow" not in reconciler.finished
    reconciler.release.set()
    assert manager.wait() == 0
    stopper.join(10)
    assert "slow" in reconciler.finished
    assert not manager.is_leader


def test_only_the_leader_runs_controllers_and_a_lost_lease_exits_1(
    make_manager: Callable, kube: Any, namespace: str, wait_until: Callable
) -> None:
    timings = {"leader_elect": True, "lease_duration": 2.0, "renew_deadline": 1.0}
    a, a_reconciler, a_client = make_manager(retry_period=0.2, identity="a", **timings)
    a.start()
    wait_until(lambda: a.is_leader)
    # b shares a's Lease (same id) but has its own informers and controller.
    b, b_reconciler, _ = make_manager(
        retry_period=0.2,
        identity="b",
        **{**timings, "leader_election_id": a.options.leader_election_id},
    )
    b.start()
    wait_until(lambda: status_of(b.health_address, "/readyz") == 200)  # warm, not leading
    kube.create(CONFIGMAPS, configmap("one", namespace))
    wait_until(lambda: "one" in a_reconciler.finished)
    assert not b.is_leader
    assert b_reconciler.seen == []

    a_client.partitioned.set()  # a cannot renew any more
    assert a.wait() == 1
    assert not a.is_leader
    wait_until(lambda: b.is_leader, timeout=10)
    wait_until(lambda: "one" in b_reconciler.finished)  # b's warm cache, its own pass


def test_clean_stop_releases_the_lease_for_the_other_replica(
    make_manager: Callable, wait_until: Callable
) -> None:
    # A long lease: b takes over within this test only thanks to a's release.
    timings = {"leader_elect": True, "lease_duration": 30.0, "renew_deadline": 20.0}
    a, _, _ = make_manager(retry_period=0.2, identity="a", **timings)
    a.start()
    wait_until(lambda: a.is_leader)
    b, _, _ = make_manager(
        retry_period=0.2,
        identity="b",
        **{**timings, "leader_election_id": a.options.leader_election_id},
    )
    b.start()
    a.stop()
    assert a.wait() == 0
    wait_until(lambda: b.is_leader, timeout=10)


def test_sigterm_stops_the_manager_with_exit_code_0(
    make_manager: Callable, wait_until: Callable
) -> None:
    manager, _, _ = make_manager()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        install_signal_handlers(manager)
        manager.start()
        wait_until(lambda: status_of(manager.health_address, "/readyz") == 200)
        os.kill(os.getpid(), signal.SIGTERM)
        assert manager.wait() == 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert manager.health_address is None  # probes are down once stopped
