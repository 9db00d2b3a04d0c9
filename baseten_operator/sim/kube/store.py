"""The emulated etcd + registry: every object, the global resourceVersion, and the verbs
(create, update, patch, delete) with their preconditions and the deletions they cascade into.

One re-entrant lock serializes every read and write, which makes the resourceVersion order
the commit order; each write publishes its event to the watch fan-out (fanout.py) under that
lock. What an object must pass before it is kept is admission.py's. Objects are stored in
their storage version and never mutated after they are stored: a write replaces them, so
readers and watch events can share them without copying.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import threading
import uuid
from typing import Any

import structlog

from baseten_operator.runtime.clock import Clock, rfc3339

from . import errors
from .admission import CRD_TYPE_KEY, NAMESPACE_FINALIZER, NAMESPACES_KEY, admit, checked_body
from .crds import CRD_CLEANUP_FINALIZER, prepare_crd
from .fanout import WatchHub
from .patching import clone, json_patch, merge_patch, strategic_merge_patch
from .resources import Registry, ResourceType, types_for_crd
from .selectors import FieldSelector, LabelSelector
from .watch import Delivery, Watcher, WatchEvent

log = structlog.get_logger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
UNDELETABLE_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# Metadata only the server writes; kept from the stored object on every update.
_SERVER_METADATA = (
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "namespace",
    "name",
    "resourceVersion",
)


def _spec_part(obj: Obj) -> Obj:
    """Everything that counts for metadata.generation: all but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


class Store:
    def __init__(self, clock: Clock, history_limit: int = 10000) -> None:
        self.lock = threading.RLock()
        self.clock = clock
        self.watches = WatchHub(self.lock, history_limit)
        self._reset_state()

    # ---- state ----------------------------------------------------------------------

    def _reset_state(self) -> None:
        self.registry = Registry()
        self.rv = 0
        self.objects: dict[tuple[str, str], dict[Key, Obj]] = {}
        namespaces = self.registry.lookup("", "v1", "namespaces")
        assert namespaces is not None
        for name in SYSTEM_NAMESPACES:
            self.create(namespaces, None, {"metadata": {"name": name}})

    def reset(self) -> None:
        """Back to a fresh server; open watches end."""
        with self.lock:
            self.watches.forget()
            self._reset_state()

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self.lock:
            return self.registry.lookup(group, version, plural)

    def _bucket(self, rt: ResourceType) -> dict[Key, Obj]:
        return self.objects.setdefault(rt.storage_key, {})

    def _key(self, rt: ResourceType, namespace: str | None, name: str) -> Key:
        return ((namespace or "") if rt.namespaced else "", name)

    def _current(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        stored = self._bucket(rt).get(self._key(rt, namespace, name))
        if stored is None:
            raise errors.not_found(rt.plural, rt.group, name)
        return rt.from_storage(stored)

    def _storage_type(self, key: tuple[str, str]) -> ResourceType:
        sharing = self.registry.sharing_storage(key)
        return next((rt for rt in sharing if rt.api_version == rt.storage_api_version), sharing[0])

    # ---- committing changes -----------------------------------------------------------

    def _record(self, rt: ResourceType, kind: str, obj: Obj, old: Obj | None) -> None:
        self.watches.publish(WatchEvent(self.rv, kind, rt.storage_key, obj, old))

    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def _put(self, rt: ResourceType, obj: Obj, old: Obj | None) -> Obj:
        """Stamp a new resourceVersion on `obj` (in rt's version), store it, emit the event."""
        obj["metadata"]["resourceVersion"] = self._next_rv()
        stored = rt.to_storage(obj)
        meta = stored["metadata"]
        self._bucket(rt)[self._key(rt, meta.get("namespace"), meta["name"])] = stored
        old_stored = rt.to_storage(old) if old is not None else None
        self._record(rt, "ADDED" if old is None else "MODIFIED", stored, old_stored)
        return obj

    def _remove(self, rt: ResourceType, obj: Obj) -> Obj:
        meta = obj["metadata"]
        del self._bucket(rt)[self._key(rt, meta.get("namespace"), meta["name"])]
        gone = clone(obj)
        gone["metadata"]["resourceVersion"] = self._next_rv()
        self._record(rt, "DELETED", rt.to_storage(gone), None)
        self._after_removal(rt, gone)
        return gone

    # ---- watches --------------------------------------------------------------------

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        resource_version: str | None,
        *,
        send_initial_events: bool = False,
        bookmarks: bool = False,
    ) -> Watcher:
        """Register a watch; raises Expired (410) when `resource_version` was compacted."""
        with self.lock:
            watcher = Watcher(rt, namespace, labels, fields)
            if send_initial_events or resource_version in (None, "", "0"):
                for _, stored in sorted(self._bucket(rt).items()):
                    if watcher.matches(stored):
                        watcher.push(Delivery("ADDED", stored))
                if send_initial_events and bookmarks:
                    watcher.push(self.bookmark(rt, initial_events_end=True))
            else:
                self.watches.replay(watcher, _parse_rv(resource_version))
            self.watches.add(watcher)
            return watcher

    def bookmark(self, rt: ResourceType, *, initial_events_end: bool = False) -> Delivery:
        meta: Obj = {"resourceVersion": str(self.rv)}
        if initial_events_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        return Delivery(
            "BOOKMARK", {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
        )

    def idle_bookmark(self, watcher: Watcher) -> Delivery | None:
        """A BOOKMARK at the current resourceVersion, if the watcher has received everything."""
        with self.lock:
            return self.bookmark(watcher.rt) if watcher.idle() else None

    def compact(self) -> None:
        """Forget all history up to now: watches from older resourceVersions get 410."""
        with self.lock:
            self.watches.compact(self.rv)

    # ---- reads ----------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        with self.lock:
            return self._current(rt, namespace, name)

    def list_objects(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        *,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> Obj:
        matcher = Watcher(rt, namespace, labels, fields)
        token_rv, start = _decode_continue(continue_token) if continue_token else (0, None)
        with self.lock:
            if token_rv and token_rv < self.watches.floor:
                raise errors.expired(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter."
                )
            # Pages after the first report the first page's version, as a snapshot would, so
            # a watch started from the last page replays whatever changed while paging.
            rv = token_rv or self.rv
            ordered = sorted(self._bucket(rt).items())
        selected = [
            obj for key, obj in ordered if (start is None or key > start) and matcher.matches(obj)
        ]
        meta: Obj = {"resourceVersion": str(rv)}
        if limit and len(selected) > limit:
            last = selected[limit - 1]["metadata"]
            meta["continue"] = _encode_continue(rv, (last.get("namespace", ""), last["name"]))
            meta["remainingItemCount"] = len(selected) - limit
            selected = selected[:limit]
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": meta,
            "items": [rt.from_storage(o) for o in selected],
        }

    # ---- create ---------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        namespace: str | None,
        body: Obj,
        *,
        dry_run: bool = False,
        strict: bool = False,
    ) -> Obj:
        """`strict` is fieldValidation=Strict: unknown fields fail instead of being pruned."""
        with self.lock:
            obj = self._new_object(rt, namespace, body, strict)
            if dry_run:
                return obj
            obj = self._put(rt, obj, None)
            if rt.storage_key == CRD_TYPE_KEY:
                self._register_crd(obj)
            return obj

    def _new_object(
        self, rt: ResourceType, namespace: str | None, body: Obj, strict: bool = False
    ) -> Obj:
        obj = checked_body(rt, body)
        meta = obj.setdefault("metadata", {})
        if rt.namespaced:
            if meta.get("namespace") not in (None, "", namespace):
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            self._check_namespace_open(namespace or "")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise errors.field_invalid(
                    rt.kind,
                    rt.group,
                    "",
                    "metadata.name",
                    "Required value: name or generateName is required",
                )
            meta["name"] = self._generated_name(rt, namespace, meta["generateName"])
        elif self._key(rt, namespace, meta["name"]) in self._bucket(rt):
            raise errors.already_exists(rt.plural, rt.group, meta["name"])
        for server_field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion",
                             "managedFields", "selfLink"):  # fmt: skip
            meta.pop(server_field, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = rfc3339(self.clock)
        if rt.generation:
            meta["generation"] = 1
        if rt.status_subresource:
            obj.pop("status", None)
        admit(rt, obj, None, strict=strict, now=rfc3339(self.clock))
        self._check_crd_serving(rt)
        return obj

    def _generated_name(self, rt: ResourceType, namespace: str | None, prefix: str) -> str:
        for _ in range(100):
            name = prefix + "".join(random.choices(_SUFFIX_ALPHABET, k=5))
            if self._key(rt, namespace, name) not in self._bucket(rt):
                return name
        raise errors.already_exists(rt.plural, rt.group, prefix)

    def _check_namespace_open(self, namespace: str) -> None:
        stored = self.objects.get(NAMESPACES_KEY, {}).get(("", namespace))
        if stored is None:
            raise errors.not_found("namespaces", "", namespace)
        if stored["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated"
            )

    def _check_crd_serving(self, rt: ResourceType) -> None:
        """No new custom resource while its CRD is being deleted."""
        if rt.crd_name is None:
            return
        crd = self.objects.get(CRD_TYPE_KEY, {}).get(("", rt.crd_name))
        if crd is not None and crd["metadata"].get("deletionTimestamp"):
            raise errors.method_not_allowed(
                "create not allowed while custom resource definition is terminating"
            )

    def _register_crd(self, crd: Obj) -> None:
        self.registry.remove_crd(crd["metadata"]["name"])
        served = types_for_crd(crd)
        for rt in served:
            self.registry.add(rt)
        log.debug("serving custom resources", crd=crd["metadata"]["name"],
                  versions=[rt.version for rt in served])  # fmt: skip

    # ---- update and patch -----------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Obj,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        strict: bool = False,
    ) -> Obj:
        with self.lock:
            current = self._current(rt, namespace, name)
            body = checked_body(rt, body)
            return self._write(
                rt, current, body, subresource, dry_run, rt.unconditional_update, strict
            )

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        patch_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        strict: bool = False,
    ) -> tuple[Obj, bool]:
        """Returns (object, created): server-side apply may create."""
        with self.lock:
            if patch_type == "strategic" and not rt.builtin:
                raise errors.unsupported_media_type(
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml"
                )
            key = self._key(rt, namespace, name)
            if patch_type == "apply" and key not in self._bucket(rt):
                if not isinstance(patch, dict):
                    raise errors.bad_request("an applied configuration must be an object")
                patch.setdefault("metadata", {}).setdefault("name", name)
                return self.create(rt, namespace, patch, dry_run=dry_run, strict=strict), True
            current = self._current(rt, namespace, name)
            if patch_type == "json":
                patched = json_patch(current, patch)
            elif patch_type == "strategic":
                patched = strategic_merge_patch(current, patch)
            else:
                # Server-side apply is approximated by a merge of the applied configuration.
                patched = merge_patch(current, patch)
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch did not produce an object")
            patched.setdefault("metadata", {})
            wanted = patched["metadata"].get("resourceVersion")
            current_rv = current["metadata"]["resourceVersion"]
            if wanted not in (None, "", current_rv):
                raise errors.conflict(rt.plural, rt.group, name, errors.STALE_OBJECT)
            patched["metadata"]["resourceVersion"] = current_rv
            return self._write(rt, current, patched, subresource, dry_run, True, strict), False

    def _write(
        self,
        rt: ResourceType,
        current: Obj,
        body: Obj,
        subresource: str | None,
        dry_run: bool,
        unconditional_ok: bool,
        strict: bool = False,
    ) -> Obj:
        meta = body.get("metadata") or {}
        old_meta = current["metadata"]
        name = old_meta["name"]
        if meta.get("namespace") not in (None, "", old_meta.get("namespace")) and rt.namespaced:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        if meta.get("name") not in (None, name):
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                f"({name})"
            )
        if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
            raise errors.conflict(
                rt.plural,
                rt.group,
                name,
                f"Precondition failed: UID in precondition: {meta['uid']}, "
                f"UID in object meta: {old_meta.get('uid')}",
            )
        wanted = meta.get("resourceVersion")
        if wanted and wanted != old_meta["resourceVersion"]:
            raise errors.conflict(rt.plural, rt.group, name, errors.STALE_OBJECT)
        if not wanted and not unconditional_ok:
            raise errors.field_invalid(
                rt.kind, rt.group, name, "metadata.resourceVersion",
                "Invalid value: 0x0: must be specified for an update",
            )  # fmt: skip
        if subresource == "status":
            candidate = clone(current)
            if "status" in body:
                candidate["status"] = clone(body["status"])
            else:
                candidate.pop("status", None)
        else:
            candidate = clone(body)
            candidate["apiVersion"], candidate["kind"] = rt.api_version, rt.kind
            if rt.status_subresource:
                if "status" in current:
                    candidate["status"] = clone(current["status"])
                else:
                    candidate.pop("status", None)
            new_meta = {k: v for k, v in meta.items() if k not in ("managedFields", "selfLink")}
            for server_field in _SERVER_METADATA:
                if server_field in old_meta:
                    new_meta[server_field] = old_meta[server_field]
                else:
                    new_meta.pop(server_field, None)
            candidate["metadata"] = new_meta
        terminating = bool(old_meta.get("deletionTimestamp"))
        finalizers = candidate["metadata"].get("finalizers") or []
        if terminating:
            added = [f for f in finalizers if f not in (old_meta.get("finalizers") or [])]
            if added:
                raise errors.field_invalid(
                    rt.kind, rt.group, name, "metadata.finalizers",
                    "Forbidden: no new finalizers can be added if the object is being deleted, "
                    "found new finalizers []string{" + ", ".join(f'"{f}"' for f in added) + "}",
                )  # fmt: skip
        admit(rt, candidate, current, strict=strict, now=rfc3339(self.clock))
        if rt.generation and _spec_part(candidate) != _spec_part(current):
            candidate["metadata"]["generation"] = old_meta.get("generation", 0) + 1
        if candidate == current:
            return current  # a no-op write: same resourceVersion, no event
        if dry_run:
            return candidate
        if terminating and not finalizers:
            return self._remove(rt, candidate)
        written = self._put(rt, candidate, current)
        if rt.storage_key == CRD_TYPE_KEY:
            self._register_crd(written)
        return written

    # ---- delete ---------------------------------------------------------------------

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        options: Obj | None = None,
        *,
        dry_run: bool = False,
    ) -> tuple[Obj, bool]:
        """Returns (object, still_exists): finalizers keep a deleted object, terminating."""
        with self.lock:
            current = self._current(rt, namespace, name)
            preconditions = (options or {}).get("preconditions") or {}
            meta = current["metadata"]
            for field in ("uid", "resourceVersion"):
                wanted = preconditions.get(field)
                if wanted and wanted != meta.get(field):
                    raise errors.conflict(
                        rt.plural, rt.group, name,
                        f"Precondition failed: {field} in precondition: {wanted}, "
                        f"{field} in object meta: {meta.get(field)}",
                    )  # fmt: skip
            if rt.storage_key == NAMESPACES_KEY and name in UNDELETABLE_NAMESPACES:
                raise errors.forbidden(
                    f'namespaces "{name}" is forbidden: this namespace may not be deleted'
                )
            if meta.get("deletionTimestamp"):
                return current, True  # already terminating: nothing more to do
            keeps = bool(meta.get("finalizers")) or rt.storage_key == NAMESPACES_KEY
            if not keeps:
                return (current, False) if dry_run else (self._remove(rt, current), False)
            terminating = clone(current)
            terminating["metadata"]["deletionTimestamp"] = rfc3339(self.clock)
            terminating["metadata"]["deletionGracePeriodSeconds"] = 0
            if rt.generation:
                terminating["metadata"]["generation"] = meta.get("generation", 0) + 1
            if rt.storage_key == NAMESPACES_KEY:
                terminating["status"] = {"phase": "Terminating"}
            elif rt.storage_key == CRD_TYPE_KEY:
                prepare_crd(terminating, current, rfc3339(self.clock))
            if dry_run:
                return terminating, True
            written = self._put(rt, terminating, current)
            self._cascade(rt, written)
            still_exists = self._key(rt, namespace, name) in self._bucket(rt)
            return written, still_exists

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        *,
        dry_run: bool = False,
    ) -> Obj:
        with self.lock:
            listed = self.list_objects(rt, namespace, labels, fields)
            for item in listed["items"]:
                meta = item["metadata"]
                self.delete(rt, meta.get("namespace"), meta["name"], dry_run=dry_run)
            return listed

    def _cascade(self, rt: ResourceType, container: Obj) -> None:
        """Deleting a namespace or a CRD deletes what it holds (the controllers' job)."""
        name = container["metadata"]["name"]
        if rt.storage_key == NAMESPACES_KEY:
            for storage_key, bucket in list(self.objects.items()):
                inside = [o for (ns, _), o in bucket.items() if ns == name]
                if inside:
                    self._delete_all(self._storage_type(storage_key), inside)
            self._finish_namespace(name)
        elif rt.storage_key == CRD_TYPE_KEY:
            served = [t for t in self.registry.all() if t.crd_name == name]
            if served:
                self._delete_all(served[0], list(self._bucket(served[0]).values()))
            self._finish_crd(name)

    def _delete_all(self, rt: ResourceType, stored: list[Obj]) -> None:
        for obj in stored:
            meta = obj["metadata"]
            if self._key(rt, meta.get("namespace"), meta["name"]) in self._bucket(rt):
                self.delete(rt, meta.get("namespace"), meta["name"])

    def _after_removal(self, rt: ResourceType, obj: Obj) -> None:
        namespace = obj["metadata"].get("namespace")
        if namespace:
            self._finish_namespace(namespace)
        if rt.crd_name is not None:
            self._finish_crd(rt.crd_name)
        if rt.storage_key == CRD_TYPE_KEY:
            log.debug("custom resources no longer served", crd=obj["metadata"]["name"])
            for gone in self.registry.remove_crd(obj["metadata"]["name"]):
                self.objects.pop(gone.storage_key, None)
                self.watches.end_watches_of(gone.storage_key)

    def _finish_namespace(self, namespace: str) -> None:
        ns_type = self._storage_type(NAMESPACES_KEY)
        stored = self._bucket(ns_type).get(("", namespace))
        if stored is None or not stored["metadata"].get("deletionTimestamp"):
            return
        if any(ns == namespace for bucket in self.objects.values() for ns, _ in bucket):
            return
        self._release(ns_type, stored, NAMESPACE_FINALIZER, in_spec=True)

    def _finish_crd(self, crd_name: str) -> None:
        crd_type = self._storage_type(CRD_TYPE_KEY)
        stored = self._bucket(crd_type).get(("", crd_name))
        if stored is None or not stored["metadata"].get("deletionTimestamp"):
            return
        if any(t.crd_name == crd_name and self._bucket(t) for t in self.registry.all()):
            return
        self._release(crd_type, stored, CRD_CLEANUP_FINALIZER, in_spec=False)

    def _release(self, rt: ResourceType, stored: Obj, finalizer: str, *, in_spec: bool) -> None:
        """Drop the server's own finalizer from a drained container; remove it if none remain."""
        obj = clone(rt.from_storage(stored))
        meta = obj["metadata"]
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != finalizer]
        if in_spec:
            spec = obj.setdefault("spec", {})
            spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != finalizer]
        if not meta["finalizers"]:
            meta.pop("finalizers")
            self._remove(rt, obj)
        else:
            self._put(rt, obj, rt.from_storage(stored))


def _parse_rv(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        raise errors.bad_request(f"invalid resource version {value!r}") from None


def _encode_continue(rv: int, key: Key) -> str:
    raw = json.dumps({"rv": rv, "start": list(key)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[int, Key]:
    """(the resourceVersion of the first page, the last key served)."""
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
        start = decoded["start"]
        return int(decoded["rv"]), (str(start[0]), str(start[1]))
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error):
        raise errors.bad_request("invalid continue token") from None
