"""Leader election between candidates sharing one Lease on the emulator (real time)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from baseten_operator.runtime.leaderelection import ACQUIRE_JITTER, LeaderElector
from baseten_operator.runtime.resource import LEASES

LEASE, RENEW, RETRY = 2.0, 1.0, 0.2
# The longest a candidate sleeps between attempts (jittered acquire loop).
MAX_POLL = RETRY * (1 + ACQUIRE_JITTER)


class Candidate:
    def __init__(self, client: Any, identity: str, **timings: float) -> None:
        self.client = client
        self.timeline: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        self.elector = LeaderElector(
            client,
            name="it-lock",
            namespace="default",
            identity=identity,
            on_started_leading=lambda: self._mark("started"),
            on_stopped_leading=lambda: self._mark("stopped"),
            **{"lease_duration": LEASE, "renew_deadline": RENEW, "retry_period": RETRY, **timings},
        )

    def _mark(self, what: str) -> None:
        with self._lock:
            self.timeline.append((what, time.monotonic()))

    def when(self, what: str) -> float | None:
        with self._lock:
            return next((at for name, at in self.timeline if name == what), None)


@pytest.fixture
def candidates(make_client: Callable[[], Any]) -> Iterator[Callable[..., Candidate]]:
    started: list[Candidate] = []

    def start(identity: str, **timings: float) -> Candidate:
        candidate = Candidate(make_client(), identity, **timings)
        candidate.elector.start()
        started.append(candidate)
        return candidate

    yield start
    for candidate in started:
        candidate.client.partitioned.clear()
        candidate.elector.stop(timeout=10)


def leaders(*candidates: Candidate) -> list[Candidate]:
    return [c for c in candidates if c.elector.is_leader]


def test_exactly_one_of_two_leads(
    candidates: Callable[..., Candidate], kube: Any, wait_until: Callable
) -> None:
    a, b = candidates("a"), candidates("b")
    wait_until(lambda: len(leaders(a, b)) == 1)
    # Watch both for a few lease renewals: never two leaders, never a change of leader.
    leader = leaders(a, b)[0]
    deadline = time.monotonic() + LEASE
    while time.monotonic() < deadline:
        assert leaders(a, b) == [leader]
        time.sleep(RETRY / 4)
    spec = kube.get(LEASES, "it-lock", "default")["spec"]
    assert spec["holderIdentity"] == leader.elector.identity
    assert spec["leaseTransitions"] == 0


def test_takeover_when_the_leader_stops_renewing(
    candidates: Callable[..., Candidate], kube: Any, wait_until: Callable
) -> None:
    a = candidates("a")
    wait_until(lambda: a.elector.is_leader)
    b = candidates("b")
    wait_until(lambda: b.elector.leader == "a")

    a.client.partitioned.set()  # a can no longer reach the API: it cannot renew
    cut = time.monotonic()
    wait_until(lambda: b.elector.is_leader, timeout=LEASE + 5)
    took_over = b.when("started")
    lost = a.when("stopped")
    assert took_over is not None
    assert took_over - cut <= LEASE + 2 * MAX_POLL + 0.5
    # The old leader stood down (renew deadline) before the new one started: no overlap.
    assert lost is not None and lost < took_over
    assert not a.elector.is_leader
    spec = kube.get(LEASES, "it-lock", "default")["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1


def test_release_on_shutdown_hands_over_at_once(
    candidates: Callable[..., Candidate], wait_until: Callable
) -> None:
    # A long lease: without the release, b would have to wait it out.
    long = {"lease_duration": 30.0, "renew_deadline": 20.0}
    a = candidates("a", **long)
    wait_until(lambda: a.elector.is_leader)
    b = candidates("b", **long)
    wait_until(lambda: b.elector.leader == "a")

    a.elector.stop(timeout=10)
    assert a.when("stopped") is not None
    wait_until(lambda: b.elector.is_leader, timeout=10)
