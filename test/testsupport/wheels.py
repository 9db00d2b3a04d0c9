"""The project's wheel, built from a chosen copy of the repository, as a build would see it.

Two tests build one: the supply chain's (the image's wheel, from the Docker build context)
and the installed sandbox's (the wheel of a checkout, installed into a fresh virtualenv).
Building from a copy keeps `build/` and `*.egg-info` out of the working tree.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from testsupport.paths import REPO

# What building the wheel reads: the package and its metadata.
WHEEL_SOURCES = ("README.md", "baseten_operator", "pyproject.toml")


def copy_sources(sources: Iterable[str], target: Path, *, excluded: Callable[[str], bool]) -> None:
    """Copy each of `sources` (paths relative to the repository) to `target`, leaving out
    every file or directory whose repository-relative path `excluded` names."""
    for source in sources:
        origin = REPO / source
        if excluded(source):
            continue
        if origin.is_file():
            shutil.copy(origin, target / source)
            continue

        def ignore(directory: str, names: list[str]) -> set[str]:
            relative = Path(directory).relative_to(REPO)
            return {name for name in names if excluded((relative / name).as_posix())}

        shutil.copytree(origin, target / source, ignore=ignore)


def no_bytecode(path: str) -> bool:
    return Path(path).name == "__pycache__"


def build_wheel(context: Path, out: Path) -> Path:
    """The operator's wheel built from `context` with this environment's build tools
    (no isolation: nothing is downloaded). A build that warns fails: every install would
    print it (setuptools' deprecation of a table `project.license` was one)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(context)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    warnings = re.findall(r"\b\w+Warning\b.*", done.stderr)
    assert not warnings, f"building the wheel warns: {warnings}"
    (built,) = out.glob("baseten_operator-*.whl")
    return built
