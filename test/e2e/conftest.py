"""The e2e stack, once per session.

Locally: the Kubernetes API emulator and the Baseten simulator each run as their own process,
the operator is installed from the rendered manifests (`kubectl apply -f deploy/install.yaml`),
and, since the emulator has no kubelet to run the manager Deployment's pods, the operator runs
as a local process with the same flags (leader election in its namespace included); the
processes are started by testsupport/e2e/local.py.

On a real cluster (`E2E_EXTERNAL_OPERATOR=1`, set by hack/kind-e2e.sh with KUBECONFIG and
E2E_BASETEN_URL): nothing is started; the installed operator and the given simulator are used.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from testsupport.e2e.harness import (
    API_KEY,
    LEASE_NAME,
    OPERATOR_NAMESPACE,
    Kubectl,
    Process,
    Simulator,
    Stack,
)
from testsupport.e2e.local import (
    SHUTDOWN_TIMEOUT,
    KeyStack,
    LocalCluster,
    running_cluster,
    start_operator,
)


def external() -> bool:
    return os.environ.get("E2E_EXTERNAL_OPERATOR") == "1"


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if external():
        yield Stack(
            kubectl=Kubectl(os.environ["KUBECONFIG"]),
            sim=Simulator(os.environ["E2E_BASETEN_URL"].rstrip("/")),
            metrics_url=None,
        )
        return
    with running_cluster(tmp_path_factory.mktemp("e2e"), API_KEY) as (cluster, processes):
        yield from _local_stack(cluster, processes)


def _local_stack(cluster: LocalCluster, processes: list[Process]) -> Iterator[Stack]:
    started = start_operator(cluster, processes, cluster.workdir / "operator.log")
    operator, kubectl = started.process, cluster.kubectl

    # Metrics are served as installed: HTTPS behind TokenReview/SubjectAccessReview.
    yield Stack(
        kubectl,
        Simulator(cluster.sim_url),
        f"https://127.0.0.1:{started.metrics_port}/metrics",
        operator_pid=operator.popen.pid,
        health_url=f"http://127.0.0.1:{started.health_port}/readyz",
    )

    processes.remove(operator)
    code = operator.terminate(SHUTDOWN_TIMEOUT)
    assert code == 0, f"operator exited {code} on SIGTERM\n{operator.log_tail()}"
    lease = kubectl.json("get", "lease", LEASE_NAME, "-n", OPERATOR_NAMESPACE)
    assert not lease["spec"].get("holderIdentity"), f"lease still held after exit: {lease['spec']}"


@pytest.fixture
def key_stack(tmp_path: Path) -> Iterator[KeyStack]:
    if external():
        pytest.skip("needs operators of its own, started with a key of their own")
    with running_cluster(tmp_path, f"sk-e2e-{uuid.uuid4().hex}") as (cluster, processes):
        yield KeyStack(cluster, tmp_path, processes, [])
