"""The operator's default Lease is the Go operator's: while a Go replica holds it, this
operator only waits; it leads once that Lease expires (a migration never has two leaders)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from baseten_operator.config import OperatorOptions
from baseten_operator.main import manager_options
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.leaderelection import lease_time
from baseten_operator.runtime.manager import Manager

GO_LEASE = "020848ba.baseten.com"
GO_HOLDER = "baseten-operator-controller-manager-6d5f9_0b1c"


def go_held_lease(clock: FakeClock) -> dict[str, Any]:
    now = lease_time(clock.now())
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": GO_LEASE, "namespace": "baseten-operator-system"},
        "spec": {
            "holderIdentity": GO_HOLDER,
            "leaseDurationSeconds": 15,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 3,
        },
    }


def test_a_lease_the_go_operator_holds_blocks_this_operator_until_it_expires(
    list_watch_client: Any,
    lease_client: Any,
    monkeypatch: pytest.MonkeyPatch,
    advance_until: Callable[..., None],
) -> None:
    monkeypatch.setenv("POD_NAMESPACE", "baseten-operator-system")
    clock = FakeClock()
    lease_client.create(None, go_held_lease(clock), "baseten-operator-system")
    options = manager_options(
        OperatorOptions(leader_elect=True, metrics_bind_address="0", health_probe_bind_address="0")
    )
    assert (options.leader_election_id, options.leader_election_namespace) == (
        GO_LEASE,
        "baseten-operator-system",
    )
    manager = Manager(
        list_watch_client, options, clock=clock, identity="python", lease_client=lease_client
    )
    manager.start()
    try:
        started = clock.now()
        # The Go holder never renews: this operator leads once 15 s have passed since it
        # first saw that record, and not before.
        advance_until(clock, lambda: manager.is_leader, step=0.5)
        assert clock.now() - started >= 15
        spec = lease_client.leases[("baseten-operator-system", GO_LEASE)]["spec"]
        assert spec["holderIdentity"] == "python"
        assert spec["leaseTransitions"] == 4
    finally:
        manager.stop()
        manager.wait()
