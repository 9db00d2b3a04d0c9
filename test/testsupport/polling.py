"""Waiting for an observable state with a deadline: the one polling helper of the
integration, e2e and sandbox-facing tests (never a bare sleep standing in for a state)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Timeout(AssertionError):
    """A polled state was not reached before its deadline."""


def wait_for(
    probe: Callable[[], T | None],
    *,
    timeout: float = 15.0,
    interval: float = 0.05,
    describe: Callable[[], str] | None = None,
) -> T:
    """Poll `probe` until it returns something truthy (returned), failing at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = describe() if describe else ""
            raise Timeout(f"condition not reached within {timeout}s. {detail}")
        time.sleep(interval)
