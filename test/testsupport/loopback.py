"""What every loopback server of the tests does alike: accept connections on a thread of
its own, serve each on another, and be closed when the test ends."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, Protocol, TypeVar

P = ParamSpec("P")


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


def accept_each(listener: socket.socket, serve: Callable[[socket.socket], None]) -> None:
    """Accept connections on `listener` (from a thread of its own) until it is closed,
    each served by `serve` on a thread of its own."""

    def accept() -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=serve, args=(sock,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


@contextmanager
def closed_after(start: Callable[P, C]) -> Iterator[Callable[P, C]]:
    """`start`, everything it started closed on leaving: a fixture's `yield` inside it."""
    started: list[C] = []

    def tracked(*args: P.args, **kwargs: P.kwargs) -> C:
        thing = start(*args, **kwargs)
        started.append(thing)
        return thing

    yield tracked
    for thing in started:
        thing.close()
