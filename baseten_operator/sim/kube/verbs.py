"""The verbs on a resource (all but watch, watchstream.py's): each answers one call with the
status code and the JSON document to send."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import errors, tables
from .calls import ApiCall
from .emulator import KubeEmulator
from .patching import PATCH_TYPES
from .selectors import FieldSelector, LabelSelector

Obj = dict[str, Any]
Reply = tuple[int, Obj]


def _selectors(call: ApiCall) -> tuple[LabelSelector, FieldSelector]:
    return (
        LabelSelector.parse(call.query.get("labelSelector")),
        FieldSelector.parse(call.query.get("fieldSelector"), call.target.rt.field_labels),
    )


def _name(call: ApiCall) -> str:
    assert call.target.name is not None  # verb_of gives named verbs only a named target
    return call.target.name


def get(emulator: KubeEmulator, call: ApiCall) -> Reply:
    target = call.target
    obj = emulator.store.get(target.rt, target.namespace, _name(call))
    return 200, call.shaped(obj, emulator.clock.now())


def list_objects(emulator: KubeEmulator, call: ApiCall) -> Reply:
    target = call.target
    labels, fields = _selectors(call)
    listed = emulator.store.list_objects(
        target.rt,
        target.namespace,
        labels,
        fields,
        limit=int(call.query["limit"]) if call.query.get("limit") else None,
        continue_token=call.query.get("continue") or None,
    )
    if call.wants_table:
        listed = tables.table(
            target.rt, listed["items"], emulator.clock.now(), include=call.include_object,
            list_metadata=listed["metadata"],
        )  # fmt: skip
    elif call.wants_metadata:
        listed = tables.partial_metadata_list(listed["items"], listed["metadata"])
    return 200, listed


def create(emulator: KubeEmulator, call: ApiCall) -> Reply:
    target = call.target
    if target.rt.namespaced and target.namespace is None:
        raise errors.method_not_allowed("create needs a namespace in the path")
    obj = emulator.store.create(
        target.rt, target.namespace, call.body(), dry_run=call.dry_run, strict=call.strict
    )
    return 201, call.shaped(obj, emulator.clock.now())


def update(emulator: KubeEmulator, call: ApiCall) -> Reply:
    target = call.target
    obj = emulator.store.update(
        target.rt,
        target.namespace,
        _name(call),
        call.body(),
        subresource=target.subresource,
        dry_run=call.dry_run,
        strict=call.strict,
    )
    return 200, call.shaped(obj, emulator.clock.now())


def patch(emulator: KubeEmulator, call: ApiCall) -> Reply:
    target = call.target
    patch_type = PATCH_TYPES.get(call.media_type)
    if patch_type is None:
        raise errors.unsupported_media_type(
            f"the body of the request was in an unknown format ({call.media_type}) - accepted "
            "media types include: " + ", ".join(PATCH_TYPES)
        )
    obj, created = emulator.store.patch(
        target.rt,
        target.namespace,
        _name(call),
        patch_type,
        call.body(),
        subresource=target.subresource,
        dry_run=call.dry_run,
        strict=call.strict,
    )
    return (201 if created else 200), call.shaped(obj, emulator.clock.now())


def delete(emulator: KubeEmulator, call: ApiCall) -> Reply:
    target, rt = call.target, call.target.rt
    name = _name(call)
    options = call.body() or {}
    obj, exists = emulator.store.delete(rt, target.namespace, name, options, dry_run=call.dry_run)
    if exists or not rt.builtin:
        return 200, call.shaped(obj, emulator.clock.now())
    # A built-in object deleted outright is answered with a Status, as kube-apiserver does.
    details: Obj = {"name": name, "kind": rt.plural, "uid": obj["metadata"].get("uid")}
    if rt.group:
        details["group"] = rt.group
    return 200, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": details,
    }  # fmt: skip


def delete_collection(emulator: KubeEmulator, call: ApiCall) -> Reply:
    target = call.target
    labels, fields = _selectors(call)
    listed = emulator.store.delete_collection(
        target.rt, target.namespace, labels, fields, dry_run=call.dry_run
    )
    return 200, listed


VERBS: dict[str, Callable[[KubeEmulator, ApiCall], Reply]] = {
    "get": get,
    "list": list_objects,
    "create": create,
    "update": update,
    "patch": patch,
    "delete": delete,
    "deletecollection": delete_collection,
}
