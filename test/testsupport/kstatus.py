"""kstatus's verdict on objects, from the real library (sigs.k8s.io/cli-utils), which is how
Flux's kustomize-controller (`wait`, `healthChecks`) and `flux` read a resource's health.

The Go helper in test/kstatus (its go.mod and go.sum pin the library and verify every
download) is built once per version of its sources into a cache outside the checkout,
`$XDG_CACHE_HOME/baseten-operator/kstatus/<hash>/kstatus`, as the real API server is
(baseten_operator/sim/realkube/build.py): a checkout's tests never rebuild what another built.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from testsupport.paths import REPO

MODULE = REPO / "test" / "kstatus"
SOURCES = ("go.mod", "go.sum", "main.go")
BUILD_TIMEOUT = 900.0  # a cold module download and compile, on two shared cores


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update((MODULE / name).read_bytes())
    return Path(base) / "baseten-operator" / "kstatus" / digest.hexdigest()[:16]


def ensure_built() -> Path:
    binary = cache_dir() / "kstatus"
    if binary.is_file():
        return binary
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("the kstatus helper needs the Go toolchain (`go`) on PATH")
    binary.parent.mkdir(parents=True, exist_ok=True)
    # Built beside its final name, then renamed: a concurrent builder (another test worker)
    # never runs a half-written binary, and either one's complete binary is the same.
    partial = binary.with_name(f"kstatus.{os.getpid()}.partial")
    subprocess.run(
        [go, "build", "-mod=readonly", "-trimpath", "-o", str(partial), "."],
        cwd=MODULE,
        check=True,
        timeout=BUILD_TIMEOUT,
        capture_output=True,
    )
    partial.replace(binary)
    return binary


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
