"""Which container engine builds the image, and how it is called.

Docker where its daemon answers (a docker CLI alone is not an engine); else podman, which
needs no daemon, with the settings of `containers.conf` beside this file: the runc runtime
(crun, podman's default, refuses some kernels' hybrid cgroup layout) and ulimits within the
hard limits of the machine (podman's defaults ask for more than many allow).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

CONTAINERS_CONF = Path(__file__).with_name("containers.conf")
INSTALL = (
    "install podman, runc, slirp4netns and mmdebstrap (on Debian or Ubuntu, "
    "hack/install-image-tools.sh does, as root), or start a Docker engine"
)
DOCKER_INFO_TIMEOUT = 20.0


class CannotBuild(RuntimeError):
    """This machine lacks something the build needs; the message says what to install."""


@dataclass(frozen=True)
class Engine:
    name: str  # "docker" or "podman"
    env: dict[str, str] = field(default_factory=dict)  # set besides the caller's environment

    def command(self, *args: str) -> list[str]:
        return [self.name, *args]

    def environ(self) -> dict[str, str]:
        return {**os.environ, **self.env}

    def run(
        self, *args: str, check: bool = True, timeout: float = 600.0
    ) -> subprocess.CompletedProcess[str]:
        """A short command, its output captured; `check`: a failure raises with its stderr."""
        done = subprocess.run(
            self.command(*args),
            capture_output=True,
            text=True,
            env=self.environ(),
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{self.name} {' '.join(args)}: {done.stderr.strip()}")
        return done


def podman() -> Engine:
    if shutil.which("podman") is None:
        raise CannotBuild(f"podman is not installed: {INSTALL}")
    if shutil.which("runc") is None:
        raise CannotBuild(f"podman here runs containers with runc, which is missing: {INSTALL}")
    return Engine("podman", {"CONTAINERS_CONF": str(CONTAINERS_CONF)})


def docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        info = subprocess.run(
            ["docker", "info"], capture_output=True, timeout=DOCKER_INFO_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        return False
    return info.returncode == 0


def find(choice: str | None = None) -> Engine:
    """The engine named (`docker` or `podman`), or the first of them that works here."""
    if choice not in (None, "docker", "podman"):
        raise CannotBuild(f"unknown engine {choice!r}: ENGINE=docker or ENGINE=podman")
    if choice != "podman" and docker_answers():
        return Engine("docker")
    if choice == "docker":
        raise CannotBuild("ENGINE=docker, but no Docker engine answers here (`docker info`)")
    if choice is None and shutil.which("podman") is None:
        raise CannotBuild(f"no container engine here: {INSTALL}")
    return podman()
