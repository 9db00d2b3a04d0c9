"""A wheelhouse: every file the locks pin, so that a build reaches no index.

pip does both jobs: `pip download --require-hashes` fills the directory (files already there
and intact are kept), and a dry-run install from it alone (`--no-index --find-links`) checks
it, naming a pinned package whose file is missing or does not match the lock's hashes. The
files are for the interpreter that runs this: prepare them on the image's platform (Linux
x86_64, Python 3.11).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from . import REPO

LOCKS = ("requirements.lock", "requirements-build.lock")
PIP_TIMEOUT = 30 * 60.0


class Incomplete(RuntimeError):
    """The wheelhouse lacks a pinned file; the message names it."""


def _requirements() -> list[str]:
    return [argument for lock in LOCKS for argument in ("-r", str(REPO / lock))]


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", *args],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT,
        check=False,
    )


def problems(directory: Path) -> str | None:
    """What pip finds missing or corrupt in `directory` (None: every pinned file is there)."""
    if not directory.is_dir():
        return f"no directory {directory}"
    done = _pip(
        "install", "--dry-run", "--quiet", "--ignore-installed", "--no-index",
        "--find-links", str(directory), "--require-hashes", "--no-deps", *_requirements(),
    )  # fmt: skip
    return done.stderr.strip() if done.returncode != 0 else None


def check(directory: Path) -> None:
    """Raise `Incomplete` unless `directory` holds, hash-checked, every file the locks pin."""
    found = problems(directory)
    if found is not None:
        raise Incomplete(
            f"the wheelhouse {directory} lacks files the locks pin "
            f"(`make wheelhouse WHEELHOUSE={directory}` fetches them); pip says:\n{found}"
        )


def fill(directory: Path) -> None:
    """Download into `directory` whatever the locks pin and it lacks, then check it. A
    complete wheelhouse is left as it is: no index is asked."""
    if problems(directory) is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    done = _pip(
        "download", "--quiet", "--require-hashes", "--no-deps", "--dest", str(directory),
        *_requirements(),
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"pip download into {directory} failed:\n{done.stderr.strip()}")
    check(directory)
