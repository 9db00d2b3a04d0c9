"""The SBOM: CycloneDX (JSON) of the locked runtime closure, what the image's virtualenv
holds, described offline by cyclonedx-py from requirements.lock with every file's hashes.
`make sbom` writes it alone; `make image` beside the image it describes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from . import REPO

CYCLONEDX = Path(sys.executable).with_name("cyclonedx-py")
INPUTS = (REPO / "requirements.lock", REPO / "pyproject.toml")


def write(output: Path) -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(CYCLONEDX), "requirements", "requirements.lock", "--pyproject", "pyproject.toml",
         "--output-format", "JSON", "--output-reproducible", "--output-file", str(output)],
        cwd=REPO, check=True, timeout=300,
    )  # fmt: skip
    return output


def ensure(output: Path) -> Path:
    """`output`, written again only if older than what it describes (cyclonedx-py takes
    seconds, and its output is reproducible)."""
    if output.is_file() and all(output.stat().st_mtime > i.stat().st_mtime for i in INPUTS):
        return output
    return write(output)
