"""What a plan is about: BasetenModels (and the ConfigMaps of their setup scripts).

From files (`-f`: YAML or JSON files, directories, `-` for stdin; multi-document; objects
of other kinds skipped) or from the cluster (`--cluster`). ConfigMaps come from the input
when it has them, else from the cluster when the plan may read it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from baseten_operator.api.constants import API_VERSION, BASETENMODELS, KIND
from baseten_operator.runtime.errors import NotFound
from baseten_operator.runtime.resource import CONFIGMAPS

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
DEFAULT_NAMESPACE = "default"


class InputError(Exception):
    """An input that cannot be read; the plan exits 1."""


def is_basetenmodel(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == KIND and obj.get("apiVersion") == API_VERSION


def is_configmap(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == "ConfigMap" and obj.get("apiVersion") == "v1"


def _manifest_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
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


def with_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """kubectl's rule: an object without a namespace lands in the one in use."""
    meta = obj.setdefault("metadata", {})
    meta["namespace"] = meta.get("namespace") or namespace
    return obj


@dataclass
class ConfigMaps:
    """The ObjectCache of setup-script ConfigMaps: the input's first, then the cluster's."""

    given: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    kube: Any = None  # KubeClient, when the plan may read the cluster

    def add(self, configmap: dict[str, Any]) -> None:
        meta = configmap["metadata"]
        self.given[(meta["namespace"], meta["name"])] = configmap

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        key = (namespace or "", name)
        if key in self.given:
            return self.given[key]
        if self.kube is None:
            return None
        try:
            configmap: dict[str, Any] = self.kube.get(CONFIGMAPS, name, namespace)
        except NotFound:
            return None
        self.given[key] = configmap
        return configmap


@dataclass
class PlanInputs:
    models: list[dict[str, Any]]
    configmaps: ConfigMaps


def from_manifests(objects: list[dict[str, Any]], namespace: str, kube: Any = None) -> PlanInputs:
    models = [with_namespace(o, namespace) for o in objects if is_basetenmodel(o)]
    configmaps = ConfigMaps(kube=kube)
    for obj in objects:
        if is_configmap(obj):
            configmaps.add(with_namespace(obj, namespace))
    return PlanInputs(models, configmaps)


def live_models(kube: Any, namespace: str | None) -> list[dict[str, Any]]:
    """The BasetenModels in the cluster (namespace None: all of them)."""
    items: list[dict[str, Any]] = kube.list(BASETENMODELS, namespace).get("items") or []
    return sorted(items, key=lambda o: (o["metadata"].get("namespace"), o["metadata"]["name"]))


def with_live_state(obj: dict[str, Any], kube: Any) -> dict[str, Any]:
    """A manifest's spec on its live object's state (status, finalizers), when it exists:
    the pass after a merge starts from what the operator has recorded so far."""
    meta = obj["metadata"]
    try:
        live = kube.get(BASETENMODELS, meta["name"], meta["namespace"])
    except NotFound:
        return obj
    live_meta = live.get("metadata") or {}
    for key in ("finalizers", "resourceVersion", "generation", "uid"):
        if key in live_meta:
            meta[key] = live_meta[key]
    if "status" in live:
        obj["status"] = live["status"]
    return obj
