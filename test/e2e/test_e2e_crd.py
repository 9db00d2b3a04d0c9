"""Both CRDs as the API server serves them: accepted as structural, every CEL rule compiled
within the server's cost budget (a rule over budget or that does not compile refuses the
whole CRD), the printer columns and `kubectl explain` of every field. (The rules' refusals
are in test_e2e_fail_closed.py.)

On the real kube-apiserver these are Kubernetes' own verdicts; on the emulator, its imitation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from testsupport.e2e.harness import Stack, unique_name
from testsupport.paths import REPO

pytestmark = pytest.mark.e2e
BASES = REPO / "config" / "crd" / "bases"


@dataclass(frozen=True)
class Kind:
    plural: str
    kind: str
    spec: dict[str, Any]  # a valid spec that makes no Baseten call (paused)

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.models.baseten.com"

    @property
    def crd_file(self) -> Path:
        return BASES / f"models.baseten.com_{self.plural}.yaml"

    def shipped_schema(self) -> dict[str, Any]:
        shipped = yaml.safe_load(self.crd_file.read_text())
        schema: dict[str, Any] = shipped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        return schema


KINDS = [
    Kind(
        "basetenmodels",
        "BasetenModel",
        {
            "modelName": "columns",
            "sourceDeploymentName": "build-1",
            "environment": {"name": "production"},
            "mode": "Pause",
        },
    ),
    Kind(
        "basetensecrets",
        "BasetenSecret",
        {"name": "columns", "secretRef": {"name": "s", "key": "k"}, "mode": "Pause"},
    ),
]


def served_crd(stack: Stack, kind: Kind) -> dict[str, Any]:
    crd: dict[str, Any] = stack.kubectl.json("get", "crd", kind.crd_name)
    return crd


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_the_crd_is_accepted_whole(stack: Stack, kind: Kind) -> None:
    crd = served_crd(stack, kind)
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    assert conditions.get("NonStructuralSchema") is None
    # What the server stored is what the repository ships: no rule dropped or defaulted away.
    served = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert served == kind.shipped_schema()


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_printer_columns_are_kubectl_get_headers(stack: Stack, kind: Kind) -> None:
    name = unique_name("columns")
    stack.kubectl.apply(
        {
            "apiVersion": "models.baseten.com/v1alpha1",
            "kind": kind.kind,
            "metadata": {"name": name, "namespace": "default"},
            "spec": kind.spec,
        }
    )
    try:
        headers = stack.kubectl.run("get", kind.plural, name, "-n", "default").stdout
        columns = served_crd(stack, kind)["spec"]["versions"][0]["additionalPrinterColumns"]
        expected = ["NAME"] + [c["name"].upper() for c in columns if not c.get("priority")]
        assert headers.split("\n")[0].split() == expected
    finally:
        stack.kubectl.run("delete", kind.plural, name, "-n", "default", "--wait=false")


def object_fields(schema: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every object in the schema that has fields of its own (spec and status
    and all below them), outermost first."""
    found = []
    properties = schema.get("properties") or {}
    if properties and path:
        found.append(path)
    for name, child in properties.items():
        if path or name in ("spec", "status"):
            found.extend(object_fields(child.get("items", child), (*path, name)))
    return found


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_kubectl_explain_describes_every_field(stack: Stack, kind: Kind) -> None:
    """Each object's `kubectl explain` lists every one of its fields with the first words of
    the description the types give it (what a user reads), walking the whole schema."""
    schema = kind.shipped_schema()
    paths = object_fields(schema)
    assert len(paths) > 3  # spec, status and objects below them
    for path in paths:
        node = schema
        for name in path:
            node = node["properties"][name]
            node = node.get("items", node)
        explained = stack.kubectl.run("explain", ".".join((kind.plural, *path))).stdout
        assert "FIELDS:" in explained, path
        for field, child in node["properties"].items():
            assert f"\n  {field}\t" in explained, (path, field)
            described = " ".join((child.get("description") or "").split()[:4])
            assert described in " ".join(explained.split()), (path, field, described)
