"""The names of the object a pass works on, read the same way by both kinds' passes."""

from __future__ import annotations

from typing import Any


class NamedObject:
    """A mixin for a pass over `obj`, a namespaced object as the informer holds it."""

    obj: dict[str, Any]

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
