"""Every Event occurrence the sandbox has seen, for the display and for the tour's waits.

The recorder aggregates repeats of one (object, reason, message) into a single Event
with a rising `count`, so an occurrence is a new Event or a higher count on a known one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Occurrence:
    seen_at: float  # time.monotonic() when the sandbox saw it
    type: str
    reason: str
    kind: str
    name: str
    message: str
    count: int


def occurrence_of(event: dict[str, Any], seen_at: float) -> Occurrence:
    involved = event.get("involvedObject") or {}
    return Occurrence(
        seen_at=seen_at,
        type=event.get("type") or "",
        reason=event.get("reason") or "",
        kind=involved.get("kind") or "",
        name=involved.get("name") or "",
        message=event.get("message") or "",
        count=int(event.get("count") or 1),
    )


class EventLog:
    """Thread-safe list of occurrences; `record` drops what it has already seen."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._occurrences: list[Occurrence] = []
        self._counts: dict[str, int] = {}

    def record(self, event: dict[str, Any]) -> Occurrence | None:
        """The new occurrence `event` stands for, or None when it brings nothing new."""
        uid = (event.get("metadata") or {}).get("uid") or ""
        occurrence = occurrence_of(event, time.monotonic())
        with self._lock:
            if self._counts.get(uid, 0) >= occurrence.count:
                return None
            self._counts[uid] = occurrence.count
            self._occurrences.append(occurrence)
        return occurrence

    def find(
        self,
        reason: str,
        name: str,
        *,
        since: float = 0.0,
        matching: Callable[[Occurrence], bool] | None = None,
    ) -> Occurrence | None:
        """The first occurrence of `reason` on object `name` seen at or after `since`."""
        with self._lock:
            for occurrence in self._occurrences:
                if (
                    occurrence.reason == reason
                    and occurrence.name == name
                    and occurrence.seen_at >= since
                    and (matching is None or matching(occurrence))
                ):
                    return occurrence
        return None

    def __len__(self) -> int:
        with self._lock:
            return len(self._occurrences)
