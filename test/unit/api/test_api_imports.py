"""The API package is light: naming BasetenModels does not load the Kubernetes client."""

from __future__ import annotations

import subprocess
import sys

from baseten_operator.api.constants import BASETENMODELS, GROUP, KIND, PLURAL, VERSION

LOADS_THE_API = """
import sys
import baseten_operator.api.constants, baseten_operator.api.crd, baseten_operator.api.types
heavy = sorted(m for m in ("kubernetes", "urllib3", "baseten_operator.runtime.client")
               if m in sys.modules)
print(",".join(heavy))
"""


def test_basetenmodels_is_the_crds_resource() -> None:
    assert (BASETENMODELS.group, BASETENMODELS.version) == (GROUP, VERSION)
    assert (BASETENMODELS.plural, BASETENMODELS.kind) == (PLURAL, KIND)
    assert BASETENMODELS.namespaced
    assert BASETENMODELS.path("ns", "m") == f"/apis/{GROUP}/{VERSION}/namespaces/ns/{PLURAL}/m"


def test_importing_the_api_loads_no_kube_client() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOADS_THE_API], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
