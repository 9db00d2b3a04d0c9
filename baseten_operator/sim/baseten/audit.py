"""A record of every mutating call the simulator answered."""

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
        }
        with self._lock:
            self._entries.append(entry)

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
