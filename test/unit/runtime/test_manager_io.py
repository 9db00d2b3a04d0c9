"""Manager pieces that need no API server."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from baseten_operator.runtime import manager as manager_module
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.errors import NotFound, ServerError
from baseten_operator.runtime.fence import NotLeader
from baseten_operator.runtime.manager import (
    EXIT_LOST_LEASE,
    Manager,
    lease_namespace,
)
from baseten_operator.runtime.options import ManagerOptions
from baseten_operator.runtime.resource import CONFIGMAPS, NAMESPACES


def test_lease_namespace_prefers_configuration_then_the_pod_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert lease_namespace("ops") == "ops"
    pod_namespace = tmp_path / "namespace"
    pod_namespace.write_text("operators\n")
    monkeypatch.setattr(manager_module, "SERVICE_ACCOUNT_NAMESPACE_FILE", str(pod_namespace))
    assert lease_namespace("") == "operators"
    monkeypatch.setattr(manager_module, "SERVICE_ACCOUNT_NAMESPACE_FILE", str(tmp_path / "none"))
    assert lease_namespace("") == "default"


def test_informers_are_shared_per_resource_and_namespace(list_watch_client: Any) -> None:
    manager = Manager(list_watch_client, ManagerOptions(namespace="team-a"))
    default_ns = manager.informer(CONFIGMAPS)
    assert default_ns is manager.informer(CONFIGMAPS, "team-a")
    assert default_ns.namespace == "team-a"  # the watch namespace by default
    assert manager.informer(CONFIGMAPS, "team-b") is not default_ns
    cluster_scoped = manager.informer(NAMESPACES, "ignored")
    assert cluster_scoped is manager.informer(NAMESPACES)
    assert cluster_scoped.namespace is None


def test_stop_before_start_finishes_with_exit_code_0(list_watch_client: Any) -> None:
    manager = Manager(list_watch_client, ManagerOptions(), identity="solo")
    manager.stop()
    assert manager.wait() == 0
    assert not manager.is_leader


class StuckStopping:
    """A runnable whose stop blocks until `release` is set, whatever its timeout."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def start(self) -> None:
        pass

    def stop(self, timeout: float) -> bool:
        return self.release.wait(30)


def leading_manager(list_watch_client: Any, lease_client: Any, clock: FakeClock) -> Manager:
    options = ManagerOptions(
        leader_elect=True,
        leader_election_id="test-lease",
        leader_election_namespace="ops",
        metrics_bind_address="0",
        health_probe_bind_address="0",
    )
    return Manager(list_watch_client, options, clock=clock, identity="a", lease_client=lease_client)


def test_the_fence_passes_only_while_the_lease_is_held(
    list_watch_client: Any, lease_client: Any, advance_until: Callable[..., None]
) -> None:
    clock = FakeClock()
    manager = leading_manager(list_watch_client, lease_client, clock)
    with pytest.raises(NotLeader, match="leader election has not started"):
        manager.fence.check("PUT status")
    manager.start()
    advance_until(clock, lambda: manager.is_leader, step=0.5)
    manager.fence.check("PUT status")
    lease_client.fail = lambda verb: ServerError(500, "InternalError", "etcd down")
    advance_until(clock, lambda: manager.fence.closed, step=0.5)
    with pytest.raises(NotLeader, match="leadership lost"):
        manager.fence.check("PUT status")
    assert manager.wait(lost_lease_grace=1.0) == EXIT_LOST_LEASE


def test_a_replica_that_lost_its_lease_returns_within_the_grace_even_if_stuck_stopping(
    list_watch_client: Any, lease_client: Any, advance_until: Callable[..., None]
) -> None:
    clock = FakeClock()
    manager = leading_manager(list_watch_client, lease_client, clock)
    never = threading.Event()
    manager.add(StuckStopping(never))
    manager.start()
    advance_until(clock, lambda: manager.is_leader, step=0.5)
    lease_client.fail = lambda verb: ServerError(500, "InternalError", "etcd down")
    advance_until(clock, lambda: manager.fence.closed, step=0.5)
    # A component that never finishes stopping cannot keep a deposed leader alive.
    assert manager.wait(lost_lease_grace=0.2) == EXIT_LOST_LEASE
    never.set()
    # The stuck component let go: the shutdown finishes (and logs) before the test ends.
    assert manager.wait() == EXIT_LOST_LEASE


def test_a_leader_whose_renewal_hangs_is_deposed_and_exits_within_the_grace(
    list_watch_client: Any, lease_client: Any, advance_until: Callable[..., None]
) -> None:
    """The elector cannot report a renewal that never returns: the manager's watchdog
    deposes a leader that can no longer prove it leads."""
    clock = FakeClock()
    manager = leading_manager(list_watch_client, lease_client, clock)
    manager.start()
    advance_until(clock, lambda: manager.is_leader, step=0.5)
    released, calls = threading.Event(), len(lease_client.timeouts)
    lease_client.fail = lambda verb: None if released.wait() else None  # no answer comes
    try:
        # The next renewal starts, and hangs; then its deadline passes.
        advance_until(clock, lambda: len(lease_client.timeouts) > calls, step=0.5)
        clock.advance(manager.options.renew_deadline)
        exit_codes: list[int] = []
        waiter = threading.Thread(
            target=lambda: exit_codes.append(manager.wait(lost_lease_grace=0.2)), daemon=True
        )
        waiter.start()
        waiter.join(10.0)  # a bound for a broken watchdog, which would wait forever
        assert exit_codes == [EXIT_LOST_LEASE]
        assert manager.fence.closed
    finally:
        released.set()  # the hung request returns; the shutdown can finish
    assert manager.wait() == EXIT_LOST_LEASE


class WatchdogClock(FakeClock):
    """Fake time that reports every timeout the thread named "waiter" waits with."""

    def __init__(self) -> None:
        super().__init__()
        self.waiter_timeouts: queue.Queue[float | None] = queue.Queue()

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        if threading.current_thread().name == "waiter":
            self.waiter_timeouts.put(timeout)
        super().wait(condition, timeout)


def test_the_watchdog_sleeps_until_the_leaders_proof_would_lapse(
    list_watch_client: Any, lease_client: Any, advance_until: Callable[..., None]
) -> None:
    clock = WatchdogClock()
    manager = leading_manager(list_watch_client, lease_client, clock)
    exit_codes: list[int] = []
    waiter = threading.Thread(
        target=lambda: exit_codes.append(manager.wait(lost_lease_grace=1.0)),
        name="waiter",
        daemon=True,
    )
    waiter.start()
    assert clock.waiter_timeouts.get(timeout=10) is None  # not leading: nothing to watch
    manager.start()
    advance_until(clock, lambda: manager.is_leader, step=0.5)
    # Leading: one sleep until the last renewal's proof lapses, not a poll.
    renew_deadline, retry_period = manager.options.renew_deadline, manager.options.retry_period
    timeout = None
    while timeout is None:  # each advance before leadership woke it to wait with None again
        timeout = clock.waiter_timeouts.get(timeout=10)
    assert renew_deadline - retry_period <= timeout <= renew_deadline
    manager.stop()
    waiter.join(10.0)
    assert exit_codes == [0]


def test_a_shutdown_closes_the_fence(list_watch_client: Any) -> None:
    manager = Manager(
        list_watch_client,
        ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0"),
        identity="solo",
    )
    manager.start()
    manager.fence.check("PUT status")  # no leader election: the proof always holds
    manager.stop()
    with pytest.raises(NotLeader, match="shutting down"):
        manager.fence.check("PUT status")
    assert manager.wait() == 0


class Recorded:
    """A runnable that writes its starts and stops (with their timeouts) to a shared log."""

    def __init__(self, name: str, log: list[tuple[str, str, float | None]]) -> None:
        self.name = name
        self.log = log

    def start(self) -> None:
        self.log.append(("start", self.name, None))

    def stop(self, timeout: float) -> bool:
        self.log.append(("stop", self.name, timeout))
        return True


def test_work_drains_first_then_each_service_stops_within_its_own_budget(
    list_watch_client: Any,
) -> None:
    log: list[tuple[str, str, float | None]] = []
    manager = Manager(
        list_watch_client,
        ManagerOptions(
            metrics_bind_address="0", health_probe_bind_address="0", shutdown_timeout=7.0
        ),
        identity="solo",
    )
    manager.add(Recorded("events", log), stop_timeout=5.0)
    manager.add(Recorded("pushes", log), stop_timeout=10.0)
    manager.add(Recorded("controller", log))
    manager.start()  # no leader election: leading at once
    late = Recorded("late-controller", log)
    manager.add(late)  # added while leading: started at once
    assert log == [
        ("start", "events", None),
        ("start", "pushes", None),
        ("start", "controller", None),
        ("start", "late-controller", None),
    ]
    log.clear()
    manager.stop()
    assert manager.wait() == 0
    # The controllers drain together (any order) within shutdown_timeout; the services
    # they use stop only then, in the order added, each with its own budget.
    assert sorted(log[:2]) == [("stop", "controller", 7.0), ("stop", "late-controller", 7.0)]
    assert log[2:] == [("stop", "events", 5.0), ("stop", "pushes", 10.0)]


class RecordedWatches:
    def __init__(self, log: list[tuple[str, str, float | None]]) -> None:
        self.log = log

    def stop(self, timeout: float) -> None:
        self.log.append(("stop", "watches", timeout))


def test_watches_started_on_demand_stop_with_the_informers(list_watch_client: Any) -> None:
    log: list[tuple[str, str, float | None]] = []
    manager = Manager(
        list_watch_client,
        ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0"),
        identity="solo",
    )
    informer = manager.informer(CONFIGMAPS)
    stop_informer = informer.stop

    def recorded_stop(timeout: float = 5.0) -> None:
        log.append(("stop", "informer", timeout))
        stop_informer(timeout)

    informer.stop = recorded_stop  # type: ignore[method-assign]
    manager.add_watches(RecordedWatches(log))
    manager.start()
    manager.stop()
    assert manager.wait() == 0
    assert log == [
        ("stop", "informer", 5.0),
        ("stop", "watches", manager_module.WATCHES_STOP_TIMEOUT),
    ]


def test_liveness_checks_are_registered_before_the_start(list_watch_client: Any) -> None:
    manager = Manager(
        list_watch_client,
        ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0"),
        identity="solo",
    )
    manager.add_liveness_check("workers", lambda: True)
    manager.start()
    with pytest.raises(RuntimeError, match="fixed once the manager started"):
        manager.add_liveness_check("late", lambda: True)
    manager.stop()
    assert manager.wait() == 0


NOT_SERVED = NotFound(404, "NotFound", "the server could not find the requested resource")


@pytest.mark.parametrize("optional", [True, False])
def test_readiness_waits_for_a_kind_the_server_does_not_serve_only_if_it_is_required(
    list_watch_client: Any, wait_until: Callable[..., None], optional: bool
) -> None:
    list_watch_client.list_errors = [NOT_SERVED]
    manager = Manager(
        list_watch_client,
        ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0"),
        clock=FakeClock(),  # the informer's retry waits on it: the 404 stays the last answer
        identity="solo",
    )
    informer = manager.informer(CONFIGMAPS, optional=optional)
    manager.start()
    try:
        wait_until(lambda: informer.unserved, what="the 404 seen")
        assert not informer.has_synced()
        assert manager.informers_synced() is optional
    finally:
        manager.stop()
        manager.wait()
