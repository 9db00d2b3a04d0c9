"""The operator's image for the image tier: built as `make test` builds it, and podman, with
the project's settings, to look inside it and to run it (`testsupport.pods` runs it as the
Deployment's pod).

`build_tier` runs the project's own build, `python -m image_tool tier` (hack/image_tool):
podman, the Dockerfile on the pinned base or, where that cannot be pulled, the cached Debian
stand-in, every wheel from the cached wheelhouse. `make test` starts that build in the
background before lint; this call waits for it (builds share a lock) and then finds every
layer cached. The build leaves a record (dist/image/build.json): the image's ID, the SBOM.
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
import uuid
from dataclasses import dataclass
from typing import Any

from testsupport.e2e.harness import VENV_BIN
from testsupport.paths import REPO

HACK = REPO / "hack"
CONTAINERS_CONF = HACK / "image_tool" / "containers.conf"
RECORD = REPO / "dist" / "image" / "build.json"
CANNOT_BUILD = 3  # image_tool's exit status when this machine cannot build the image
BUILD_TIMEOUT = 45 * 60.0


@dataclass(frozen=True)
class TierImage:
    """What the tier's build came to: the record of the image built, or why there is none."""

    record: dict[str, Any] | None
    skip_reason: str | None = None
    failure: str | None = None


def image_tool(*args: str, timeout: float = BUILD_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """`python -m image_tool ARGS` as the Makefile runs it."""
    return subprocess.run(
        [str(VENV_BIN / "python"), "-m", "image_tool", *args],
        env={**os.environ, "PYTHONPATH": str(HACK)},
        cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def build_tier() -> TierImage:
    done = image_tool("tier")
    said = [line for line in done.stderr.splitlines() if line.startswith("image: ")]
    if done.returncode == CANNOT_BUILD:
        return TierImage(None, skip_reason=said[-1] if said else done.stderr)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-60:])
        return TierImage(None, failure=f"the image tier's build failed:\n{tail}")
    return TierImage(json.loads(RECORD.read_text()))


class Podman:
    """podman with the settings the image is built with (hack/image_tool/containers.conf)."""

    def command(self, *args: str) -> list[str]:
        return ["podman", *args]

    def environ(self) -> dict[str, str]:
        return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}

    def run(
        self, *args: str, check: bool = True, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.command(*args), env=self.environ(), capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done

    def inspect(self, image: str) -> dict[str, Any]:
        (found,) = json.loads(self.run("image", "inspect", image).stdout)
        result: dict[str, Any] = found
        return result

    def files(self, image: str) -> dict[str, tarfile.TarInfo]:
        """Every file of the image's filesystem by path (without the leading /), as a
        container made from it exports them."""
        name = f"listing-{uuid.uuid4().hex[:8]}"
        self.run("create", "--name", name, image)
        try:
            with subprocess.Popen(
                self.command("export", name), env=self.environ(), stdout=subprocess.PIPE
            ) as export:
                assert export.stdout is not None
                with tarfile.open(fileobj=export.stdout, mode="r|") as archive:
                    members = {m.name.removeprefix("./").rstrip("/"): m for m in archive}
            assert export.returncode == 0, f"podman export {image} failed"
        finally:
            self.run("rm", "--force", name, check=False)
        return members
