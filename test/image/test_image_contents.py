"""What the image is, read from the image itself: its labels, user, entrypoint and size, the
SBOM beside it, and its filesystem, listed file by file (a container made from it, exported)."""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name

from testsupport.image import RECORD, Podman
from testsupport.paths import REPO

SITE_PACKAGES = "opt/venv/lib/python3.11/site-packages"
# Build tools and package installers: none may be left (their modules, scripts or metadata).
INSTALLERS = re.compile(r"(^|/)(pip|pip3(\.\d+)?|ensurepip|setuptools|wheel|python-wheels)(/|-|$)")
# A C toolchain's drivers, assemblers and linkers, bare or with a target or version.
COMPILERS = re.compile(r"([\w.]+-)?(gcc|g\+\+|cc|c\+\+|clang|cpp|ld|as|make)(-[\d.]+)?")
# The checkout's test and build tools, the parts of the package only a checkout needs, and
# what the build stage had (sources, wheels).
SOURCE_ONLY = re.compile(
    r"(^|/)(testsupport|image_tool)(/|$)"
    r"|baseten_operator/(sim|sandbox)(/|$)"
    r"|^(src|wheels|wheelhouse)(/|$)"
)


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def size_budget() -> int:
    """The budget README's "The image" states, in bytes."""
    (megabytes,) = re.findall(r"size budget of (\d+) MB", (REPO / "README.md").read_text())
    return int(megabytes) * 10**6


@pytest.fixture(scope="module")
def files(image: dict[str, Any], podman: Podman) -> dict[str, tarfile.TarInfo]:
    return podman.files(image["id"])


def test_its_labels_say_what_it_is(image: dict[str, Any], podman: Podman) -> None:
    labels = podman.inspect(image["id"])["Labels"]
    repository = re.search(r"^repo: (\S+)$", (REPO / "PROJECT").read_text(), re.MULTILINE)
    assert repository is not None
    assert labels["org.opencontainers.image.source"] == f"https://{repository.group(1)}"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert labels["org.opencontainers.image.version"] == project["version"]
    assert labels["org.opencontainers.image.licenses"] == project["license"]
    revision = labels["org.opencontainers.image.revision"]
    assert revision.removesuffix("-dirty") == git("rev-parse", "HEAD")
    assert revision.endswith("-dirty") == bool(git("status", "--porcelain", "--untracked=no"))


def test_it_runs_the_operator_as_a_non_root_user(image: dict[str, Any], podman: Podman) -> None:
    config = podman.inspect(image["id"])["Config"]
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["baseten-operator", "run"]
    assert set(config["ExposedPorts"]) == {"8443/tcp", "8081/tcp"}


def test_it_fits_its_size_budget(image: dict[str, Any], podman: Podman) -> None:
    size = podman.inspect(image["id"])["Size"]
    assert size <= size_budget(), f"{size / 1e6:.0f} MB, over README's budget"


def test_it_holds_no_installer_compiler_test_or_simulator(
    files: dict[str, tarfile.TarInfo],
) -> None:
    assert f"{SITE_PACKAGES}/baseten_operator/main.py" in files
    assert "opt/venv/bin/baseten-operator" in files
    assert [name for name in files if INSTALLERS.search(name)] == []
    assert [name for name in files if COMPILERS.fullmatch(name.rsplit("/", 1)[-1])] == []
    assert [name for name in files if SOURCE_ONLY.search(name)] == []
    tests = {path.name for path in (REPO / "test").rglob("test_*.py")}
    assert [name for name in files if name.rsplit("/", 1)[-1] in tests] == []


def test_the_sbom_beside_it_describes_what_it_installs(
    image: dict[str, Any], files: dict[str, tarfile.TarInfo]
) -> None:
    sbom = Path(image["sbom"])
    assert sbom.parent == RECORD.parent
    bom = json.loads(sbom.read_text())
    assert bom["bomFormat"] == "CycloneDX"
    described: dict[str, str] = {
        canonicalize_name(c["name"]): c["version"] for c in bom["components"]
    }
    installed: dict[str, str] = {}
    for name in files:
        found = re.fullmatch(rf"{SITE_PACKAGES}/([^/]+)-([^/-]+)\.dist-info", name)
        if found:
            installed[canonicalize_name(found.group(1))] = found.group(2)
    assert installed == {**described, "baseten-operator": bom["metadata"]["component"]["version"]}
