"""Leader election protocol steps against an in-memory Lease store, on a fake clock."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from baseten_operator.runtime import metrics
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.errors import Conflict, ServerError
from baseten_operator.runtime.leaderelection import LeaderElector, lease_time

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def elector(lease_client: Any, clock: FakeClock) -> Callable[..., LeaderElector]:
    def build(identity: str, **kwargs: Any) -> LeaderElector:
        return LeaderElector(
            lease_client,
            name="op-lock",
            namespace="ops",
            identity=identity,
            clock=clock,
            **kwargs,
        )

    return build


def spec(lease_client: Any) -> dict[str, Any]:
    return dict(lease_client.leases[("ops", "op-lock")]["spec"])


def test_lease_time_is_rfc3339_with_microseconds() -> None:
    assert lease_time(1_767_225_600.25) == "2026-01-01T00:00:00.250000Z"


def test_first_candidate_creates_the_lease(lease_client: Any, elector: Callable) -> None:
    a = elector("a")
    assert a.try_acquire_or_renew()
    record = spec(lease_client)
    assert record["holderIdentity"] == "a"
    assert record["leaseDurationSeconds"] == 15
    assert record["leaseTransitions"] == 0
    assert MICRO_TIME.match(record["acquireTime"])
    assert record["renewTime"] == record["acquireTime"]


def test_a_held_lease_is_respected_until_it_expires_on_the_local_clock(
    lease_client: Any, elector: Callable, clock: FakeClock
) -> None:
    a, b = elector("a"), elector("b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert b.leader == "a"
    clock.advance(14.9)
    assert not b.try_acquire_or_renew()  # b first saw this record 14.9 s ago
    clock.advance(0.2)
    assert b.try_acquire_or_renew()
    record = spec(lease_client)
    assert record["holderIdentity"] == "b"
    assert record["leaseTransitions"] == 1
    assert record["acquireTime"] == lease_time(clock.now())


def test_renewal_keeps_acquire_time_and_transitions(
    lease_client: Any, elector: Callable, clock: FakeClock
) -> None:
    a, b = elector("a"), elector("b")
    assert a.try_acquire_or_renew()
    acquired = spec(lease_client)["acquireTime"]
    for _ in range(5):
        clock.advance(10)
        assert a.try_acquire_or_renew()
        # Every renewal changes the record, so b's view of it stays fresh.
        assert not b.try_acquire_or_renew()
    record = spec(lease_client)
    assert record["acquireTime"] == acquired
    assert record["renewTime"] == lease_time(clock.now())
    assert record["leaseTransitions"] == 0


def test_conflicting_write_loses_the_race(lease_client: Any, elector: Callable) -> None:
    a = elector("a")
    assert a.try_acquire_or_renew()
    lease_client.fail = lambda verb: Conflict(409, "Conflict", "x") if verb == "update" else None
    assert not a.try_acquire_or_renew()


def test_new_leader_callback_reports_each_holder_once(
    lease_client: Any, elector: Callable, clock: FakeClock
) -> None:
    seen: list[str] = []
    a, b = elector("a"), elector("b", on_new_leader=seen.append)
    assert a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    b.try_acquire_or_renew()
    clock.advance(16)
    b.try_acquire_or_renew()
    assert seen == ["a", "b"]


def test_run_leads_renews_and_loses_when_renewals_fail(
    lease_client: Any, elector: Callable, clock: FakeClock, advance_until: Callable
) -> None:
    events: list[str] = []
    a = elector(
        "a",
        on_started_leading=lambda: events.append("started"),
        on_stopped_leading=lambda: events.append("stopped"),
    )
    a.start()
    advance_until(clock, lambda: a.is_leader, step=0.5)
    assert events == ["started"]
    gauge = metrics.REGISTRY.get_sample_value("leader_election_master_status", {"name": "op-lock"})
    assert gauge == 1.0
    assert a.healthy()

    lease_client.fail = lambda verb: ServerError(500, "InternalError", "etcd down")
    advance_until(clock, lambda: events == ["started", "stopped"], step=0.5)
    assert not a.is_leader
    gauge = metrics.REGISTRY.get_sample_value("leader_election_master_status", {"name": "op-lock"})
    assert gauge == 0.0
    a.stop(timeout=5)
    # Lost, not released: the lease still names a until it expires.
    assert spec(lease_client)["holderIdentity"] == "a"


def test_stop_releases_the_lease(
    lease_client: Any, elector: Callable, clock: FakeClock, advance_until: Callable
) -> None:
    a = elector("a")
    a.start()
    advance_until(clock, lambda: a.is_leader, step=0.5)
    a.stop(timeout=5)
    assert not a.is_leader
    record = spec(lease_client)
    assert record["holderIdentity"] == ""
    assert record["leaseDurationSeconds"] == 1
    b = elector("b")
    assert b.try_acquire_or_renew()  # no waiting out the old lease
    assert spec(lease_client)["leaseTransitions"] == 1


def test_healthy_turns_false_for_a_leader_that_stopped_renewing(
    elector: Callable, clock: FakeClock
) -> None:
    a = elector("a")
    assert a.try_acquire_or_renew()
    a._leading = True  # a leader whose renew loop hung (a blocked call): nothing renews
    clock.advance(15)
    assert a.healthy()
    clock.advance(1)
    assert not a.healthy()
    assert a.healthy(tolerance=5)


def test_invalid_timings_are_refused(elector: Callable) -> None:
    with pytest.raises(ValueError):
        elector("a", lease_duration=5, renew_deadline=10)


# --- the proof the write fence asks for (stricter than client-go) ----------------------


def test_a_leader_proves_it_leads_until_the_renew_deadline_passes(
    elector: Callable, clock: FakeClock
) -> None:
    a = elector("a")
    assert a.refusal() == "this replica is not the leader"
    assert a.try_acquire_or_renew()
    a._set_leading(True)
    assert a.refusal() is None
    clock.advance(9.9)
    assert a.refusal() is None
    clock.advance(0.1)  # a frozen leader wakes up past its renew deadline
    assert a.refusal() == "the lease was last renewed 10.0s ago (renew deadline 10s)"


def test_seeing_another_holder_ends_leadership_at_once(
    lease_client: Any, elector: Callable, clock: FakeClock
) -> None:
    a = elector("a")
    assert a.try_acquire_or_renew()
    a._set_leading(True)
    # Someone else wrote the lease (a, frozen, was given up for dead).
    lease_client.leases[("ops", "op-lock")]["spec"]["holderIdentity"] = "b"
    assert not a.try_acquire_or_renew()
    assert a.refusal() == "the lease is held by b"
    clock.advance(100)
    assert not a.try_acquire_or_renew()  # never "expires" back to a


def test_lease_requests_are_bounded_by_the_time_left_before_the_deadline(
    lease_client: Any, elector: Callable, clock: FakeClock
) -> None:
    a = elector("a")
    assert a.try_acquire_or_renew(deadline=clock.monotonic() + 4.0)
    assert lease_client.timeouts == [4.0, 4.0]  # get (NotFound), then create
    lease_client.timeouts.clear()
    clock.advance(1.5)
    assert a.try_acquire_or_renew(deadline=clock.monotonic() + 2.5)
    assert lease_client.timeouts == [2.5, 2.5]
    lease_client.timeouts.clear()
    assert not a.try_acquire_or_renew(deadline=clock.monotonic())
    assert lease_client.timeouts == []  # no time left: nothing is sent


def test_a_leader_frozen_past_its_deadline_is_lost_on_waking_without_trying(
    lease_client: Any, elector: Callable, clock: FakeClock, advance_until: Callable
) -> None:
    stopped: list[str] = []
    a = elector("a", on_stopped_leading=lambda: stopped.append("stopped"))
    a.start()
    advance_until(clock, lambda: a.is_leader, step=0.5)
    # Freeze: every renewal fails from now on, and time jumps past the renew deadline
    # (a SIGSTOP'd process sees one big step of its monotonic clock).
    lease_client.fail = lambda verb: ServerError(500, "InternalError", "unreachable")
    clock.advance(20)
    advance_until(clock, lambda: stopped == ["stopped"], step=0.01)
    assert a.refusal() == "this replica is not the leader"
    a.stop(timeout=5)


def test_renewals_that_keep_failing_lose_leadership_by_the_deadline_from_the_last_success(
    lease_client: Any, elector: Callable, clock: FakeClock, advance_until: Callable
) -> None:
    stopped: list[float] = []
    a = elector("a", on_stopped_leading=lambda: stopped.append(clock.monotonic()))
    a.start()
    advance_until(clock, lambda: a.is_leader, step=0.5)
    last_success = a._renewed_at
    lease_client.fail = lambda verb: ServerError(500, "InternalError", "etcd down")
    advance_until(clock, lambda: bool(stopped), step=0.5)
    # Lost before the renew deadline counted from the last renewal that worked (client-go
    # restarted its deadline on every attempt, so a flapping API kept a leader alive).
    assert stopped[0] - last_success <= a.renew_deadline + 0.5
    a.stop(timeout=5)
