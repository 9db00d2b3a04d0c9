"""The chart installed with the real Helm SDK into a real kube-apiserver (the emulator with
TEST_KUBE=emulator), checked with kubectl.

Helm keeps its release history in Secrets (its default storage driver), written as protobuf,
which the emulator reads too. One API server serves the module; each test uninstalls what it
installed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from testsupport.clusters import Cluster as KubeServer
from testsupport.clusters import start_kube
from testsupport.e2e.harness import Kubectl, Process, free_port, http_ok
from testsupport.paths import REPO
from testsupport.pods import container_env
from testsupport.polling import wait_for

CHART = REPO / "deploy" / "charts" / "baseten-operator"
NAMESPACE = "baseten-operator-system"
CRD = "basetenmodels.models.baseten.com"
LEASE = "020848ba.baseten.com"
pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Cluster:
    kube: KubeServer
    kubeconfig: str
    kubectl: Kubectl
    helm: helm.Config
    chart: helm.Chart

    def names(self, kind: str, namespace: str | None = None) -> set[str]:
        scope = ["-n", namespace] if namespace else []
        return {o["metadata"]["name"] for o in self.kubectl.json("get", kind, *scope)["items"]}

    def release_secrets(self, release: str) -> dict[str, str]:
        """Helm's release Secrets: name -> status label."""
        listing = self.kubectl.json(
            "get", "secrets", "-n", NAMESPACE, "-l", f"owner=helm,name={release}"
        )
        return {o["metadata"]["name"]: o["metadata"]["labels"]["status"] for o in listing["items"]}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    kube = start_kube(tmp_path_factory.mktemp("helm"))
    kubeconfig = str(kube.kubeconfig)
    config = helm.Config(kubeconfig_path=kubeconfig, namespace=NAMESPACE, storage_driver="secret")
    chart = helm.Chart.load(CHART)
    try:
        yield Cluster(kube, kubeconfig, Kubectl(kubeconfig), config, chart)
    finally:
        chart.close()
        config.close()
        kube.stop()


def deployment(cluster: Cluster, release: str) -> dict[str, Any]:
    result: dict[str, Any] = cluster.kubectl.json(
        "get", "deployment", f"{release}-controller-manager", "-n", NAMESPACE
    )
    return result


def test_install_upgrade_rollback_uninstall(cluster: Cluster) -> None:
    release = "baseten-operator"
    installed = cluster.helm.install(cluster.chart, release, {}, create_namespace=True)
    try:
        assert (installed["status"], installed["revision"]) == ("deployed", 1)
        assert "create secret generic baseten-operator-api-key" in installed["notes"]
        assert cluster.release_secrets(release) == {f"sh.helm.release.v1.{release}.v1": "deployed"}
        crd = cluster.kubectl.json("get", "crd", CRD)
        assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == release
        manager = deployment(cluster, release)
        assert manager["spec"]["replicas"] == 2
        assert manager["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
        assert cluster.names("serviceaccounts", NAMESPACE) >= {f"{release}-controller-manager"}
        assert cluster.names("poddisruptionbudgets", NAMESPACE) == {f"{release}-controller-manager"}
        assert cluster.names("services", NAMESPACE) == {
            f"{release}-controller-manager-metrics-service"
        }
        assert {f"{release}-manager-role", f"{release}-metrics-auth-role"} <= cluster.names(
            "clusterroles"
        )

        upgraded = cluster.helm.upgrade(
            cluster.chart,
            release,
            {"replicaCount": 3, "podDisruptionBudget": {"enabled": False},
             "networkPolicy": {"enabled": True}, "extraArgs": ["--max-concurrent-pushes=2"]},
        )  # fmt: skip
        assert (upgraded["status"], upgraded["revision"]) == ("deployed", 2)
        manager = deployment(cluster, release)
        assert manager["spec"]["replicas"] == 3
        args = manager["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[-1] == "--max-concurrent-pushes=2"
        assert cluster.names("poddisruptionbudgets", NAMESPACE) == set()
        policy = cluster.kubectl.json(
            "get", "networkpolicy", f"{release}-allow-metrics-traffic", "-n", NAMESPACE
        )
        assert policy["spec"]["ingress"][0]["ports"] == [{"port": 8443, "protocol": "TCP"}]
        assert cluster.helm.get_values(release) == {
            "replicaCount": 3,
            "podDisruptionBudget": {"enabled": False},
            "networkPolicy": {"enabled": True},
            "extraArgs": ["--max-concurrent-pushes=2"],
        }

        cluster.helm.rollback(release, version=1)
        assert [(r["revision"], r["status"]) for r in cluster.helm.history(release)] == [
            (1, "superseded"),
            (2, "superseded"),
            (3, "deployed"),
        ]
        assert deployment(cluster, release)["spec"]["replicas"] == 2
        assert cluster.names("poddisruptionbudgets", NAMESPACE) == {f"{release}-controller-manager"}
        assert cluster.names("networkpolicies", NAMESPACE) == set()
        assert cluster.release_secrets(release)[f"sh.helm.release.v1.{release}.v3"] == "deployed"
    finally:
        cluster.helm.uninstall(release, ignore_not_found=True)

    assert cluster.release_secrets(release) == {}
    assert cluster.kubectl.run("get", "crd", CRD, check=False).returncode != 0
    for kind in ("deployments", "services", "serviceaccounts", "poddisruptionbudgets", "roles"):
        assert cluster.names(kind, NAMESPACE) == set(), kind
    assert not {n for n in cluster.names("clusterroles") if n.startswith(f"{release}-")}


def test_the_operator_starts_with_the_installed_deployments_arguments(
    cluster: Cluster, tmp_path: Path
) -> None:
    """No kubelet runs the Deployment: its container's arguments and environment, as installed,
    start the operator as a local process, authenticated as the pod's ServiceAccount (a token
    in a kubeconfig stands in for the in-cluster one), so the chart's RBAC is what it has."""
    release = "ops"
    health, metrics = free_port(), free_port()
    values = {
        "healthProbe": {"port": health},
        "metrics": {"port": metrics},
        # Loopback and closed: without BasetenModels the operator never calls Baseten.
        "api": {"baseUrl": "http://127.0.0.1:9"},
    }
    cluster.helm.install(cluster.chart, release, values, create_namespace=True)
    process = None
    try:
        # Step 1 of the chart's NOTES: the API key Secret (kubectl sends it as protobuf).
        cluster.kubectl.run(
            "-n", NAMESPACE, "create", "secret", "generic", "baseten-operator-api-key",
            "--from-literal=api-key=helm-test-key",
        )  # fmt: skip
        pod = deployment(cluster, release)["spec"]["template"]["spec"]
        container = pod["containers"][0]
        kubeconfig = cluster.kube.service_account_kubeconfig(
            tmp_path / "kubeconfig", NAMESPACE, pod["serviceAccountName"]
        )
        assert container["args"] == [
            "--leader-elect",
            f"--metrics-bind-address=:{metrics}",
            f"--health-probe-bind-address=:{health}",
        ]
        process = Process.start(
            "operator",
            [sys.executable, "-m", "baseten_operator.cli", "run", *container["args"],
             "--kubeconfig", str(kubeconfig)],
            tmp_path / "operator.log",
            env={**container_env(cluster.kubectl, NAMESPACE, pod), "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        wait_for(
            lambda: http_ok(f"http://127.0.0.1:{health}/readyz") or not process.alive(),
            timeout=30,
            describe=process.log_tail,
        )
        assert process.alive(), process.log_tail()
        lease = wait_for(
            lambda: cluster.kubectl.get_or_none("lease", LEASE, NAMESPACE),
            timeout=30,
            describe=process.log_tail,
        )
        assert lease["spec"]["holderIdentity"]
    finally:
        if process is not None:
            assert process.terminate(30) == 0, process.log_tail()
        cluster.kubectl.run("-n", NAMESPACE, "delete", "secret", "baseten-operator-api-key")
        cluster.helm.uninstall(release)


def test_a_namespace_opts_in_to_secret_reading_with_the_sample_role_binding(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The chart ships the ClusterRole and binds it nowhere; the sample RoleBinding, applied
    in one namespace, lets the operator's ServiceAccount read Secrets there and only there."""
    release = "baseten-operator"
    installed = cluster.helm.install(cluster.chart, release, {}, create_namespace=True)
    try:
        assert "--clusterrole=baseten-operator-secret-reader" in installed["notes"]
        assert "baseten-operator-secret-reader" in cluster.names("clusterroles")
        for namespace in ("opted-in", "not-opted-in"):
            cluster.kubectl.apply(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        sample = REPO / "config" / "samples" / "secret_reader_rolebinding.yaml"
        cluster.kubectl.run("apply", "-n", "opted-in", "-f", str(sample))
        if cluster.kube.plane is not None:  # the emulator enforces no RBAC
            kubeconfig = cluster.kube.service_account_kubeconfig(
                tmp_path / "kubeconfig", NAMESPACE, f"{release}-controller-manager"
            )
            operator = Kubectl(str(kubeconfig))
            assert operator.run("get", "secrets", "-n", "opted-in").returncode == 0
            refused = operator.run("get", "secrets", "-n", "not-opted-in", check=False)
            assert refused.returncode != 0 and "Forbidden" in refused.stderr
    finally:
        for namespace in ("opted-in", "not-opted-in"):
            cluster.kubectl.run("delete", "namespace", namespace, "--wait=false", check=False)
        cluster.helm.uninstall(release, ignore_not_found=True)
    assert "baseten-operator-secret-reader" not in cluster.names("clusterroles")
