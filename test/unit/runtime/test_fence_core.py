"""The write fence: writes pass only with a proof of leadership; closing wakes every wait."""

from __future__ import annotations

import threading

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.fence import NotLeader, WriteFence


def test_without_leader_election_every_write_passes() -> None:
    fence = WriteFence()
    fence.check("PUT status")
    assert fence.refusal() is None


def test_a_write_is_refused_with_the_reason_the_proof_gives() -> None:
    reasons: list[str | None] = [None]
    fence = WriteFence(lambda: reasons[0])
    fence.check("POST promote")
    reasons[0] = "the lease is held by b"
    with pytest.raises(NotLeader) as refused:
        fence.check("POST promote")
    assert str(refused.value) == "refused POST promote: the lease is held by b"
    assert refused.value.reason == "the lease is held by b"


def test_a_closed_fence_refuses_whatever_the_proof_says() -> None:
    fence = WriteFence()
    fence.close("shutting down")
    fence.close("leadership lost")  # the first reason stays
    with pytest.raises(NotLeader, match="shutting down"):
        fence.check("PATCH environment")
    assert fence.closed


def test_sleep_waits_on_the_clock() -> None:
    clock = FakeClock()
    fence = WriteFence(clock=clock)
    done = threading.Event()
    thread = threading.Thread(target=lambda: (fence.sleep(5, "backoff"), done.set()))
    thread.start()
    while not done.is_set():
        clock.advance(1)
        done.wait(0.01)
    thread.join(5)
    assert clock.monotonic() >= 5


def test_closing_the_fence_interrupts_a_sleep() -> None:
    clock = FakeClock()
    fence = WriteFence(clock=clock)
    outcome: list[BaseException] = []
    sleeping = threading.Event()

    def sleeper() -> None:
        sleeping.set()
        try:
            fence.sleep(3600, "a 429's Retry-After")
        except NotLeader as refused:
            outcome.append(refused)

    thread = threading.Thread(target=sleeper)
    thread.start()
    sleeping.wait(5)
    fence.close("leadership lost")
    thread.join(5)
    assert not thread.is_alive()
    assert [str(e) for e in outcome] == ["refused a 429's Retry-After: leadership lost"]
    assert clock.monotonic() == 0.0  # no time had to pass


def test_interrupting_waits_wakes_sleepers_but_lets_writes_through() -> None:
    clock = FakeClock()
    fence = WriteFence(clock=clock)
    fence.interrupt_waits("shutting down")
    with pytest.raises(NotLeader, match="shutting down"):
        fence.sleep(30, "backoff")
    fence.check("PUT status")  # the drain still records what its passes did
    assert not fence.closed
