"""A timeline of future state changes, run lazily up to "now".

Every lifecycle step (a build finishing, a promotion settling) is an event with a due
time. `run_due(now)` runs the due events in time order, each receiving its own due
time, so chained steps land exactly where the durations say, whichever clock drives
them and however late the next request arrives.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

Action = Callable[[float], None]


@dataclass(order=True)
class _Event:
    due: float
    seq: int
    action: Action = field(compare=False)


class Timeline:
    def __init__(self) -> None:
        self._events: list[_Event] = []
        self._seq = itertools.count()

    def at(self, due: float, action: Action) -> None:
        heapq.heappush(self._events, _Event(due, next(self._seq), action))

    def run_due(self, now: float, after: Action | None = None) -> int:
        """Run every event due at or before `now` (including ones scheduled meanwhile);
        `after` is called with each event's due time once it ran."""
        ran = 0
        while self._events and self._events[0].due <= now:
            event = heapq.heappop(self._events)
            event.action(event.due)
            if after is not None:
                after(event.due)
            ran += 1
        return ran

    def clear(self) -> None:
        self._events.clear()
