"""Watch plumbing: the events a write produces and the per-stream queues they feed.

The store pushes events into every matching `Watcher` while holding its lock, so a
watcher's queue always holds a gap-free suffix of history; the HTTP thread serving
the stream drains it.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from .resources import ResourceType
from .selectors import FieldSelector, LabelSelector

Obj = dict[str, Any]


@dataclass
class WatchEvent:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    storage_key: tuple[str, str]
    obj: Obj  # storage form; never mutated once recorded
    old: Obj | None = None  # the previous state, for selector transitions
    # Serialized form per (type, apiVersion), shared by every watcher of the event.
    encoded: dict[tuple[str, str], bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class Delivery:
    type: str
    obj: Obj
    source: WatchEvent | None = None  # set when `obj` is the event's own object (cacheable)


@dataclass
class Watcher:
    rt: ResourceType
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector
    queue: deque[Delivery] = field(default_factory=deque)
    cond: threading.Condition = field(default_factory=threading.Condition)
    # None while open; "graceful" ends the stream cleanly, "abrupt" drops the connection.
    closed: str | None = None

    def matches(self, obj: Obj) -> bool:
        meta = obj.get("metadata", {})
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if not self.labels.empty and not self.labels.matches(meta.get("labels")):
            return False
        return self.fields.empty or self.fields.matches(obj)

    def translate(self, event: WatchEvent) -> Delivery | None:
        """What this watcher sees of an event: an object leaving the selection is DELETED."""
        now = self.matches(event.obj)
        if event.type != "MODIFIED":
            return Delivery(event.type, event.obj, event) if now else None
        before = event.old is not None and self.matches(event.old)
        if now:
            return Delivery("MODIFIED" if before else "ADDED", event.obj, event)
        if before and event.old is not None:
            gone = {**event.old, "metadata": {**event.old["metadata"]}}
            gone["metadata"]["resourceVersion"] = str(event.rv)
            return Delivery("DELETED", gone)
        return None

    def offer(self, event: WatchEvent) -> None:
        delivery = self.translate(event)
        if delivery is not None:
            self.push(delivery)

    def push(self, delivery: Delivery) -> None:
        with self.cond:
            self.queue.append(delivery)
            self.cond.notify()

    def close(self, mode: str = "graceful") -> None:
        with self.cond:
            if self.closed is None:
                self.closed = mode
            self.cond.notify_all()

    def take(self, timeout: float, stalled: threading.Event) -> list[Delivery]:
        """Everything queued, waiting up to `timeout` for something; [] on timeout or close."""
        with self.cond:
            if (not self.queue or stalled.is_set()) and self.closed is None:
                self.cond.wait(timeout)
            if self.closed is not None or stalled.is_set():
                return []
            items = list(self.queue)
            self.queue.clear()
            return items

    def idle(self) -> bool:
        with self.cond:
            return not self.queue
