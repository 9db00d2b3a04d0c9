"""Every write request the emulator received, with its User-Agent (`GET /_sim/writes`).

A test tells the writers apart by User-Agent: two operator replicas that send their
leader-election identity in it can be checked for writes after they lost the Lease.
"""

from __future__ import annotations

import threading
import time
from typing import Any

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


class WriteLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []

    def record(
        self,
        *,
        verb: str,
        resource: str,
        namespace: str | None,
        name: str | None,
        subresource: str | None,
        user_agent: str | None,
    ) -> None:
        """Log a write on arrival (before injected failures), stamped with wall-clock time."""
        entry = {
            "time": time.time(),
            "verb": verb,
            "resource": resource,
            "namespace": namespace,
            "name": name,
            "subresource": subresource,
            "user_agent": user_agent,
        }
        with self._lock:
            self._entries.append(entry)

    def entries(self, since: int = 0) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(entry) for entry in self._entries[since:]]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
