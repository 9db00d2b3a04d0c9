"""What the server serves: built-in resource types, the ones CRDs add, and discovery.

A `ResourceType` is one (group, version, plural) endpoint. Several endpoints can share
one storage (a CRD's versions, or core/v1 and events.k8s.io/v1 Events): objects are kept
in the storage's version and converted on the way in and out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import events

Obj = dict[str, Any]
Converter = Callable[[Obj, str], Obj]

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


AGE_COLUMN = PrinterColumn(
    "Age", "date", ".metadata.creationTimestamp", "CreationTimestamp is a timestamp"
)


def _rewrite_api_version(obj: Obj, api_version: str) -> Obj:
    if obj.get("apiVersion") == api_version:
        return obj
    return {**obj, "apiVersion": api_version}


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    # metadata.generation is maintained (custom resources, CRDs).
    generation: bool = False
    # PUT without metadata.resourceVersion is allowed (built-ins; never custom resources).
    unconditional_update: bool = True
    # Strategic merge patch is only defined for compiled-in types.
    builtin: bool = True
    columns: tuple[PrinterColumn, ...] = (AGE_COLUMN,)
    schema: Obj | None = None
    storage_group: str | None = None
    storage_plural: str | None = None
    storage_version: str | None = None
    field_labels: frozenset[str] = frozenset()
    # Converts an object between this endpoint's version and the storage version:
    # convert(obj, target_api_version).
    convert: Converter = field(default=_rewrite_api_version, compare=False)
    crd_name: str | None = None
    verbs: tuple[str, ...] = tuple(VERBS)
    # Subresources that only take a create (serviceaccounts/token): (name, group, kind).
    create_subresources: tuple[tuple[str, str, str], ...] = ()
    # Nothing is stored: a create is answered and forgotten (TokenReview and the like).
    review: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_key(self) -> tuple[str, str]:
        return (
            self.group if self.storage_group is None else self.storage_group,
            self.storage_plural or self.plural,
        )

    @property
    def storage_api_version(self) -> str:
        group, _ = self.storage_key
        version = self.storage_version or self.version
        return f"{group}/{version}" if group else version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def to_storage(self, obj: Obj) -> Obj:
        return self.convert(obj, self.storage_api_version)

    def from_storage(self, obj: Obj) -> Obj:
        return self.convert(obj, self.api_version)

    def discovery_entries(self) -> list[Obj]:
        entry: Obj = {
            "name": self.plural,
            "singularName": self.singular or self.kind.lower(),
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        entries = [entry]
        if self.status_subresource:
            entries.append(
                {
                    "name": f"{self.plural}/status",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": self.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        for name, group, kind in self.create_subresources:
            entries.append(
                {
                    "name": f"{self.plural}/{name}",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "group": group,
                    "version": "v1",
                    "kind": kind,
                    "verbs": ["create"],
                }
            )
        return entries


CRD_GROUP = "apiextensions.k8s.io"
RBAC_GROUP = "rbac.authorization.k8s.io"
AUTHENTICATION_GROUP = "authentication.k8s.io"
AUTHORIZATION_GROUP = "authorization.k8s.io"

EVENT_COLUMNS = (
    PrinterColumn("Last Seen", "date", ".lastTimestamp"),
    PrinterColumn("Type", "string", ".type"),
    PrinterColumn("Reason", "string", ".reason"),
    PrinterColumn("Object", "string", ".involvedObject.name"),
    PrinterColumn("Message", "string", ".message"),
)

BUILTINS: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "namespaces", "Namespace", namespaced=False, short_names=("ns",),
                 status_subresource=True,
                 columns=(PrinterColumn("Status", "string", ".status.phase"), AGE_COLUMN)),
    ResourceType("", "v1", "configmaps", "ConfigMap", short_names=("cm",)),
    ResourceType("", "v1", "secrets", "Secret"),
    ResourceType("", "v1", "events", "Event", short_names=("ev",),
                 field_labels=events.CORE_FIELD_LABELS, columns=EVENT_COLUMNS),
    ResourceType("events.k8s.io", "v1", "events", "Event", short_names=("ev",),
                 storage_group="", storage_version="v1", convert=events.convert),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease",
                 columns=(PrinterColumn("Holder", "string", ".spec.holderIdentity"), AGE_COLUMN)),
    # Stored only (no controllers, no kubelet), so that install manifests apply as they would.
    ResourceType("", "v1", "serviceaccounts", "ServiceAccount", short_names=("sa",),
                 create_subresources=(("token", AUTHENTICATION_GROUP, "TokenRequest"),)),
    ResourceType("", "v1", "services", "Service", short_names=("svc",), categories=("all",),
                 status_subresource=True, columns=(
                     PrinterColumn("Type", "string", ".spec.type"),
                     PrinterColumn("Cluster-IP", "string", ".spec.clusterIP"), AGE_COLUMN)),
    ResourceType("", "v1", "pods", "Pod", short_names=("po",), categories=("all",),
                 status_subresource=True,
                 columns=(PrinterColumn("Status", "string", ".status.phase"), AGE_COLUMN)),
    ResourceType("apps", "v1", "deployments", "Deployment", short_names=("deploy",),
                 categories=("all",), status_subresource=True, generation=True, columns=(
                     PrinterColumn("Ready", "integer", ".status.readyReplicas"),
                     PrinterColumn("Up-To-Date", "integer", ".status.updatedReplicas"),
                     PrinterColumn("Available", "integer", ".status.availableReplicas"),
                     AGE_COLUMN)),
    ResourceType("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget",
                 short_names=("pdb",), status_subresource=True),
    ResourceType("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy",
                 short_names=("netpol",)),
    ResourceType(RBAC_GROUP, "v1", "roles", "Role"),
    ResourceType(RBAC_GROUP, "v1", "rolebindings", "RoleBinding"),
    ResourceType(RBAC_GROUP, "v1", "clusterroles", "ClusterRole", namespaced=False),
    ResourceType(RBAC_GROUP, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False),
    # Answered from the tokens the emulator issued and its RBAC objects (auth.py).
    ResourceType(AUTHENTICATION_GROUP, "v1", "tokenreviews", "TokenReview", namespaced=False,
                 verbs=("create",), review=True),
    ResourceType(AUTHORIZATION_GROUP, "v1", "subjectaccessreviews", "SubjectAccessReview",
                 namespaced=False, verbs=("create",), review=True),
    ResourceType(CRD_GROUP, "v1", "customresourcedefinitions", "CustomResourceDefinition",
                 namespaced=False, short_names=("crd", "crds"), categories=("api-extensions",),
                 status_subresource=True, generation=True),
)  # fmt: skip


_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes' version order: GA > beta > alpha, then higher numbers first."""
    found = _VERSION.match(version)
    if found is None:
        return (0, 0, 0)
    stability = {"alpha": 1, "beta": 2}.get(found.group(2) or "", 3)
    return (stability, int(found.group(1)), int(found.group(3) or 0))


def _columns(version: Obj) -> tuple[PrinterColumn, ...]:
    declared = version.get("additionalPrinterColumns")
    if not declared:
        return (AGE_COLUMN,)
    return tuple(
        PrinterColumn(
            c["name"],
            c.get("type", "string"),
            c.get("jsonPath", ""),
            c.get("description", ""),
            int(c.get("priority", 0)),
            c.get("format", ""),
        )
        for c in declared
    )


def types_for_crd(crd: Obj) -> list[ResourceType]:
    """The endpoints one CustomResourceDefinition serves (one per served version)."""
    spec = crd.get("spec", {})
    names = spec.get("names", {})
    versions = spec.get("versions", [])
    storage = next((v["name"] for v in versions if v.get("storage")), versions[0]["name"])
    return [
        ResourceType(
            group=spec["group"],
            version=v["name"],
            plural=names["plural"],
            kind=names["kind"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            singular=names.get("singular", ""),
            short_names=tuple(names.get("shortNames", ())),
            categories=tuple(names.get("categories", ())),
            status_subresource="status" in (v.get("subresources") or {}),
            generation=True,
            unconditional_update=False,
            builtin=False,
            columns=_columns(v),
            schema=(v.get("schema") or {}).get("openAPIV3Schema"),
            storage_version=storage,
            crd_name=crd["metadata"]["name"],
        )
        for v in versions
        if v.get("served", True)
    ]


class Registry:
    """Endpoints by (group, version, plural); not thread-safe (the store's lock guards it)."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        for rt in BUILTINS:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        self._types[(rt.group, rt.version, rt.plural)] = rt

    def remove_crd(self, crd_name: str) -> list[ResourceType]:
        gone = [rt for rt in self._types.values() if rt.crd_name == crd_name]
        for rt in gone:
            del self._types[(rt.group, rt.version, rt.plural)]
        return gone

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def all(self) -> list[ResourceType]:
        return list(self._types.values())

    def sharing_storage(self, key: tuple[str, str]) -> list[ResourceType]:
        return [rt for rt in self._types.values() if rt.storage_key == key]

    def group_versions(self) -> dict[str, list[str]]:
        """Groups (without the core group) to their served versions, preferred first."""
        groups: dict[str, set[str]] = {}
        for rt in self._types.values():
            if rt.group:
                groups.setdefault(rt.group, set()).add(rt.version)
        return {
            g: sorted(vs, key=version_priority, reverse=True) for g, vs in sorted(groups.items())
        }

    # ---- discovery documents ----

    def api_group(self, group: str) -> Obj | None:
        versions = self.group_versions().get(group)
        if not versions:
            return None
        listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": listed,
            "preferredVersion": listed[0],
        }

    def api_group_list(self) -> Obj:
        groups = [self.api_group(g) for g in self.group_versions()]
        for g in groups:
            if g is not None:
                del g["kind"], g["apiVersion"]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def resource_list(self, group: str, version: str) -> Obj | None:
        served = [rt for rt in self._types.values() if (rt.group, rt.version) == (group, version)]
        if not served:
            return None
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": [e for rt in served for e in rt.discovery_entries()],
        }
