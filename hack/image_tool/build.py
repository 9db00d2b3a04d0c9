"""The build: the Dockerfile as it is, on the base `bases` chose, labelled with the version
and the revision built, from a wheelhouse when one is given (air-gapped: pip reads no index).
It leaves, in the output directory, the SBOM of what the image installs and `build.json`, the
record of what was built (the image's ID among it: the tag moves, the ID names this build).

Builds take turns on a lock in the cache: the image tier's build in the background of `make
test` and the tests' own call of it (which waits, then finds every layer cached).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from filelock import FileLock

from baseten_operator.sim.realkube.build import cache_home

from . import REPO, bases, sbom, wheelhouse
from .engines import Engine

DOCKERFILE = REPO / "Dockerfile"
RECORD = "build.json"
STAGE_REPOSITORY = "baseten-operator-build-stage"
BUILD_TIMEOUT = 60 * 60.0

Say = Callable[[str], None]


@dataclass(frozen=True)
class Record:
    image: str  # the tag
    id: str  # the image's ID
    engine: str
    base: str
    standin_base: bool
    wheelhouse: str | None
    version: str
    revision: str
    size: int  # bytes, as the engine counts them
    sbom: str
    seconds: float


def version() -> str:
    return str(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"])


def revision() -> str:
    """The commit built, `-dirty` when the checkout has changes on top of it."""
    done = subprocess.run(
        ["git", "describe", "--always", "--dirty", "--abbrev=40"],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def lock() -> FileLock:
    path = cache_home() / "image" / "build.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path)


def build(engine: Engine, *, tag: str, wheelhouse_dir: Path | None, out: Path, say: Say) -> Record:
    if wheelhouse_dir is not None:
        wheelhouse.check(wheelhouse_dir)  # before anything is built
    with lock():
        started = time.monotonic()
        say(f"building {tag} with {engine.name}")
        base = bases.choose(engine, DOCKERFILE, say)
        built_revision = revision()
        arguments = [
            "--file", str(DOCKERFILE), "--build-arg", f"PYTHON_IMAGE={base.reference}",
            # Labels given here, not build arguments: podman's layer cache ignores a changed
            # argument's value, and would keep the revision of the build that made the layer.
            "--label", f"org.opencontainers.image.version={version()}",
            "--label", f"org.opencontainers.image.revision={built_revision}",
        ]  # fmt: skip
        if wheelhouse_dir is not None:
            say(f"air-gapped: every wheel from {wheelhouse_dir}, no index")
            arguments += [
                "--build-context", f"wheelhouse={wheelhouse_dir.resolve()}",
                "--build-arg", "PIP_NO_INDEX=1",
            ]  # fmt: skip
        if engine.name == "podman":
            # podman keeps the build stage as an image of its own (BuildKit does not), a few
            # hundred MB more each time the sources change: tagged, so the next one replaces it.
            _tagged(engine, f"{STAGE_REPOSITORY}:{version()}", *arguments, "--target", "build")
        image_id = _tagged(engine, tag, *arguments)
        size = int(engine.run("image", "inspect", "--format", "{{.Size}}", image_id).stdout)
        record = Record(
            image=tag,
            id=image_id,
            engine=engine.name,
            base=base.reference,
            standin_base=base.standin,
            wheelhouse=str(wheelhouse_dir.resolve()) if wheelhouse_dir else None,
            version=version(),
            revision=built_revision,
            size=size,
            sbom=str(sbom.ensure(out / f"baseten-operator-{version()}.cdx.json")),
            seconds=round(time.monotonic() - started, 1),
        )
        (out / RECORD).parent.mkdir(parents=True, exist_ok=True)
        (out / RECORD).write_text(json.dumps(asdict(record), indent=2) + "\n")
    say(
        f"built {tag} ({image_id[:19]}) with {engine.name} in {record.seconds:.0f} s: "
        f"{size / 1e6:.0f} MB"
        + (", on the STAND-IN base" if base.standin else "")
        + f"; SBOM {record.sbom}; record {out / RECORD}"
    )
    return record


def _tagged(engine: Engine, tag: str, *arguments: str) -> str:
    """Build the image `tag` names; the one it named before is removed, unless another tag or
    a container (a test running it) still uses it: each is a few hundred MB."""
    inspected = engine.run("image", "inspect", "--format", "{{.Id}}", tag, check=False)
    before = inspected.stdout.strip().removeprefix("sha256:")  # Docker says it, podman not
    built = _build(engine, *arguments, "--tag", tag)
    if before and before != built.removeprefix("sha256:"):
        engine.run("image", "rm", before, check=False)
    return built


def _build(engine: Engine, *arguments: str) -> str:
    """One build of the Dockerfile, its output on stderr; the ID of the image it made."""
    with tempfile.TemporaryDirectory() as scratch:
        iidfile = Path(scratch) / "iid"
        done = subprocess.run(
            engine.command("build", *arguments, "--iidfile", str(iidfile), str(REPO)),
            env=engine.environ(), stdout=sys.stderr, check=False, timeout=BUILD_TIMEOUT,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"{engine.name} build exited {done.returncode} (its output above)")
        return iidfile.read_text().strip()
