"""core/v1 Event <-> events.k8s.io/v1 Event: two views of one storage, as in a cluster."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

CORE_API_VERSION = "v1"
# events.k8s.io/v1 field name -> core/v1 field name (fields not listed keep their name).
_RENAMED = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_TO_NEW = {core: new for new, core in _RENAMED.items()}

CORE_FIELD_LABELS = frozenset(
    {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    }
)


def convert(obj: Obj, api_version: str) -> Obj:
    if obj.get("apiVersion", CORE_API_VERSION) == api_version:
        return obj
    names = _RENAMED if api_version == CORE_API_VERSION else _TO_NEW
    converted = {names.get(key, key): value for key, value in obj.items()}
    converted["apiVersion"] = api_version
    return converted
