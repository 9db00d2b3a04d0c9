"""The sandbox from an installed wheel: no checkout, the samples from package data.

The wheel of this checkout goes, with its `sim` extra, into a fresh virtualenv in a temporary
directory, offline: the dependencies already installed in this environment are lent to it
(a `.pth` naming a directory of links to them; this project's own install left out). Then
`baseten-operator sandbox` runs from that virtualenv in a directory without the repository.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

from testsupport.paths import REPO
from testsupport.wheels import WHEEL_SOURCES, build_wheel, copy_sources, no_bytecode

# What belongs to this environment's install of the project, not to its dependencies.
PROJECT_ENTRIES = ("baseten_operator", "__editable__")
READY_LINE = "Ctrl-C stops everything."
BAD_MODEL_PLAY = "A bad model, caught"
SAMPLES = "baseten_operator/sandbox/samples"


def fresh_venv(root: Path) -> Path:
    """A new virtualenv at `root` that sees this environment's dependencies; its python."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120
    )
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    lent = root / "lent-dependencies"
    lent.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(PROJECT_ENTRIES):
            (lent / entry.name).symlink_to(entry)
    # A path a .pth adds is no site directory: the .pth files among the links (this
    # environment's editable install of the project among them) are never run.
    (Path(purelib) / "lent-dependencies.pth").write_text(f"{lent}\n")
    return python


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh virtualenv holding this checkout's wheel[sim]."""
    context = tmp_path_factory.mktemp("checkout")
    copy_sources(WHEEL_SOURCES, context, excluded=no_bytecode)
    wheel = build_wheel(context, tmp_path_factory.mktemp("wheels"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "baseten_operator/sim/kube/server.py" in names
    assert "baseten_operator/sandbox/command.py" in names
    packaged = sorted(n.removeprefix(f"{SAMPLES}/") for n in names if n.startswith(SAMPLES))
    assert packaged == sorted(p.name for p in (REPO / "config" / "samples").iterdir())

    python = fresh_venv(tmp_path_factory.mktemp("venv"))
    # No index: the wheel's requirements, the extra's included, are met by what is lent.
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-index", "--disable-pip-version-check", f"{wheel}[sim]"],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return python.parent


def clean_env() -> dict[str, str]:
    """This environment minus anything that would point at the checkout."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def test_the_installed_sandbox_finds_its_samples_in_the_package(
    installed: Path, tmp_path: Path
) -> None:
    where = subprocess.run(
        [installed / "python", "-c",
         "import baseten_operator.sandbox.command as c; print(c.DEFAULT_SAMPLES)"],
        check=True, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=clean_env(),
    ).stdout.strip()  # fmt: skip
    samples = Path(where)
    assert samples.is_relative_to(installed.parent) and not samples.is_relative_to(REPO)
    assert (samples / "kustomization.yaml").is_file()

    usage = subprocess.run(
        [installed / "baseten-operator", "sandbox", "--help"],
        check=True, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=clean_env(),
    ).stdout  # fmt: skip
    assert "--scenario" in usage and "--samples" in usage


def test_the_installed_sandbox_brings_the_samples_up_and_stops_cleanly(
    installed: Path, run_sandbox: Any
) -> None:
    sandbox = run_sandbox(command=[str(installed / "baseten-operator")], env=clean_env())
    # The samples were applied and became Ready: the operator (its truss push included)
    # ran from the virtualenv on the emulator and the simulator from it too. The playbook
    # printed, the wheel's own: its bad model is the seeded one, by its id.
    play = sandbox.wait_for_line(f"{BAD_MODEL_PLAY}: ", timeout=90)
    assert re.match(rf"\d+\. {BAD_MODEL_PLAY}: ", play), play
    profile = sandbox.wait_for_line("/_sim/set_traffic_profile ", timeout=5)
    assert re.search(r'"deployment_id":"\w+","requests_per_second":20.0,"share_5xx":0.3', profile)
    sandbox.wait_for_line(READY_LINE, timeout=30)
    sandbox.process.send_signal(signal.SIGINT)
    assert sandbox.finish(timeout=30) == 0, sandbox.output
    assert "Leader election lease: released." in sandbox.output
