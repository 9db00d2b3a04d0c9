"""A locked, append-only log of what a simulator saw, for tests to read back.

The Baseten simulator's audit and request logs and the Kubernetes emulator's write log are
each one of these with their own record shape. Readers get copies: nothing a test does to
what it read changes the log.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

Entry = dict[str, Any]


class RecordLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[Entry] = []

    def append(self, entry: Entry) -> None:
        with self._lock:
            self._entries.append(entry)

    def entries(self, since: int = 0) -> list[Entry]:
        """The entries from index `since` on (a poller reads only what is new)."""
        with self._lock:
            return copy.deepcopy(self._entries[since:])

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
