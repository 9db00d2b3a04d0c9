"""The e2e stack as local processes: a Kubernetes API server (the real one, or the emulator with
TEST_KUBE=emulator) with the operator installed from the rendered manifests
(`kubectl apply -f deploy/install.yaml`), the Baseten simulator, and operators started with the
manager Deployment's flags (leader election in its namespace included) and its ServiceAccount's
token, since neither server has a kubelet to run the Deployment's pods."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testsupport.clusters import Cluster, Kind, start_kube
from testsupport.e2e.harness import (
    API_KEY_SECRET,
    INSTALL_MANIFEST,
    LEADER_ELECTION_FLAGS,
    OPERATOR_NAMESPACE,
    OPERATOR_SERVICE_ACCOUNT,
    OPERATOR_USER,
    TIME_SCALE,
    VENV_BIN,
    Kubectl,
    Process,
    Simulator,
    Stack,
    free_port,
    http_ok,
)
from testsupport.polling import wait_for

STARTUP_TIMEOUT = 30.0
SHUTDOWN_TIMEOUT = 30.0


def _started(processes: list[Process], process: Process, ready: str) -> None:
    """Wait until `ready` answers 200, failing early (with its log) if the process dies."""
    processes.append(process)
    wait_for(
        lambda: http_ok(ready) or not process.alive(),
        timeout=STARTUP_TIMEOUT,
        describe=process.log_tail,
    )
    assert process.alive(), f"{process.name} exited with {process.popen.returncode}\n" + (
        process.log_tail()
    )


@dataclass(frozen=True)
class LocalCluster:
    """The API server (with the operator installed) and the simulator."""

    workdir: Path  # where the logs go
    kube: Cluster
    kubeconfig: Path  # the administrator's, for kubectl
    kubectl: Kubectl
    operator_kubeconfig: Path  # the manager ServiceAccount's token
    sim_url: str
    api_key: str


# Namespaces the tests leave without the secret-reader RoleBinding on purpose: the operator's
# refused reads of their Secrets are what they test (docs/contract.md 13.4), not a gap in
# config/rbac.
UNBOUND_NAMESPACE_PREFIX = "e2e-unbound-"


def unexpected(refused: list[str]) -> list[str]:
    """Refused requests, less the Secret reads in deliberately unbound namespaces."""
    unbound = f"/api/v1/namespaces/{UNBOUND_NAMESPACE_PREFIX}"
    return [
        line
        for line in refused
        if not (line.split(" ", 1)[-1].startswith(unbound) and "/secrets" in line)
    ]


@contextlib.contextmanager
def running_cluster(
    workdir: Path, api_key: str, *, kind: Kind | None = None, advertise_host: str | None = None
) -> Iterator[tuple[LocalCluster, list[Process]]]:
    """A `LocalCluster` and the processes started on it (the caller may add operators); all
    stopped, and the API server's data removed, when the block ends. Then, on a real server,
    no request of the operators may have been refused by RBAC: they run with exactly
    config/rbac's permissions, and a missing one fails the block even where the operator
    only logs it (an informer retrying a refused watch). `kind`: the API server's (default:
    `clusters.default_kind()`); `advertise_host`: the simulator's (see its --advertise-host)."""
    processes: list[Process] = []
    kube = start_kube(workdir / "kube", kind, audit=True)
    try:
        yield start_cluster(kube, workdir, processes, api_key, advertise_host), processes
    finally:
        for process in reversed(processes):
            process.terminate(SHUTDOWN_TIMEOUT)
        refused = unexpected(kube.forbidden(OPERATOR_USER))
        kube.stop()
    assert not refused, "the operator's ServiceAccount was refused:\n" + "\n".join(refused)


def start_cluster(
    kube: Cluster,
    workdir: Path,
    processes: list[Process],
    api_key: str,
    advertise_host: str | None = None,
) -> LocalCluster:
    """The operator installed on `kube` and the simulator started (added to `processes`)."""
    python = str(VENV_BIN / "python")
    advertised = ["--advertise-host", advertise_host] if advertise_host else []

    sim_port = free_port()
    simulator = Process.start(
        "baseten simulator",
        [
            python,
            "-m",
            "baseten_operator.sim.baseten",
            "--host",
            "127.0.0.1",
            "--port",
            str(sim_port),
            "--api-key",
            api_key,
            "--time-scale",
            str(TIME_SCALE),
            *advertised,
        ],
        workdir / "baseten.log",
    )
    sim_url = f"http://127.0.0.1:{sim_port}"
    _started(processes, simulator, f"{sim_url}/_sim/health")

    install(kube.kubectl, api_key)
    # The operator authenticates as its own ServiceAccount: exactly config/rbac's permissions.
    operator_kubeconfig = kube.service_account_kubeconfig(
        workdir / "operator.kubeconfig", OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT
    )
    return LocalCluster(
        workdir, kube, kube.kubeconfig, kube.kubectl, operator_kubeconfig, sim_url, api_key
    )


@dataclass(frozen=True)
class LocalOperator:
    process: Process
    metrics_port: int
    health_port: int


def start_operator(
    cluster: LocalCluster,
    processes: list[Process],
    log_path: Path,
    *extra_flags: str,
    name: str = "operator",
) -> LocalOperator:
    """The operator with the Deployment's flags (leader election in its namespace), ready."""
    metrics_port, health_port = free_port(), free_port()
    operator = Process.start(
        name,
        [
            str(VENV_BIN / "baseten-operator"),
            "run",
            "--kubeconfig",
            str(cluster.operator_kubeconfig),
            "--leader-elect",
            *LEADER_ELECTION_FLAGS,
            "--leader-election-namespace",
            OPERATOR_NAMESPACE,
            "--metrics-bind-address",
            f"127.0.0.1:{metrics_port}",
            "--health-probe-bind-address",
            f"127.0.0.1:{health_port}",
            "--time-scale",
            str(TIME_SCALE),
            *extra_flags,
        ],
        log_path,
        # POD_NAMESPACE as the Deployment sets it: where namespaces' API key Secrets live.
        env={
            "BASETEN_API_KEY": cluster.api_key,
            "BASETEN_API_BASE_URL": f"{cluster.sim_url}/v1",
            "POD_NAMESPACE": OPERATOR_NAMESPACE,
        },
    )
    _started(processes, operator, f"http://127.0.0.1:{health_port}/readyz")
    return LocalOperator(operator, metrics_port, health_port)


def install(kubectl: Kubectl, api_key: str) -> None:
    """What a user does: apply the rendered manifests, then the API key Secret."""
    kubectl.run("apply", "-f", str(INSTALL_MANIFEST))
    kubectl.run(
        "wait",
        "--for=condition=Established",
        "crd/basetenmodels.models.baseten.com",
        "crd/basetensecrets.models.baseten.com",
        "--timeout=30s",
    )
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": API_KEY_SECRET, "namespace": OPERATOR_NAMESPACE},
            "type": "Opaque",
            "stringData": {"api-key": api_key},
        }
    )


@dataclass
class KeyStack:
    """A stack of its own with a key that appears nowhere else, operators at debug level."""

    cluster: LocalCluster
    workdir: Path
    processes: list[Process]
    operators: list[LocalOperator]

    @property
    def stack(self) -> Stack:
        # The simulator's REST API answers only this stack's own key.
        sim = Simulator(self.cluster.sim_url, self.cluster.api_key)
        return Stack(self.cluster.kubectl, sim, metrics_url=None)

    def start_operator(self, name: str, *extra_flags: str) -> LocalOperator:
        started = start_operator(
            self.cluster,
            self.processes,
            self.workdir / f"{name}.log",
            "--log-level",
            "debug",
            *extra_flags,
            name=name,
        )
        self.operators.append(started)
        return started
