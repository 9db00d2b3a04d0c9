"""What a plan is about: BasetenModels (and the ConfigMaps of their setup scripts), and
BasetenSecrets (and the Secrets they name, when the input holds them).

From files (`-f`: YAML or JSON files, directories, `-` for stdin; multi-document; objects
of other kinds skipped) or from the cluster (`--cluster`). ConfigMaps come from the input
when it has them, else from the cluster when the plan may read it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from baseten_operator.api.constants import API_VERSION, KIND, SECRET_KIND
from baseten_operator.runtime.errors import NotFound
from baseten_operator.runtime.kubeconfig import KubeConfigError, kubeconfig_path
from baseten_operator.runtime.kubeconfig import context_namespace as kubeconfig_context_namespace
from baseten_operator.runtime.resource import CONFIGMAPS, Resource

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
DEFAULT_NAMESPACE = "default"
# Where a pod finds its own namespace (the in-cluster default, as for kubectl).
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class InputError(Exception):
    """An input that cannot be read; the plan exits 1."""


def is_basetenmodel(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == KIND and obj.get("apiVersion") == API_VERSION


def is_basetensecret(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == SECRET_KIND and obj.get("apiVersion") == API_VERSION


def is_secret(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"


def is_configmap(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == "ConfigMap" and obj.get("apiVersion") == "v1"


def _hidden(path: Path, root: Path) -> bool:
    """A dot-file or one under a dot-directory, such as the `..data` copy of a mounted
    ConfigMap's files (read, it would plan every manifest twice)."""
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def _manifest_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(
            p
            for p in path.rglob("*")
            if p.is_file() and p.suffix in MANIFEST_SUFFIXES and not _hidden(p, path)
        )
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    return [path]


def _documents(text: str, origin: str) -> Iterator[dict[str, Any]]:
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as error:
        raise InputError(f"{origin}: not YAML: {error}") from error
    for document in documents:
        if not isinstance(document, dict):
            continue  # empty documents, stray scalars
        if document.get("kind", "").endswith("List") and isinstance(document.get("items"), list):
            yield from (item for item in document["items"] if isinstance(item, dict))
        else:
            yield document


def read_manifests(paths: Iterable[str]) -> list[dict[str, Any]]:
    """Every object in the given files, directories and stdin (`-`), in order."""
    objects: list[dict[str, Any]] = []
    for raw in paths:
        if raw == "-":
            objects.extend(_documents(sys.stdin.read(), "stdin"))
            continue
        for path in _manifest_files(Path(raw)):
            objects.extend(_documents(path.read_text(), str(path)))
    return objects


def context_namespace(kubeconfig: str | None = None) -> str:
    """kubectl's namespace when none is given: the current context's in the kubeconfig the
    plan would use (the file `KubeClient.auto` picks), else the pod's own in a cluster,
    else `default`."""
    path = kubeconfig or kubeconfig_path()
    if path is not None:
        try:
            namespace = kubeconfig_context_namespace(path)
        except KubeConfigError:
            namespace = None
        return namespace or DEFAULT_NAMESPACE
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


def with_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """kubectl's rule: an object without a namespace lands in the one in use."""
    meta = obj.setdefault("metadata", {})
    meta["namespace"] = meta.get("namespace") or namespace
    return obj


class ClusterObjects:
    """An ObjectCache of one resource: the input's objects first, then the cluster's (each
    read once, when first asked for) when the plan may read the cluster."""

    def __init__(self, resource: Resource, kube: Any = None) -> None:
        self.resource = resource
        self.kube = kube  # KubeClient, when the plan may read the cluster
        self.given: dict[tuple[str, str], dict[str, Any] | None] = {}

    def add(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.given[(meta.get("namespace") or "", meta["name"])] = obj

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        key = (namespace or "", name)
        if key in self.given:
            return self.given[key]
        if self.kube is None:
            return None
        try:
            found: dict[str, Any] | None = self.kube.get(self.resource, name, namespace)
        except NotFound:
            found = None
        self.given[key] = found
        return found


class ConfigMaps(ClusterObjects):
    """The setup scripts' ConfigMaps."""

    def __init__(self, kube: Any = None) -> None:
        super().__init__(CONFIGMAPS, kube)


@dataclass
class PlanInputs:
    models: list[dict[str, Any]]
    configmaps: ConfigMaps
    basetensecrets: list[dict[str, Any]] = field(default_factory=list)
    # Secrets given in the input: what a BasetenSecret's value is read from first.
    secrets: list[dict[str, Any]] = field(default_factory=list)


def from_manifests(objects: list[dict[str, Any]], namespace: str, kube: Any = None) -> PlanInputs:
    def of(kind: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        return [with_namespace(o, namespace) for o in objects if kind(o)]

    configmaps = ConfigMaps(kube=kube)
    for obj in of(is_configmap):
        configmaps.add(obj)
    return PlanInputs(of(is_basetenmodel), configmaps, of(is_basetensecret), of(is_secret))


def in_namespace(crs: Iterable[dict[str, Any]], namespace: str | None) -> list[dict[str, Any]]:
    """The CRs of `namespace` (None: all of them), in kubectl's order."""
    return sorted(
        (o for o in crs if namespace is None or o["metadata"].get("namespace") == namespace),
        key=lambda o: (o["metadata"].get("namespace"), o["metadata"]["name"]),
    )


def with_live_state(
    obj: dict[str, Any], live: Mapping[tuple[str, str], dict[str, Any]]
) -> dict[str, Any]:
    """A manifest's spec on its live object's state (status, finalizers), when it exists:
    the pass after a merge starts from what the operator has recorded so far."""
    meta = obj["metadata"]
    found = live.get((meta["namespace"], meta["name"]))
    if found is None:
        return obj
    live_meta = found.get("metadata") or {}
    for key in ("finalizers", "resourceVersion", "generation", "uid", "creationTimestamp"):
        if key in live_meta:
            meta[key] = live_meta[key]
    if "status" in found:
        obj["status"] = found["status"]
    return obj
