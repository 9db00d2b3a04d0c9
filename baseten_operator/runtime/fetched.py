"""Whole objects read on demand, behind a metadata-only informer.

Caching every object of a kind in full, to read the few a controller needs (the ConfigMaps
that setup scripts name, among every ConfigMap of the cluster), costs memory in
proportion to the cluster. Here a metadata-only informer keeps the cache (whether each
object exists, its resourceVersion, and the watch events that re-enqueue its readers),
and `get` fetches an object's whole body only when asked: once per resourceVersion, the
last few kept. What the informer has not seen does not exist, as with a full cache.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from cachetools import LRUCache

from baseten_operator.runtime.errors import NotFound
from baseten_operator.runtime.resource import Resource

# Objects whose bodies are kept: the ones a controller is reading, not the cluster's.
DEFAULT_BODIES_KEPT = 256


class MetadataCache(Protocol):
    """A metadata-only informer's store."""

    def get(self, namespace: str | None, name: str, /) -> dict[str, Any] | None: ...


class ObjectReader(Protocol):
    def get(self, res: Resource, name: str, namespace: str | None = None, /) -> dict[str, Any]: ...


def _version(obj: dict[str, Any]) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion")


class FetchedObjects:
    """An informer-like `get(namespace, name)` returning whole objects, fetched on demand."""

    def __init__(
        self,
        reader: ObjectReader,
        resource: Resource,
        metadata: MetadataCache,
        *,
        bodies_kept: int = DEFAULT_BODIES_KEPT,
    ) -> None:
        self._reader = reader
        self._resource = resource
        self._metadata = metadata
        self._lock = threading.Lock()
        self._bodies: LRUCache[tuple[str, str], dict[str, Any]] = LRUCache(bodies_kept)

    def get(self, namespace: str | None, name: str, /) -> dict[str, Any] | None:
        """The whole object, or None when the informer has not seen it (or it is gone).

        API errors other than NotFound propagate: an unreadable object is not a missing one.
        """
        seen = self._metadata.get(namespace, name)
        if seen is None:
            return None
        key = (namespace or "", name)
        with self._lock:
            body = self._bodies.get(key)
        if body is not None and _version(body) == _version(seen):
            return body
        try:
            body = self._reader.get(self._resource, name, namespace)
        except NotFound:
            return None  # deleted since the informer saw it: its delete event is on its way
        with self._lock:
            self._bodies[key] = body
        return body
