"""The supply chain, checked without a Docker engine: the lock files match pyproject.toml
and carry hashes, the Dockerfile installs only what they pin from a base image pinned by
digest, and the wheel it installs (built from the context .dockerignore leaves) holds the
operator alone (no simulators, no sandbox)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from testsupport.image import image_tool
from testsupport.paths import REPO
from testsupport.wheels import build_wheel, copy_sources

DOCKERIGNORE = REPO / ".dockerignore"
LOCK = REPO / "requirements.lock"
BUILD_LOCK = REPO / "requirements-build.lock"
DOCKERFILE = REPO / "Dockerfile"
FROM_PYPROJECT = "baseten-operator (pyproject.toml)"
SOURCE_ONLY = ("baseten_operator/sim/", "baseten_operator/sandbox/")


@dataclass
class Locked:
    version: str
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)


def parse_lock(path: Path) -> dict[str, Locked]:
    """pip-compile output: `name==version \\` lines, `--hash=` lines, `# via` comments."""
    entries: dict[str, Locked] = {}
    current: Locked | None = None
    for line in path.read_text().splitlines():
        pinned = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s\\]+)", line)
        if pinned:
            current = entries.setdefault(canonicalize_name(pinned[1]), Locked(pinned[2]))
        elif current is not None and (found := re.search(r"--hash=sha256:([0-9a-f]{64})", line)):
            current.hashes.append(found[1])
        elif current is not None and (via := re.match(r"^#\s+(?:via\b)?\s*(\S.*)$", line.strip())):
            current.via.append(via[1])
    return entries


def runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [Requirement(text) for text in project["dependencies"]]


def test_the_lock_pins_every_dependency_of_pyproject_within_its_constraint() -> None:
    locked = parse_lock(LOCK)
    for requirement in runtime_requirements():
        entry = locked.get(canonicalize_name(requirement.name))
        assert entry is not None, f"{requirement.name} is not in requirements.lock: `make lock`"
        assert requirement.specifier.contains(entry.version, prereleases=True), (
            f"requirements.lock pins {requirement.name}=={entry.version}, outside "
            f"pyproject.toml's {requirement}: `make lock`"
        )


def test_the_lock_has_no_direct_dependency_pyproject_dropped() -> None:
    direct = {name for name, entry in parse_lock(LOCK).items() if FROM_PYPROJECT in entry.via}
    declared = {canonicalize_name(r.name) for r in runtime_requirements()}
    assert direct == declared, "requirements.lock is stale: `make lock`"


def test_the_lock_is_closed_under_what_each_locked_package_requires() -> None:
    """Each pinned package's own requirements are pinned too, within their ranges: a changed
    transitive closure fails here, not in a Docker build. Read from the installed packages'
    metadata (this environment installs the same versions, but for the few a dev tool pins
    differently, which are skipped: their requirements are not the locked version's)."""
    locked = parse_lock(LOCK)
    problems, read = [], 0
    for name, entry in locked.items():
        try:
            installed = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if installed.version != entry.version:
            continue
        read += 1
        for text in installed.requires or []:
            requirement = Requirement(text)
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue  # an optional extra, or another platform's
            pinned = locked.get(canonicalize_name(requirement.name))
            if pinned is None:
                problems.append(f"{name} requires {requirement}: not in requirements.lock")
            elif not requirement.specifier.contains(pinned.version, prereleases=True):
                problems.append(f"{name} requires {requirement}: locked {pinned.version}")
    assert read > len(locked) * 0.9, "too few locked packages installed to check the closure"
    assert problems == [], "requirements.lock is stale: `make lock`"


@pytest.mark.parametrize("lock", [LOCK, BUILD_LOCK], ids=lambda p: p.name)
def test_every_locked_package_has_hashes(lock: Path) -> None:
    entries = parse_lock(lock)
    assert entries
    unhashed = sorted(name for name, entry in entries.items() if not entry.hashes)
    assert not unhashed, f"{lock.name}: no hashes for {unhashed}"
    assert "--index-url" not in lock.read_text() and "--find-links" not in lock.read_text()


def test_the_runtime_closure_has_no_build_tools_and_the_build_lock_pins_them() -> None:
    assert not {"pip", "setuptools", "wheel"} & set(parse_lock(LOCK))
    assert set(parse_lock(BUILD_LOCK)) == {"pip", "setuptools"}


# --------------------------------------------------------------------------- Dockerfile


def stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuations joined), split at each FROM: the
    wheelhouse (an input), the build stage, the final stage."""
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    instructions = [
        line.strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")
    ]
    split: list[list[str]] = [[]]
    for instruction in instructions:
        if (
            instruction.startswith("FROM ")
            and split[-1]
            and any(i.startswith("FROM ") for i in split[-1])
        ):
            split.append([])
        split[-1].append(instruction)
    return split


def test_the_base_image_is_pinned_by_digest() -> None:
    text = DOCKERFILE.read_text()
    (image,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.MULTILINE)
    assert re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", image)
    froms = [line for line in text.splitlines() if line.startswith("FROM ")]
    # The wheelhouse is an input an air-gapped build replaces, not a base.
    assert froms[0] == "FROM scratch AS wheelhouse"
    assert froms[1:] and all(line.split()[1] == "${PYTHON_IMAGE}" for line in froms[1:])


def test_the_wheelhouse_is_empty_unless_a_build_brings_one_and_pip_reads_it() -> None:
    wheelhouse, build, _final = stages()
    assert wheelhouse[-1] == "FROM scratch AS wheelhouse"  # nothing from the context
    assert "COPY --from=wheelhouse / /wheelhouse/" in build
    (pip_env,) = [i for i in build if i.startswith("ENV PIP_")]
    assert "PIP_FIND_LINKS=/wheelhouse" in pip_env.split()
    # No index only when asked (`--build-arg PIP_NO_INDEX=1`): a build argument, not set.
    assert "ARG PIP_NO_INDEX" in build


def test_the_build_installs_only_hash_checked_pins() -> None:
    _wheelhouse, build, _final = stages()
    runs = " ".join(i for i in build if i.startswith("RUN "))
    assert "pip install --require-hashes --no-deps -r requirements-build.lock" in runs
    assert "pip wheel --require-hashes --no-deps --no-build-isolation" in runs
    assert "-r requirements.lock" in runs
    assert "--upgrade" not in runs
    # Everything the virtualenv gets comes from the hash-checked wheels, nothing from an index.
    assert "install --no-index --no-deps /wheels/*.whl" in runs
    assert "venv --without-pip" in runs


def test_the_final_stage_has_no_pip_setuptools_or_sources() -> None:
    _wheelhouse, _build, final = stages()
    copies = [i for i in final if i.startswith(("COPY", "ADD"))]
    assert copies == ["COPY --from=build /opt/venv /opt/venv"]
    runs = " ".join(i for i in final if i.startswith("RUN "))
    assert "pip uninstall --yes pip setuptools wheel" in runs
    assert "ensurepip" in runs
    assert not any(i.startswith("RUN") and "apt-get" in i for i in final)  # no compilers
    assert any(i.startswith("USER ") and not i.startswith("USER 0") for i in final)
    assert 'ENTRYPOINT ["baseten-operator", "run"]' in final


# --------------------------------------------------------------------------- the wheel


def dockerfile_sources() -> list[str]:
    """What the build stage COPYs from the context to build the operator's wheel."""
    _wheelhouse, build, _final = stages()
    sources: list[str] = []
    for instruction in build:
        if instruction.startswith("COPY ") and "--from" not in instruction:
            *copied, _destination = instruction.split()[1:]
            sources += [s for s in copied if not s.endswith(".lock")]
    return sources


def dockerignore_pattern(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern as a regex over context-relative paths: `**` spans
    directories, `*` and `?` stay within one (Go's filepath.Match, as Docker uses it)."""
    regex = ""
    for part in re.split(r"(\*\*/?|\*|\?)", pattern.strip("/")):
        if part.startswith("**"):
            regex += "(?:.*/)?" if part.endswith("/") else ".*"
        elif part == "*":
            regex += "[^/]*"
        elif part == "?":
            regex += "[^/]"
        else:
            regex += re.escape(part)
    return re.compile(regex)


def dockerignored() -> list[re.Pattern[str]]:
    lines = [line.strip() for line in DOCKERIGNORE.read_text().splitlines()]
    patterns = [line for line in lines if line and not line.startswith("#")]
    assert not [p for p in patterns if p.startswith("!")], "exceptions are not interpreted here"
    return [dockerignore_pattern(pattern) for pattern in patterns]


def sent_to_docker(path: str, patterns: list[re.Pattern[str]]) -> bool:
    """Whether the build context holds `path`: neither it nor a directory above it is ignored."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    return not any(p.fullmatch(prefix) for p in patterns for prefix in prefixes)


def test_the_dockerignore_reading_follows_dockers_rules() -> None:
    patterns = [dockerignore_pattern(p) for p in ("test", "**/__pycache__", "*.egg-info", "a/b")]
    assert not sent_to_docker("test/unit/x.py", patterns)
    assert sent_to_docker("baseten_operator/test_x.py", patterns)  # anchored at the root
    assert not sent_to_docker("baseten_operator/api/__pycache__/x.pyc", patterns)
    assert not sent_to_docker("baseten_operator.egg-info/PKG-INFO", patterns)
    assert sent_to_docker("x/baseten_operator.egg-info", patterns)  # `*` stays in one level
    assert not sent_to_docker("a/b/c", patterns) and sent_to_docker("a/bc", patterns)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel the Dockerfile builds: from what it copies, as the context holds it."""
    context = tmp_path_factory.mktemp("context")
    patterns = dockerignored()
    copy_sources(
        dockerfile_sources(), context, excluded=lambda path: not sent_to_docker(path, patterns)
    )
    return build_wheel(context, tmp_path_factory.mktemp("wheels"))


def test_the_dockerfile_builds_the_wheel_from_the_package_and_its_metadata() -> None:
    assert sorted(dockerfile_sources()) == ["README.md", "baseten_operator", "pyproject.toml"]


def test_the_wheel_holds_the_operator_without_simulators_sandbox_or_tests(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith(SOURCE_ONLY)]
    assert not [n for n in names if n.startswith(("test/", "tests/", "hack/"))]
    for needed in (
        "baseten_operator/cli.py",
        "baseten_operator/main.py",
        "baseten_operator/runtime/httpserver.py",
        "baseten_operator/runtime/delegatedauth.py",
        "baseten_operator/controller/basetenmodel/reconciler.py",
        "baseten_operator/truss/push_child.py",
        "baseten_operator/py.typed",
    ):
        assert needed in names
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert (
        "baseten-operator = baseten_operator.entry:main"
        in zipfile.ZipFile(wheel).read(entry_points).decode()
    )


# Run with -S: no .pth files, so the development checkout's editable install (which would
# resolve any baseten_operator.* name to the source tree) is out of the way; the
# dependencies come from site-packages, added as a plain path.
IMPORT_EVERYTHING = r"""
import importlib, json, sys
root, site_packages, modules = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path[:0] = [root]
sys.path.append(site_packages)
import baseten_operator
assert baseten_operator.__file__.startswith(root), baseten_operator.__file__
for module in modules:
    importlib.import_module(module)
from baseten_operator.cli import build_parser
parser = build_parser()
commands = parser._subparsers._group_actions[0].choices
print(json.dumps(sorted(commands)))
"""
RUN_THE_SANDBOX = r"""
import sys
sys.path[:0] = [sys.argv[1]]
sys.path.append(sys.argv[2])
from baseten_operator.cli import main
sys.exit(main(["sandbox", "--time-scale", "0.1"]))
"""


def test_the_installed_operator_needs_nothing_the_wheel_leaves_out(
    wheel: Path, tmp_path: Path
) -> None:
    zipfile.ZipFile(wheel).extractall(tmp_path)
    modules = [
        name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for name in zipfile.ZipFile(wheel).namelist()
        if name.endswith(".py") and not name.endswith("__main__.py")
    ]
    done = subprocess.run(
        [sys.executable, "-S", "-c", IMPORT_EVERYTHING, str(tmp_path),
         sysconfig.get_paths()["purelib"], json.dumps(modules)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # `sandbox` is there to say how to get it, not to run.
    assert json.loads(done.stdout) == ["crd", "plan", "run", "sandbox"]
    sandbox = subprocess.run(
        [sys.executable, "-S", "-c", RUN_THE_SANDBOX, str(tmp_path),
         sysconfig.get_paths()["purelib"]],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )  # fmt: skip
    assert sandbox.returncode == 2
    assert "the sandbox is not installed here" in sandbox.stderr
    assert "pip install '.[sim]'" in sandbox.stderr


# --------------------------------------------------------------------------- SBOM


def test_make_sbom_describes_the_locked_closure_in_cyclonedx(tmp_path: Path) -> None:
    assert "$(IMAGE_TOOL) sbom $(SBOM)" in (REPO / "Makefile").read_text()
    out = tmp_path / "sbom.cdx.json"
    done = image_tool("sbom", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    bom = json.loads(out.read_text())
    assert bom["bomFormat"] == "CycloneDX"
    assert bom["metadata"]["component"]["name"] == "baseten-operator"
    described = {canonicalize_name(c["name"]): c["version"] for c in bom["components"]}
    assert described == {name: entry.version for name, entry in parse_lock(LOCK).items()}
    hashed = [c for c in bom["components"] if any(r.get("hashes") for r in c["externalReferences"])]
    assert len(hashed) == len(bom["components"])
