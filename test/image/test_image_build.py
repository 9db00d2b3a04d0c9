"""`make image` refuses bad input before building anything, saying what to do."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from testsupport.image import image_tool
from testsupport.paths import REPO


def pin(package: str) -> str:
    """requirements.lock's pin of `package` (`name==version`)."""
    found = re.search(rf"^{package}==[^\s\\]+", (REPO / "requirements.lock").read_text(), re.M)
    assert found is not None, f"{package} is not in requirements.lock"
    return found.group(0)


def test_a_wheelhouse_missing_a_wheel_is_refused_naming_it(
    image: dict[str, Any], tmp_path: Path
) -> None:
    missing = pin("truss")
    complete = Path(image["wheelhouse"])
    partial = tmp_path / "wheelhouse"
    partial.mkdir()
    name, version = missing.split("==")
    for wheel in complete.iterdir():
        if not wheel.name.startswith(f"{name}-{version}-"):
            os.link(wheel, partial / wheel.name)
    assert len(list(partial.iterdir())) == len(list(complete.iterdir())) - 1

    done = image_tool(
        "build", "--engine", "podman", "--wheelhouse", str(partial), "--out", str(tmp_path),
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"the wheelhouse {partial} lacks files the locks pin" in done.stderr
    assert f"No matching distribution found for {missing}" in done.stderr
    assert f"make wheelhouse WHEELHOUSE={partial}" in done.stderr
    assert not (tmp_path / "build.json").exists()
