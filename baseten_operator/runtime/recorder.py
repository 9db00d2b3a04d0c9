"""Kubernetes Events, written in the background so a reconcile pass never waits on them.

Like client-go's recorder:
- `event()` only queues (bounded; when full the event is dropped and counted);
- several writers drain the queue at once, so a burst (a thousand CRs turning Ready
  together) reaches the API server at the rate it takes rather than one round trip at a
  time; each aggregation key always goes to the same writer, so the writes of one Event
  stay in order and its count is never raced;
- repeats of the same (object, type, reason, message) update one Event, raising its
  `count` and `lastTimestamp`, instead of piling up new objects;
- a token bucket per involved object (burst 25, one more every 5 minutes) stops a
  hot loop from flooding the API server.
An Event's name is derived from its aggregation key, so a restarted operator finds
and continues the Event it wrote before instead of starting a second one.
"""

from __future__ import annotations

import hashlib
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import structlog
from cachetools import LRUCache

from baseten_operator.runtime import metrics
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.clock import Clock, RealClock, rfc3339
from baseten_operator.runtime.errors import AlreadyExists, NotFound
from baseten_operator.runtime.logging import redact
from baseten_operator.runtime.resource import EVENTS
from baseten_operator.runtime.text import cut
from baseten_operator.runtime.tokenbucket import TokenBucket

_log = structlog.get_logger(__name__)

EventType = Literal["Normal", "Warning"]

DEFAULT_QUEUE_SIZE = 1000
DEFAULT_WRITERS = 4
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
_MAX_NAME_LENGTH = 253
_CACHE_SIZE = 4096

# (uid, kind, namespace, name, type, reason, message)
AggregationKey = tuple[str, str, str, str, str, str, str]


class Recorder(Protocol):
    def event(self, obj: dict, type: EventType, reason: str, message: str) -> None: ...


@dataclass(frozen=True)
class _Occurrence:
    involved: dict[str, str]
    namespace: str
    type: str
    reason: str
    message: str
    timestamp: str

    @property
    def key(self) -> AggregationKey:
        i = self.involved
        return (
            i.get("uid", ""),
            i.get("kind", ""),
            i.get("namespace", ""),
            i["name"],
            self.type,
            self.reason,
            self.message,
        )


@dataclass
class _Written:
    name: str
    count: int


def _involved_object(obj: dict[str, Any]) -> dict[str, str]:
    metadata = obj.get("metadata") or {}
    fields = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "uid": metadata.get("uid"),
        "resourceVersion": metadata.get("resourceVersion"),
    }
    return {field: str(value) for field, value in fields.items() if value}


def event_name(key: AggregationKey) -> str:
    """`<object name>.<hex>`: stable for a key, so restarts continue the same Event."""
    digest = hashlib.sha256("\x00".join(key).encode()).hexdigest()[:16]
    return f"{key[3][: _MAX_NAME_LENGTH - len(digest) - 1]}.{digest}"


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        component: str,
        *,
        clock: Clock | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        spam_burst: int = SPAM_BURST,
        spam_refill_seconds: float = SPAM_REFILL_SECONDS,
        writers: int = DEFAULT_WRITERS,
    ) -> None:
        if writers < 1:
            raise ValueError("an event recorder needs at least one writer")
        self._client = client
        self._component = component
        self._clock: Clock = clock or RealClock()
        # One queue per writer; `_room` bounds what all of them hold together.
        self._shards: list[queue.SimpleQueue[_Occurrence | None]] = [
            queue.SimpleQueue() for _ in range(writers)
        ]
        self._room = threading.BoundedSemaphore(queue_size)
        self._spam_burst = spam_burst
        self._spam_refill_seconds = spam_refill_seconds
        self._spam_lock = threading.Lock()
        self._buckets: LRUCache[tuple[str, ...], TokenBucket] = LRUCache(_CACHE_SIZE)
        self._writers: list[threading.Thread] = []
        self._dropped_full = metrics.EVENTS_DROPPED.labels(component=component, reason="queue_full")
        self._dropped_spam = metrics.EVENTS_DROPPED.labels(component=component, reason="spam")
        self._dropped_failed = metrics.EVENTS_DROPPED.labels(
            component=component, reason="write_failed"
        )

    def event(self, obj: dict, type: EventType, reason: str, message: str) -> None:
        """Queue an Event about `obj`; never blocks, drops (and counts) when overloaded."""
        involved = _involved_object(obj)
        if "name" not in involved:
            raise ValueError("an event needs an involved object with metadata.name")
        if not self._allowed(involved):
            self._dropped_spam.inc()
            return
        occurrence = _Occurrence(
            involved=involved,
            namespace=involved.get("namespace", "default"),
            type=type,
            reason=reason,
            message=cut(redact(message)),
            timestamp=rfc3339(self._clock),
        )
        if not self._room.acquire(blocking=False):
            self._dropped_full.inc()
            return
        self._shards[hash(occurrence.key) % len(self._shards)].put(occurrence)

    def _allowed(self, involved: dict[str, str]) -> bool:
        bucket_key = tuple(involved.get(f, "") for f in ("kind", "namespace", "name", "uid"))
        with self._spam_lock:
            bucket = self._buckets.get(bucket_key)
            if bucket is None:
                bucket = TokenBucket(1.0 / self._spam_refill_seconds, self._spam_burst, self._clock)
                self._buckets[bucket_key] = bucket
            return bucket.take()

    def start(self) -> None:
        if self._writers:
            return
        for index, shard in enumerate(self._shards):
            writer = threading.Thread(
                target=self._write_loop,
                args=(shard,),
                name=f"event-recorder-{self._component}-{index}",
                daemon=True,
            )
            self._writers.append(writer)
            writer.start()

    def stop(self, flush_timeout: float) -> bool:
        """Write what is queued, for at most `flush_timeout` seconds; returns whether flushed."""
        if not self._writers:
            return all(shard.empty() for shard in self._shards)
        for shard in self._shards:
            shard.put(None)
        deadline = time.monotonic() + flush_timeout
        for writer in self._writers:
            writer.join(max(0.0, deadline - time.monotonic()))
        return not any(writer.is_alive() for writer in self._writers)

    def _write_loop(self, shard: queue.SimpleQueue[_Occurrence | None]) -> None:
        # This writer's own cache: every key of its shard is written by it alone.
        written: LRUCache[AggregationKey, _Written] = LRUCache(_CACHE_SIZE)
        while (occurrence := shard.get()) is not None:
            try:
                self._write(occurrence, written)
            except Exception as error:  # best effort: an Event is never worth a crash
                self._dropped_failed.inc()
                _log.warning(
                    "writing event failed",
                    reason=occurrence.reason,
                    object=f"{occurrence.namespace}/{occurrence.involved['name']}",
                    error=str(error),
                )
            finally:
                self._room.release()

    def _write(
        self, occurrence: _Occurrence, written_keys: LRUCache[AggregationKey, _Written]
    ) -> None:
        key = occurrence.key
        written = written_keys.get(key)
        if written is not None:
            try:
                self._bump(occurrence, written.name, written.count + 1)
                written.count += 1
                return
            except NotFound:  # expired or deleted meanwhile: start over
                pass
        name = event_name(key)
        try:
            self._client.create(EVENTS, self._new_event(occurrence, name), occurrence.namespace)
            written_keys[key] = _Written(name, 1)
        except AlreadyExists:  # written before a restart, or the cache forgot it
            existing = self._client.get(EVENTS, name, occurrence.namespace)
            count = int(existing.get("count") or 1) + 1
            self._bump(occurrence, name, count)
            written_keys[key] = _Written(name, count)

    def _bump(self, occurrence: _Occurrence, name: str, count: int) -> None:
        patch = {"count": count, "lastTimestamp": occurrence.timestamp}
        self._client.patch(EVENTS, name, patch, occurrence.namespace, patch_type="merge")

    def _new_event(self, occurrence: _Occurrence, name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": occurrence.namespace},
            "involvedObject": occurrence.involved,
            "type": occurrence.type,
            "reason": occurrence.reason,
            "message": occurrence.message,
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "firstTimestamp": occurrence.timestamp,
            "lastTimestamp": occurrence.timestamp,
            "count": 1,
        }


@dataclass(frozen=True)
class RecordedEvent:
    type: str
    reason: str
    message: str
    object_key: str


class FakeRecorder:
    """Records events in memory, for unit tests of code that emits them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.recorded: list[RecordedEvent] = []

    def event(self, obj: dict, type: EventType, reason: str, message: str) -> None:
        metadata = obj.get("metadata") or {}
        namespace, name = metadata.get("namespace"), metadata.get("name", "")
        with self._lock:
            self.recorded.append(
                RecordedEvent(
                    type, reason, cut(message), f"{namespace}/{name}" if namespace else name
                )
            )

    @property
    def events(self) -> list[tuple[str, str, str]]:
        with self._lock:
            return [(e.type, e.reason, e.message) for e in self.recorded]

    def start(self) -> None:
        """Nothing to start: events are recorded synchronously."""

    def stop(self, flush_timeout: float) -> bool:
        return True
