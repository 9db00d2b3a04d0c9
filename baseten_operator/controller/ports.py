"""The interfaces a pass reads through (the informer caches and the event recorder).

Separate from context.py so that modules context.py depends on can name them too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Recorder(Protocol):
    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None: ...


class ObjectCache(Protocol):
    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None: ...


# BasetenModels (raw dicts) that name a Baseten model, across the watched namespaces.
SiblingLookup = Callable[[str], list[dict[str, Any]]]
