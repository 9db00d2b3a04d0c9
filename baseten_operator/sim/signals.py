"""How a simulator's command line waits to be told to stop."""

from __future__ import annotations

import signal
import threading
from types import FrameType


def stop_on_signals() -> threading.Event:
    """An Event that SIGINT or SIGTERM sets (the handlers are installed on the calling thread,
    which must be the main one): the command waits on it, then stops its server cleanly."""
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    return stopping
