"""End to end: a leader frozen longer than its Lease is fenced, and exits once it resumes.

Two `baseten-operator run --leader-elect` processes on a real kube-apiserver (its audit log
tells their writes apart) and the simulator. The
leader is stopped (SIGSTOP) for 20 s; meanwhile the CRs get new sources, the other replica
takes the Lease and promotes them. On SIGCONT the old leader must not write anything more
(no Baseten call, no status, finalizer or Event write: told apart by the identity each
replica sends in its User-Agent) and must exit non-zero within the renew deadline + 1 s.
"""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import pytest

from testsupport.e2e.harness import LEASE_DURATION, RENEW_DEADLINE, TIME_SCALE, basetenmodel
from testsupport.polling import Timeout, wait_for
from testsupport.soak.checks import (
    WRITE_METHODS,
    Tracked,
    operator_kube_writes,
    writes_after_deposition,
)
from testsupport.soak.run import ENV, NAMESPACE, serves, spec_of
from testsupport.soak.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

# Longer than the lease, so the standby takes over while the leader is frozen.
FREEZE = LEASE_DURATION + 4.0
CRS = 4


def test_frozen_leader_writes_nothing_after_the_takeover_and_exits(tmp_path: Path) -> None:
    stack = Stack.start(tmp_path, api_key=f"freeze-{uuid.uuid4().hex}", time_scale=TIME_SCALE)
    failures: list[str] = []
    try:
        stack.kubectl.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        stack.start_replica()
        stack.start_replica()
        leader = stack.leader()
        standby = next(r for r in stack.replicas if r is not leader)
        tracked = [Tracked(f"freeze-{i}", "reconcile") for i in range(CRS)]
        for t in tracked:
            t.model_id = stack.sim.control("seed_model", name=t.name)["id"]
            for build in ("build-1", "build-2"):
                stack.sim.control("seed_deployment", model_id=t.model_id, name=build)
        stack.kubectl.apply(*(basetenmodel(t.name, NAMESPACE, spec_of(t)) for t in tracked))
        _wait_serving(stack, tracked, timeout=60.0)

        leader.signal(signal.SIGSTOP)
        stopped_at = time.time()
        # The world moves on while the leader is frozen: every CR gets a new source.
        for t in tracked:
            t.source = "build-2"
        stack.kubectl.apply(*(basetenmodel(t.name, NAMESPACE, spec_of(t)) for t in tracked))
        takeover_at = wait_for(
            lambda: next((t for t in standby.became_leader() if t > stopped_at), None),
            timeout=LEASE_DURATION + FREEZE,
            interval=0.2,
        )
        time.sleep(max(0.0, stopped_at + FREEZE - time.time()))  # the freeze's length itself

        leader.signal(signal.SIGCONT)
        resumed_at = time.time()
        code = leader.wait_exit(RENEW_DEADLINE + 1)
        if code is None:
            failures.append(
                f"the old leader {leader.label} still runs {RENEW_DEADLINE + 1:.0f}s after SIGCONT"
            )
        elif code == 0:
            failures.append(
                f"the old leader exited 0 ({time.time() - resumed_at:.1f}s after SIGCONT)"
            )
        baseten = [
            e
            for e in stack.operator_requests()
            if e["method"] in WRITE_METHODS and e["path"].startswith("/v1")
        ]
        kube = operator_kube_writes(stack.kube_writes())
        failures += writes_after_deposition([leader, standby], baseten, "Baseten")
        failures += writes_after_deposition([leader, standby], kube, "Kubernetes")
        assert takeover_at > stopped_at
        try:
            _wait_serving(stack, tracked, timeout=30.0)
        except Timeout as error:
            failures.append(f"the new leader did not promote every new source: {error}")
        for t in tracked:
            env = stack.baseten_get(f"/models/{t.model_id}/environments/{ENV}").json()
            if env["current_deployment"]["name"] != t.source:
                failures.append(f"{t.name}: {ENV} serves {env['current_deployment']['name']}")
    finally:
        stack.stop()
    assert not failures, "\n".join(failures) + f"\n(logs in {tmp_path})"


def _wait_serving(stack: Stack, tracked: list[Tracked], *, timeout: float) -> None:
    def probe() -> bool:
        listing = stack.kubectl.json("get", "basetenmodels", "-n", NAMESPACE)
        objects = {o["metadata"]["name"]: o for o in listing.get("items") or []}
        return all(serves(objects.get(t.name), t.source) for t in tracked)

    wait_for(probe, timeout=timeout, interval=0.5)
