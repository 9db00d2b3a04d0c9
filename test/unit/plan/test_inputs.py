"""Inputs: files, directories, stdin, multi-document YAML, kinds skipped, ConfigMaps."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from baseten_operator.plan.inputs import (
    ConfigMaps,
    InputError,
    from_manifests,
    read_manifests,
)
from baseten_operator.runtime.errors import NotFound


def model(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "models.baseten.com/v1alpha1",
        "kind": "BasetenModel",
        "metadata": meta,
        "spec": {"modelName": name},
    }


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


def test_directories_multi_documents_lists_and_other_kinds(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.yaml").write_text(
        yaml.safe_dump_all([model("one"), {"apiVersion": "v1", "kind": "Service"}, None])
    )
    (tmp_path / "b.yml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [model("two", "x")]})
    )
    (tmp_path / "notes.txt").write_text("skipped: not a manifest suffix")
    inputs = from_manifests(read_manifests([str(tmp_path)]), "team")
    assert [(m["metadata"]["namespace"], m["metadata"]["name"]) for m in inputs.models] == [
        ("team", "one"),
        ("x", "two"),
    ]


def test_a_mounted_configmap_directory_is_read_once(tmp_path: Path) -> None:
    """The kubelet's layout: the files in a timestamped dot-directory, `..data` linking to
    it, and each file a link through `..data` (deploy/argocd/plan-presync-hook.yaml)."""
    versioned = tmp_path / "..2026_01_01_00_00_00.123"
    versioned.mkdir()
    (versioned / "models.yaml").write_text(yaml.safe_dump(model("one")))
    (tmp_path / "..data").symlink_to(versioned.name)
    (tmp_path / "models.yaml").symlink_to(Path("..data") / "models.yaml")
    (tmp_path / ".hidden.yaml").write_text(yaml.safe_dump(model("hidden")))
    inputs = from_manifests(read_manifests([str(tmp_path)]), "team")
    assert [m["metadata"]["name"] for m in inputs.models] == ["one"]


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(yaml.safe_dump_all([model("s"), configmap("c")])))
    inputs = from_manifests(read_manifests(["-"]), "default")
    assert [m["metadata"]["name"] for m in inputs.models] == ["s"]
    assert inputs.configmaps.get("default", "c") is not None


def test_missing_path_and_bad_yaml_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_manifests([str(tmp_path / "nope.yaml")])
    (tmp_path / "bad.yaml").write_text("a: [unclosed")
    with pytest.raises(InputError, match="not YAML"):
        read_manifests([str(tmp_path / "bad.yaml")])


class Cluster:
    def __init__(self, configmaps: dict[tuple[str, str], dict[str, Any]]) -> None:
        self.configmaps = configmaps
        self.reads: list[tuple[str, str]] = []

    def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.reads.append((namespace or "", name))
        if (namespace or "", name) not in self.configmaps:
            raise NotFound(404, "NotFound", name)
        return self.configmaps[(namespace or "", name)]


def test_configmaps_from_the_input_first_then_the_cluster() -> None:
    cluster = Cluster({("ns", "live"): {"data": {"k": "live"}}, ("ns", "given"): {}})
    configmaps = ConfigMaps(kube=cluster)
    configmaps.add({"metadata": {"name": "given", "namespace": "ns"}, "data": {"k": "input"}})
    assert (configmaps.get("ns", "given") or {})["data"] == {"k": "input"}
    assert (configmaps.get("ns", "live") or {})["data"] == {"k": "live"}
    assert configmaps.get("ns", "absent") is None
    assert cluster.reads == [("ns", "live"), ("ns", "absent")]
    assert ConfigMaps().get("ns", "live") is None  # no cluster access: only the input
