"""CustomResourceDefinitions: the checks on a CRD and what its controllers write back.

The API server's CRD controllers (naming, establishing, cleanup) run asynchronously in a
cluster; here their outcome is applied within the same write, so a CRD is Established
as soon as it is created.
"""

from __future__ import annotations

from typing import Any

from . import errors
from .resources import CRD_GROUP
from .schema import rule_compile_causes

Obj = dict[str, Any]

CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def _condition(kind: str, reason: str, message: str, now: str) -> Obj:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }


def prepare_crd(crd: Obj, old: Obj | None, now: str) -> None:
    """Validate a CRD and write what its controllers would: defaulted names, status, finalizer."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    name = crd["metadata"]["name"]
    problems = []
    if not spec.get("group"):
        problems.append(("spec.group", "Required value"))
    if not names.get("plural") or not names.get("kind"):
        problems.append(("spec.names", "Required value: plural and kind are required"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        problems.append(("spec.scope", "Unsupported value: must be Namespaced or Cluster"))
    versions = spec.get("versions") or []
    if sum(1 for v in versions if v.get("storage")) != 1:
        problems.append(("spec.versions", "Invalid value: exactly one version must be storage"))
    if names.get("plural") and spec.get("group") and name != f"{names['plural']}.{spec['group']}":
        problems.append(
            (
                "metadata.name",
                f'Invalid value: {name!r}: must be spec.names.plural+"."+spec.group',
            )
        )
    causes = [{"reason": "FieldValueInvalid", "field": f, "message": m} for f, m in problems]
    causes += _rule_compile_causes(versions)
    if causes:
        raise errors.invalid("CustomResourceDefinition", CRD_GROUP, name, causes)
    accepted = {
        "plural": names["plural"],
        "singular": names.get("singular") or names["kind"].lower(),
        "kind": names["kind"],
        "listKind": names.get("listKind") or f"{names['kind']}List",
    }
    for optional in ("shortNames", "categories"):
        if names.get(optional):
            accepted[optional] = names[optional]
    names.setdefault("singular", accepted["singular"])
    names.setdefault("listKind", accepted["listKind"])
    old_status = (old or {}).get("status") or {}
    stored_versions = list(old_status.get("storedVersions") or [])
    storage = next(v["name"] for v in versions if v.get("storage"))
    if storage not in stored_versions:
        stored_versions.append(storage)
    conditions = {c["type"]: c for c in old_status.get("conditions") or []}
    for kind, reason, message in (
        ("NamesAccepted", "NoConflicts", "no conflicts found"),
        ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
    ):
        conditions.setdefault(kind, _condition(kind, reason, message, now))
    if crd["metadata"].get("deletionTimestamp"):
        conditions.setdefault(
            "Terminating",
            _condition("Terminating", "InstanceDeletionInProgress", "deleting instances", now),
        )
    crd["status"] = {
        "conditions": list(conditions.values()),
        "acceptedNames": accepted,
        "storedVersions": stored_versions,
    }
    # The cleanup controller keeps its finalizer on every live CRD.
    if not crd["metadata"].get("deletionTimestamp"):
        finalizers = crd["metadata"].setdefault("finalizers", [])
        if CRD_CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CRD_CLEANUP_FINALIZER)


def _rule_compile_causes(versions: list[Obj]) -> list[Obj]:
    """CEL rules of every version's schema must compile, as the API server checks."""
    causes: list[Obj] = []
    for index, version in enumerate(versions):
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema:
            path = f"spec.versions[{index}].schema.openAPIV3Schema"
            causes += [dict(c) for c in rule_compile_causes(schema, path)]
    return causes
