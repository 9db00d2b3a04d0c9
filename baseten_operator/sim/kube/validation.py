"""Checks the API server makes on every object, whatever its type: names and labels."""

from __future__ import annotations

import re
from typing import Any

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

Cause = dict[str, Any]


def _cause(field: str, value: Any, why: str) -> Cause:
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {value!r}: {why}",
        "field": field,
    }


def name_causes(name: str, *, label: bool) -> list[Cause]:
    if label:
        ok = len(name) <= 63 and _DNS_LABEL.fullmatch(name) is not None
        why = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"
    else:
        ok = len(name) <= 253 and _DNS_SUBDOMAIN.fullmatch(name) is not None
        why = (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    return [] if ok else [_cause("metadata.name", name, why)]


def _label_key_ok(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or _DNS_SUBDOMAIN.fullmatch(prefix) is None):
        return False
    return 0 < len(name) <= 63 and _LABEL_NAME.fullmatch(name) is not None


def label_causes(labels: Any) -> list[Cause]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [_cause("metadata.labels", labels, "must be a map of strings")]
    causes = []
    for key, value in labels.items():
        if not _label_key_ok(key):
            causes.append(_cause("metadata.labels", key, "name part must be a valid label key"))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
            causes.append(_cause(f"metadata.labels.{key}", value, "a valid label value"))
    return causes


def annotation_causes(annotations: Any) -> list[Cause]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict) or not all(
        isinstance(v, str) for v in annotations.values()
    ):
        return [_cause("metadata.annotations", annotations, "must be a map of strings")]
    return [c for key in annotations if not _label_key_ok(key) for c in
            [_cause("metadata.annotations", key, "name part must be a valid key")]]  # fmt: skip
