"""The operator's finalizer on objects of either kind: the one thing that lets a deletion
wait for what the operator must do in Baseten first."""

from __future__ import annotations

from typing import Any

from baseten_operator.api.constants import FINALIZER
from baseten_operator.controller.shared.ports import KubeAPI
from baseten_operator.runtime.errors import NotFound
from baseten_operator.runtime.resource import Resource


def has_finalizer(obj: dict[str, Any]) -> bool:
    return FINALIZER in (obj.get("metadata", {}).get("finalizers") or [])


def set_finalizer_on(kube: KubeAPI, res: Resource, obj: dict[str, Any], *, present: bool) -> None:
    """Add or remove our finalizer on an object of any of our kinds, conditional on the
    version this pass read."""
    meta = obj["metadata"]
    finalizers = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
    if present:
        finalizers.append(FINALIZER)
    patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
    try:
        kube.patch(res, meta["name"], patch, meta.get("namespace"))
    except NotFound:
        if present:
            raise
        # Removing the finalizer of an object already gone is success.
