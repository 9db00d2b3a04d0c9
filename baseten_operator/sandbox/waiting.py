"""Polling with a deadline: how the sandbox waits for an observable state."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
POLL_INTERVAL = 0.05


class WaitTimeout(Exception):
    """The awaited state did not show up in time."""


class Interrupted(Exception):
    """The sandbox is shutting down (Ctrl-C) while something waited."""


def wait_until(
    probe: Callable[[], T | None],
    timeout: float,
    what: str,
    *,
    stop: threading.Event | None = None,
    interval: float = POLL_INTERVAL,
) -> T:
    """Call `probe` until it returns something truthy, and return that.

    Exceptions from the probe count as "not yet" (the state may be mid-change) and
    the last one is named in the timeout message.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    stop = stop or threading.Event()
    while True:
        try:
            value = probe()
        except Exception as error:  # the probe reads a system in motion: retry
            last_error = error
        else:
            if value:
                return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            detail = f" (last error: {last_error})" if last_error is not None else ""
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        if stop.wait(min(interval, remaining)):
            raise Interrupted(what)
