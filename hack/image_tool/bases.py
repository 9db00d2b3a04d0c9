"""The base image the Dockerfile builds on (its `ARG PYTHON_IMAGE`).

The pinned python:3.11-slim where the engine has it or can pull it. Where it cannot (no
registry of images reachable), podman builds on a stand-in made from Debian's packages with
mmdebstrap, passed through the same build argument: Debian bookworm (the slim image's
release) with python3.11, ca-certificates and netbase, and `python` on PATH with pip in
/usr/local, where the slim image keeps its Python (a virtualenv made there with
python3.11-venv, which is then purged, so the only pip is the one the Dockerfile's final stage
uninstalls). Made once per recipe, and kept as a tarball in the cache outside any checkout.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from baseten_operator.sim.realkube.build import cache_home

from .engines import INSTALL, CannotBuild, Engine

Say = Callable[[str], None]
STANDIN_REPOSITORY = "localhost/baseten-operator-standin-base"
MMDEBSTRAP_TIMEOUT = 30 * 60.0
PULL_TIMEOUT = 300.0
# What mmdebstrap is asked for (also what the cached stand-in is named after).
MMDEBSTRAP = (
    "--variant=essential",
    # Merged /usr set up directly: bookworm's usrmerge package would pull in Perl.
    "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
    "--include=python3.11,python3.11-venv,ca-certificates,netbase",
    # As the slim images: no manuals, documentation or translations; licences stay.
    "--dpkgopt=path-exclude=/usr/share/man/*",
    "--dpkgopt=path-exclude=/usr/share/doc/*",
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
    "--dpkgopt=path-exclude=/usr/share/locale/*",
    '--customize-hook=chroot "$1" python3.11 -m venv /usr/local',
    '--customize-hook=chroot "$1" dpkg --purge python3.11-venv python3-pip-whl '
    "python3-setuptools-whl",
    "bookworm",
)
MIRROR = "http://deb.debian.org/debian"
# The image configuration python:3.11-slim has and a tarball lacks.
IMAGE_CONFIG = (
    "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["python3"]',
)


@dataclass(frozen=True)
class Base:
    reference: str
    standin: bool


def pinned(dockerfile: Path) -> str:
    """The base the Dockerfile names by digest."""
    match = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", dockerfile.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{dockerfile} has no `ARG PYTHON_IMAGE=...`")
    return match.group(1)


def choose(engine: Engine, dockerfile: Path, say: Say) -> Base:
    reference = pinned(dockerfile)
    if engine.name == "docker":  # it pulls the base itself, and says so if it cannot
        return Base(reference, standin=False)
    if engine.run("image", "exists", reference, check=False).returncode == 0:
        return Base(reference, standin=False)
    try:
        pulled = engine.run("pull", "--quiet", reference, check=False, timeout=PULL_TIMEOUT)
    except subprocess.TimeoutExpired:
        reason = f"no answer in {PULL_TIMEOUT:.0f} s"
    else:
        if pulled.returncode == 0:
            return Base(reference, standin=False)
        reason = (pulled.stderr.strip().splitlines() or ["no reason given"])[-1]
    say(f"the pinned base {reference} cannot be pulled here ({reason})")
    standin = standin_base(engine, say)
    say(
        f"building on a STAND-IN base, {standin}: Debian bookworm's python3.11 made with "
        "mmdebstrap, not python:3.11-slim (README, 'The image')"
    )
    return Base(standin, standin=True)


def standin_base(engine: Engine, say: Say) -> str:
    """The stand-in's image reference, imported into the engine from the cache (made first
    if the cache has none)."""
    recipe = hashlib.sha256("\0".join((*MMDEBSTRAP, MIRROR, *IMAGE_CONFIG)).encode())
    digest = recipe.hexdigest()[:12]
    reference = f"{STANDIN_REPOSITORY}:{digest}"
    if engine.run("image", "exists", reference, check=False).returncode == 0:
        return reference
    tarball = cache_home() / "image" / f"standin-base-{digest}.tar"
    if not tarball.is_file():
        make_standin(tarball, say)
    changes = [argument for line in IMAGE_CONFIG for argument in ("--change", line)]
    engine.run("import", "--quiet", *changes, str(tarball), reference)
    return reference


def make_standin(tarball: Path, say: Say) -> None:
    if shutil.which("mmdebstrap") is None:
        raise CannotBuild(f"making the stand-in base needs mmdebstrap: {INSTALL}")
    say(f"making the stand-in base with mmdebstrap into {tarball} (once: about a minute)")
    tarball.parent.mkdir(parents=True, exist_ok=True)
    partial = tarball.with_suffix(".partial.tar")  # a tarball is in the cache only complete
    done = subprocess.run(
        ["mmdebstrap", "--quiet", *MMDEBSTRAP, str(partial), MIRROR],
        capture_output=True,
        text=True,
        timeout=MMDEBSTRAP_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"mmdebstrap failed:\n{done.stderr.strip()}")
    partial.rename(tarball)
