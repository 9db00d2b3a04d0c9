"""Total deadlines for HTTP calls.

Sockets only know per-operation timeouts: a server that trickles one byte every
few seconds never trips a read timeout and can hold a worker for as long as it likes.
Here a call runs inside `deadline(seconds)`; every connection the call sends on through
a pool of `deadline_pool_classes` is registered with one reaper thread, which shuts the
connection's socket down when the deadline passes. The blocked
read then fails at once and the call raises, so no answer, however slow, holds a caller
past its deadline.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.connection import HTTPConnection, HTTPSConnection

_current = threading.local()


class DeadlinePassed(OSError):
    """A request of a call whose deadline has passed: it is not sent."""


class _Call:
    """One call's deadline and the connections it has used so far."""

    def __init__(self, expires: float) -> None:
        self.expires = expires
        self.connections: list[Any] = []
        self.expired = False
        self.finished = False


class _Reaper:
    """One daemon thread that shuts down the sockets of calls past their deadline.

    It sleeps until a planned time, the earliest deadline it knows of, and a new call wakes
    it only when its deadline is earlier still. Calls end long before their deadlines and
    one after another, each a little later than the last: waking the thread for each would
    cost a thread switch per request. When the planned time comes, one wake-up cuts what is
    due, forgets what finished and plans the next, so the thread wakes about twice per
    deadline period, not once per call.
    """

    def __init__(self, condition: threading.Condition | None = None) -> None:
        self._lock = condition or threading.Condition()
        self._heap: list[tuple[float, int, _Call]] = []
        self._order = itertools.count()
        self._wake_at = math.inf
        self._thread: threading.Thread | None = None

    def watch(self, call: _Call) -> None:
        with self._lock:
            heapq.heappush(self._heap, (call.expires, next(self._order), call))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="http-deadlines", daemon=True
                )
                self._thread.start()
            if call.expires < self._wake_at:
                self._wake_at = call.expires
                self._lock.notify()

    def register(self, call: _Call, connection: Any) -> None:
        with self._lock:
            if call.expired:
                # A request after the cut (urllib3 repeating a GET whose connection the cut
                # broke) does not leave: the call is over.
                raise DeadlinePassed("the call's deadline has passed")
            call.connections.append(connection)

    def finish(self, call: _Call) -> None:
        # Under the lock: once a call is finished, the reaper never touches its
        # connections, which are back in the pool and may serve another call.
        with self._lock:
            call.finished = True
            call.connections.clear()
            # Calls mostly end in the order they began: the heap keeps only those in flight.
            while self._heap and self._heap[0][2].finished:
                heapq.heappop(self._heap)

    def _run(self) -> None:
        with self._lock:
            while True:
                remaining = self._wake_at - time.monotonic()
                if remaining > 0:
                    self._lock.wait(None if self._wake_at == math.inf else remaining)
                    continue
                self._reap(time.monotonic())

    def _reap(self, now: float) -> None:
        while self._heap and (self._heap[0][2].finished or self._heap[0][0] <= now):
            _, _, call = heapq.heappop(self._heap)
            if not call.finished:
                call.expired = True
                for connection in call.connections:
                    _shut(connection)
        self._wake_at = self._heap[0][0] if self._heap else math.inf


def _shut(connection: Any) -> None:
    sock = getattr(connection, "sock", None)
    if sock is None:
        return
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


_REAPER = _Reaper()


class CallDeadline:
    """What `deadline()` yields: whether the reaper had to cut the call short."""

    def __init__(self, call: _Call) -> None:
        self._call = call

    @property
    def expired(self) -> bool:
        return self._call.expired


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[CallDeadline]:
    """Every request in this block whose connection is registered ends by `seconds`."""
    call = _Call(time.monotonic() + max(0.0, seconds))
    outer = getattr(_current, "call", None)
    _current.call = call
    _REAPER.watch(call)
    try:
        yield CallDeadline(call)
    finally:
        _REAPER.finish(call)
        _current.call = outer


def register_with_deadline(connection: Any) -> None:
    """Bound `connection` (anything with a `sock`) by the calling thread's deadline, if any."""
    call: _Call | None = getattr(_current, "call", None)
    if call is not None:
        _REAPER.register(call, connection)


class _DeadlineHTTPConnection(HTTPConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        register_with_deadline(self)
        super().request(*args, **kwargs)


class _DeadlineHTTPSConnection(HTTPSConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        register_with_deadline(self)
        super().request(*args, **kwargs)


class _DeadlineHTTPPool(HTTPConnectionPool):
    ConnectionCls = _DeadlineHTTPConnection


class _DeadlineHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _DeadlineHTTPSConnection


def deadline_pool_classes() -> dict[str, type[HTTPConnectionPool]]:
    """A urllib3 PoolManager's `pool_classes_by_scheme` whose connections honour
    `deadline()`: each registers as it sends a request."""
    return {"http": _DeadlineHTTPPool, "https": _DeadlineHTTPSPool}
