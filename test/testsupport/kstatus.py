"""kstatus's verdict on objects, from the real library (sigs.k8s.io/cli-utils), which is how
Flux's kustomize-controller (`wait`, `healthChecks`) and `flux` read a resource's health.

The Go helper in test/kstatus (its go.mod and go.sum pin the library and verify every
download) is built once per version of its sources into a cache outside the checkout,
`$XDG_CACHE_HOME/baseten-operator/kstatus/<hash>/kstatus`, by the real API server's builder
(baseten_operator/sim/realkube/build.py): a checkout's tests never rebuild what another built.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from baseten_operator.sim.realkube.build import build_go_binary, cache_home
from testsupport.paths import REPO

MODULE = REPO / "test" / "kstatus"
SOURCES = ("go.mod", "go.sum", "main.go")


def cache_dir() -> Path:
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update((MODULE / name).read_bytes())
    return cache_home() / "kstatus" / digest.hexdigest()[:16]


def ensure_built() -> Path:
    return build_go_binary("the kstatus helper", MODULE, cache_dir() / "kstatus")


def verdicts(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(status, message) kstatus computes for each object: Current, InProgress, Failed,
    Terminating, ..."""
    done = subprocess.run(
        [str(ensure_built())],
        input=json.dumps(objects),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [(v["status"], v["message"]) for v in json.loads(done.stdout)]


if __name__ == "__main__":  # `make test` builds it before pytest runs (a cold build is minutes)
    print(f"kstatus helper: {ensure_built()}")
