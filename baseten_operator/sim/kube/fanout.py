"""Watch fan-out: the history of committed changes and the open watches it feeds.

The store publishes each change here while it holds its lock, and the hub takes that same
lock, so every watcher's queue receives a gap-free suffix of history in commit order. The
history is bounded: once a change falls off it (or `compact` empties it), a watch from an
older resourceVersion is refused with 410 Expired, as etcd compaction makes kube-apiserver do.
"""

from __future__ import annotations

import threading
from collections import deque

import structlog

from . import errors
from .watch import Watcher, WatchEvent

log = structlog.get_logger(__name__)

StorageKey = tuple[str, str]


class WatchHub:
    def __init__(self, lock: threading.RLock, history_limit: int) -> None:
        self._lock = lock
        self.history_limit = history_limit
        # Set while watches are stalled (a fault): events queue up instead of being delivered.
        self.stalled = threading.Event()
        self.history: deque[WatchEvent] = deque()
        # Watches may start from any resourceVersion >= floor: later history is complete.
        self.floor = 0
        self._watchers: dict[StorageKey, list[Watcher]] = {}

    def publish(self, event: WatchEvent) -> None:
        """Remember a committed change and offer it to the watches of its resource."""
        with self._lock:
            self.history.append(event)
            while len(self.history) > self.history_limit:
                self.floor = self.history.popleft().rv
            for watcher in self._watchers.get(event.storage_key, ()):
                watcher.offer(event)

    def replay(self, watcher: Watcher, after: int) -> None:
        """Queue what changed after resourceVersion `after`; 410 Expired if that was compacted."""
        with self._lock:
            if after < self.floor:
                raise errors.expired(f"too old resource version: {after} ({self.floor})")
            for event in self.history:
                if event.rv > after and event.storage_key == watcher.rt.storage_key:
                    watcher.offer(event)

    def add(self, watcher: Watcher) -> None:
        with self._lock:
            self._watchers.setdefault(watcher.rt.storage_key, []).append(watcher)

    def remove(self, watcher: Watcher) -> None:
        with self._lock:
            registered = self._watchers.get(watcher.rt.storage_key, [])
            if watcher in registered:
                registered.remove(watcher)

    def count(self) -> int:
        with self._lock:
            return sum(len(ws) for ws in self._watchers.values())

    def drop(self, mode: str = "abrupt") -> int:
        """End every open watch: "graceful" ends the streams, "abrupt" resets the connections."""
        with self._lock:
            dropped = [w for ws in self._watchers.values() for w in ws]
            self._watchers = {}
        for watcher in dropped:
            watcher.close(mode)
        return len(dropped)

    def end_watches_of(self, storage_key: StorageKey) -> None:
        """A resource stopped being served (its CRD is gone): its watches end."""
        with self._lock:
            ended = self._watchers.pop(storage_key, [])
        for watcher in ended:
            watcher.close("graceful")

    def stall(self, stalled: bool) -> None:
        if stalled:
            self.stalled.set()
            return
        self.stalled.clear()
        with self._lock:
            watchers = [w for ws in self._watchers.values() for w in ws]
        for watcher in watchers:
            with watcher.cond:
                watcher.cond.notify_all()

    def compact(self, resource_version: int) -> None:
        """Forget the history up to `resource_version` (the current one)."""
        with self._lock:
            self.history.clear()
            self.floor = resource_version
            log.info("history compacted", resource_version=resource_version)

    def forget(self) -> None:
        """Back to no history and no watches (a reset server); open watches end gracefully."""
        self.drop("graceful")
        with self._lock:
            self.history.clear()
            self.floor = 0
