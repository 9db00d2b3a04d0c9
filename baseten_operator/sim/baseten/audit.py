"""What the simulator saw: every mutating call it answered (the audit log) and every API
request it received, answered or not (the request log).

Both keep each request's User-Agent, which is how a test tells operator replicas apart.
"""

from __future__ import annotations

import copy
import threading
from typing import Any


class AuditLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []

    def record(
        self,
        *,
        method: str,
        path: str,
        body: Any,
        time: float,
        status: int,
        endpoint: str,
        key: str | None = None,
        user_agent: str | None = None,
    ) -> None:
        """`key`: the label of the API key the call carried (never the key itself)."""
        entry = {
            "method": method,
            "path": path,
            "body": copy.deepcopy(body),
            "time": time,
            "status": status,
            "endpoint": endpoint,
            "key": key,
            "user_agent": user_agent,
        }
        with self._lock:
            self._entries.append(entry)

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


class RequestLog:
    """Every REST and GraphQL request on arrival, before faults or rate limits apply."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []

    def record(
        self, *, method: str, path: str, time: float, user_agent: str | None, fault: str | None
    ) -> None:
        entry = {
            "method": method,
            "path": path,
            "time": time,
            "user_agent": user_agent,
            "fault": fault,
        }
        with self._lock:
            self._entries.append(entry)

    def entries(self, since: int = 0) -> list[dict[str, Any]]:
        """The entries from index `since` on (a poller reads only what is new)."""
        with self._lock:
            return [dict(entry) for entry in self._entries[since:]]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
