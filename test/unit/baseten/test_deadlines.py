"""The deadline reaper (baseten/deadlines.py): woken only when a call's deadline comes before
the time it already plans to wake at, and still cutting every call that overstays.

The reaper's own thread runs as in production; what it is told (each `notify` on its
condition) is counted, and a cut is observed on a real socket pair.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from baseten_operator.baseten.deadlines import DeadlinePassed, _Call, _Reaper


class CountingCondition(threading.Condition):
    def __init__(self) -> None:
        super().__init__()
        self.notified = 0

    def notify(self, n: int = 1) -> None:
        self.notified += 1
        super().notify(n)


@dataclass
class Connection:
    """What the reaper handles: anything with a `sock`."""

    sock: socket.socket


@pytest.fixture
def pair() -> Iterator[tuple[Connection, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.settimeout(10)  # a reaper that never cuts fails the test instead of hanging it
    yield Connection(ours), theirs
    ours.close()
    theirs.close()


def _call(seconds: float) -> _Call:
    return _Call(time.monotonic() + seconds)


def test_calls_that_end_in_time_wake_the_reaper_once_not_once_each() -> None:
    condition = CountingCondition()
    reaper = _Reaper(condition)
    for _ in range(60):
        call = _call(30)
        reaper.watch(call)
        reaper.finish(call)
    assert condition.notified == 1


def test_a_call_due_sooner_than_the_planned_wake_up_wakes_the_reaper_and_is_cut(
    pair: tuple[Connection, socket.socket],
) -> None:
    connection, _ = pair
    condition = CountingCondition()
    reaper = _Reaper(condition)
    in_flight = _call(30)
    reaper.watch(in_flight)
    short = _call(0.1)
    reaper.watch(short)
    reaper.register(short, connection)
    assert condition.notified == 2
    assert connection.sock.recv(1) == b""  # shut down under the blocked read
    assert short.expired
    assert not in_flight.expired


def test_calls_after_a_cut_are_still_bounded(pair: tuple[Connection, socket.socket]) -> None:
    # The reaper plans its next wake-up from what is left once it has cut a call.
    connection, _ = pair
    reaper = _Reaper()
    first = _call(0.05)
    reaper.watch(first)
    follower = _call(0.1)
    reaper.watch(follower)
    reaper.register(follower, connection)
    assert connection.sock.recv(1) == b""
    assert first.expired and follower.expired


def test_a_finished_call_is_never_cut(pair: tuple[Connection, socket.socket]) -> None:
    connection, theirs = pair
    reaper = _Reaper()
    done = _call(0.05)
    reaper.watch(done)
    reaper.register(done, connection)
    reaper.finish(done)
    # A later call that overstays proves the reaper has been past the finished one's time.
    overstaying = _call(0.1)
    reaper.watch(overstaying)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with socket.create_connection(listener.getsockname()) as client:
            client.settimeout(10)
            reaper.register(overstaying, Connection(client))
            assert client.recv(1) == b""
    assert not done.expired
    theirs.sendall(b"x")
    assert connection.sock.recv(1) == b"x"  # the finished call's connection still works


def test_a_request_after_the_cut_is_refused_before_it_is_sent(
    pair: tuple[Connection, socket.socket],
) -> None:
    connection, _ = pair
    reaper = _Reaper()
    call = _call(0.05)
    reaper.watch(call)
    reaper.register(call, connection)
    assert connection.sock.recv(1) == b""  # cut
    with pytest.raises(DeadlinePassed):
        reaper.register(call, Connection(socket.socket()))  # what a retry would send on
