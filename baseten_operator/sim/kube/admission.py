"""What an object goes through before the store keeps it: the body checks, metadata
validation, the structural schema of custom resources, and each built-in type's
server-side preparation (namespaces, Secrets, CRDs).

Pure functions of the object (and the object it replaces): everything that depends on other
stored objects (an open namespace, a terminating CRD, name conflicts) is the store's.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from . import errors
from .crds import prepare_crd
from .patching import clone
from .resources import CRD_GROUP, ResourceType
from .schema import apply_structural_schema
from .validation import annotation_causes, label_causes, name_causes

Obj = dict[str, Any]

NAMESPACE_FINALIZER = "kubernetes"
NAMESPACES_KEY = ("", "namespaces")
SECRETS_KEY = ("", "secrets")
CRD_TYPE_KEY = (CRD_GROUP, "customresourcedefinitions")


def checked_body(rt: ResourceType, body: Any) -> Obj:
    """A copy of a request's object, stamped with rt's apiVersion and kind (400 if it names
    another)."""
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if api_version not in (None, "", rt.api_version) or kind not in (None, "", rt.kind):
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rt.api_version})"
            if api_version not in (None, "", rt.api_version)
            else f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
        )
    obj = clone(body)
    obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
    if not isinstance(obj.get("metadata", {}), dict):
        raise errors.bad_request("metadata must be an object")
    return obj


def admit(rt: ResourceType, obj: Obj, old: Obj | None, *, strict: bool, now: str) -> None:
    """Validate `obj` (replacing `old`, None on create) and prepare it in place as the API
    server would; `strict` is fieldValidation=Strict; `now` stamps CRD conditions."""
    meta = obj["metadata"]
    name = meta.get("name", "")
    causes = name_causes(name, label=rt.plural == "namespaces") if old is None else []
    causes += label_causes(meta.get("labels")) + annotation_causes(meta.get("annotations"))
    if causes:
        raise errors.invalid(rt.kind, rt.group, name, causes)
    if rt.schema is not None:
        _apply_schema(rt, obj, old, strict)
    if rt.storage_key == NAMESPACES_KEY:
        _prepare_namespace(obj)
    elif rt.storage_key == SECRETS_KEY:
        _prepare_secret(obj)
    elif rt.storage_key == CRD_TYPE_KEY:
        prepare_crd(obj, old, now)


def _apply_schema(rt: ResourceType, obj: Obj, old: Obj | None, strict: bool) -> None:
    assert rt.schema is not None
    # The schema governs the payload; metadata, apiVersion and kind are the server's.
    kept = {k: obj[k] for k in ("apiVersion", "kind", "metadata") if k in obj}
    before = clone(obj) if strict else None
    causes = apply_structural_schema(rt.schema, obj, old)
    obj.update(kept)
    unknown = list(_pruned_paths(before, obj, "")) if before is not None else []
    if unknown:
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            + ", ".join(f'strict decoding error: unknown field "{p}"' for p in unknown)
        )
    if causes:
        raise errors.invalid(
            rt.kind, rt.group, kept["metadata"].get("name", ""), [dict(c) for c in causes]
        )


def _pruned_paths(before: Any, after: Any, path: str) -> Iterator[str]:
    """Fields of `before` that pruning removed (nulls aside: dropping those is not an error)."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            child = f"{path}.{key}" if path else key
            if key not in after:
                if value is not None:
                    yield child
            else:
                yield from _pruned_paths(value, after[key], child)
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            yield from _pruned_paths(old, new, f"{path}[{index}]")


def _prepare_secret(obj: Obj) -> None:
    """As the API server does: `stringData` is a write-only convenience, merged into `data`
    (base64) and never stored."""
    string_data = obj.pop("stringData", None) or {}
    if string_data:
        data = obj.setdefault("data", {}) or {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data


def _prepare_namespace(obj: Obj) -> None:
    meta = obj["metadata"]
    meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
    spec = obj.setdefault("spec", {})
    spec.setdefault("finalizers", [NAMESPACE_FINALIZER])
    obj["status"] = {"phase": "Terminating" if meta.get("deletionTimestamp") else "Active"}
