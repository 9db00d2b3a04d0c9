"""`make image` on a machine without any container engine says what to install, and builds
nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from testsupport.image import CANNOT_BUILD, image_tool

INSTALL = (
    "install podman, runc, slirp4netns and mmdebstrap (on Debian or Ubuntu, "
    "hack/install-image-tools.sh does, as root), or start a Docker engine"
)


@pytest.mark.parametrize(
    ("engine", "said"),
    [
        ([], f"no container engine here: {INSTALL}"),
        (["--engine", "podman"], f"podman is not installed: {INSTALL}"),
        (["--engine", "docker"], "ENGINE=docker, but no Docker engine answers here"),
    ],
)
def test_without_an_engine_it_says_what_to_install(
    engine: list[str], said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no docker, no podman
    done = image_tool("build", *engine, "--out", str(tmp_path), timeout=60)
    assert done.returncode == CANNOT_BUILD, done.stderr
    assert f"image: cannot build here: {said}" in done.stderr
    assert list(tmp_path.iterdir()) == []
