"""The CRD as the API server serves it: accepted as structural, every CEL rule compiled within
the server's cost budget (a rule over budget or that does not compile refuses the whole CRD),
the printer columns and `kubectl explain`. (The rules' refusals are in test_e2e_fail_closed.py.)

On the real kube-apiserver these are Kubernetes' own verdicts; on the emulator, its imitation.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from testsupport.e2e.harness import Stack, basetenmodel, unique_name
from testsupport.paths import REPO

pytestmark = pytest.mark.e2e
CRD_NAME = "basetenmodels.models.baseten.com"
CRD_FILE = REPO / "config" / "crd" / "bases" / "models.baseten.com_basetenmodels.yaml"


def served_crd(stack: Stack) -> dict[str, Any]:
    crd: dict[str, Any] = stack.kubectl.json("get", "crd", CRD_NAME)
    return crd


def test_the_crd_is_accepted_whole(stack: Stack) -> None:
    crd = served_crd(stack)
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    assert conditions.get("NonStructuralSchema") is None
    # What the server stored is what the repository ships: no rule dropped or defaulted away.
    shipped = yaml.safe_load(CRD_FILE.read_text())
    served = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert served == shipped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_printer_columns_are_kubectl_get_headers(stack: Stack) -> None:
    name = unique_name("columns")
    stack.kubectl.apply(
        basetenmodel(
            name,
            "default",
            {
                "modelName": name,
                "sourceDeploymentName": "build-1",
                "environment": {"name": "production"},
                "mode": "Pause",
            },
        )
    )
    try:
        headers = stack.kubectl.run("get", "bm", name, "-n", "default").stdout.split("\n")[0]
        columns = served_crd(stack)["spec"]["versions"][0]["additionalPrinterColumns"]
        expected = ["NAME"] + [c["name"].upper() for c in columns if not c.get("priority")]
        assert headers.split() == expected
    finally:
        stack.kubectl.run("delete", "bm", name, "-n", "default", "--wait=false")


def test_kubectl_explain_describes_the_fields(stack: Stack) -> None:
    explained = stack.kubectl.run("explain", "basetenmodel.spec.environment").stdout
    shipped = yaml.safe_load(CRD_FILE.read_text())
    environment = shipped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]["environment"]
    assert "FIELDS:" in explained
    for field in environment["properties"]:
        assert f"\n  {field}\t" in explained, field
