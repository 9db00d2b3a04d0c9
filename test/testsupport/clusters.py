"""The Kubernetes API server a test stack runs on: the real one (kube-apiserver and etcd,
built from source) or the project's emulator, behind one small interface.

`TEST_KUBE=emulator` moves the stacks that default to the real server (e2e, soak, Helm) onto the
emulator; the contract suite runs on both in every run. Either server is reached only through
its kubeconfig, except for what only one of them has: the emulator's fault injection, and the
record of every write (the emulator's `/_sim/writes`, the real server's audit log, in one shape).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import requests
import yaml

from baseten_operator.sim.realkube import ControlPlane, ensure_built
from testsupport.e2e.harness import Kubectl, Process, free_port, http_ok
from testsupport.polling import wait_for

Kind = Literal["real", "emulator"]
STARTUP_TIMEOUT = 30.0


def default_kind() -> Kind:
    return "emulator" if os.environ.get("TEST_KUBE") == "emulator" else "real"


def say(message: str) -> None:
    """Progress the user should see even under pytest's capture (a cold build is minutes)."""
    print(message, file=sys.__stderr__, flush=True)


@dataclass
class Cluster:
    """A running API server: `plane` when it is the real one, `emulator` (its process and URL)
    when it is the emulator."""

    kubeconfig: Path
    plane: ControlPlane | None = None
    emulator: Process | None = None
    emulator_url: str | None = None

    @property
    def kubectl(self) -> Kubectl:
        return Kubectl(str(self.kubeconfig))

    def writes(self) -> list[dict[str, Any]]:
        """Every write the server received: time, verb, resource, namespace, name,
        subresource, user_agent."""
        if self.plane is not None:
            return self.plane.writes()
        response = requests.get(f"{self.emulator_url}/_sim/writes", timeout=30)
        response.raise_for_status()
        return list(response.json())

    def forbidden(self, username: str) -> list[str]:
        """Requests of `username` refused by RBAC (a real server started with audit; the
        emulator enforces no RBAC, so none there)."""
        return self.plane.forbidden(username) if self.plane is not None else []

    def faults(self, **request: Any) -> Any:
        """The emulator's fault injection (`POST /_sim/faults`); a real server has none."""
        if self.emulator_url is None:
            raise RuntimeError("fault injection needs the emulator")
        response = requests.post(f"{self.emulator_url}/_sim/faults", json=request, timeout=10)
        response.raise_for_status()
        return response.json()

    def service_account_kubeconfig(
        self, path: Path, namespace: str, name: str, *, server: str | None = None
    ) -> Path:
        """A kubeconfig that authenticates as ServiceAccount `namespace/name` with a token
        from TokenRequest, as the Deployment's pods do: only that account's RBAC applies."""
        token = self.kubectl.run(
            "create", "token", name, "-n", namespace, "--duration=24h"
        ).stdout.strip()
        user = f"system:serviceaccount:{namespace}:{name}"
        return self.write_kubeconfig(
            path, user={"name": user, "user": {"token": token}}, server=server
        )

    def write_kubeconfig(
        self, path: Path, *, user: dict[str, Any] | None = None, server: str | None = None
    ) -> Path:
        """The admin kubeconfig with another `user` entry or `server` address."""
        config = yaml.safe_load(self.kubeconfig.read_text())
        if user is not None:
            config["users"] = [user]
            for context in config["contexts"]:
                context["context"]["user"] = user["name"]
        if server is not None:
            for cluster in config["clusters"]:
                cluster["cluster"]["server"] = server
        path.write_text(yaml.safe_dump(config))
        return path

    def stop(self) -> None:
        if self.plane is not None:
            self.plane.stop()
        if self.emulator is not None:
            self.emulator.terminate(10)


def start_kube(workdir: Path, kind: Kind | None = None, *, audit: bool = False) -> Cluster:
    """A fresh API server of `kind` (default: `default_kind()`), ready, its admin kubeconfig
    in `workdir`. `audit`: the real server keeps an audit log for `writes()` and
    `forbidden()` (the emulator always records writes)."""
    kind = kind or default_kind()
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = workdir / "kubeconfig"
    if kind == "real":
        plane = ControlPlane(ensure_built(say), workdir / "control-plane", audit=audit)
        plane.start()
        plane.write_kubeconfig(kubeconfig)
        return Cluster(kubeconfig, plane=plane)
    port = free_port()
    emulator = Process.start(
        "kube emulator",
        [sys.executable, "-m", "baseten_operator.sim.kube", "--port", str(port),
         "--kubeconfig", str(kubeconfig)],
        workdir / "kube.log",
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(
            lambda: (http_ok(f"{url}/api") and kubeconfig.exists()) or not emulator.alive(),
            timeout=STARTUP_TIMEOUT,
            describe=emulator.log_tail,
        )
        assert emulator.alive(), f"the emulator exited at start\n{emulator.log_tail()}"
    except BaseException:
        emulator.terminate(10)
        raise
    return Cluster(kubeconfig, emulator=emulator, emulator_url=url)
