"""The image run as deploy/install.yaml's Deployment runs it, against a real kube-apiserver.

What a user does: `kubectl apply -f deploy/install.yaml`, the API key Secret, Baseten's URL
set on the Deployment (here the simulator's, as hack/kind-e2e.sh sets it). No kubelet runs
the pod, so the Deployment is read back from the API server and its pod run with podman
(`testsupport.pods`): its args, env, user, read-only root, capabilities and volumes as
installed, the ServiceAccount's token and CA at the in-cluster paths. The operator runs at
the Deployment's own time scale (real time): a promotion is polled every 30 s, so the samples
are applied once, as soon as it is ready, and each test waits for its own.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import yaml

from testsupport.e2e.harness import (
    API_KEY,
    METRICS_READER,
    OPERATOR_NAMESPACE,
    Simulator,
    http_ok,
    served_certificate,
    service_account_token,
)
from testsupport.e2e.local import LocalCluster, running_cluster
from testsupport.image import Podman
from testsupport.paths import REPO
from testsupport.pods import HOST_LOOPBACK, Pod, start_pod
from testsupport.polling import wait_for

SAMPLES = REPO / "config" / "samples"
DEPLOYMENT = "baseten-operator-controller-manager"
NAMESPACE = "image-samples"
READY_TIMEOUT = 60.0
# Apply to Ready at real time: the environment's settings settle (10 s), the promotion is
# polled (30 s).
RECONCILE_TIMEOUT = "100s"
HF_TOKEN = "hf_image_tier_token"


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((SAMPLES / name).read_text())
    return loaded


SOURCE = sample("models_v1alpha1_basetenmodel_source.yaml")
TRUSS = sample("models_v1alpha1_basetenmodel_truss.yaml")
BASETEN_SECRET = sample("models_v1alpha1_basetensecret.yaml")


@dataclass(frozen=True)
class Deployed:
    cluster: LocalCluster
    pod: Pod
    sim: Simulator


@pytest.fixture(scope="module")
def deployed(
    image: dict[str, Any], podman: Podman, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployed]:
    workdir = tmp_path_factory.mktemp("deployed")
    with running_cluster(workdir, API_KEY, kind="real", advertise_host=HOST_LOOPBACK) as (
        cluster,
        _,
    ):
        kubectl = cluster.kubectl
        sim_port = urlsplit(cluster.sim_url).port
        kubectl.run(
            "-n", OPERATOR_NAMESPACE, "set", "env", f"deployment/{DEPLOYMENT}",
            f"BASETEN_API_BASE_URL=http://{HOST_LOOPBACK}:{sim_port}/v1",
        )  # fmt: skip
        deployment = kubectl.json("get", "deployment", DEPLOYMENT, "-n", OPERATOR_NAMESPACE)
        pod = start_pod(
            podman, cluster.kube, OPERATOR_NAMESPACE, deployment["spec"]["template"]["spec"],
            image=image["id"], workdir=workdir / "pod", name=DEPLOYMENT,
        )  # fmt: skip
        try:
            ready = pod.probe_url("readinessProbe")
            wait_for(
                lambda: http_ok(ready) or not pod.alive(), timeout=READY_TIMEOUT, describe=pod.logs
            )
            assert pod.alive(), pod.logs()
            sim = Simulator(cluster.sim_url)
            apply_samples(cluster, sim)
            yield Deployed(cluster, pod, sim)
        finally:
            pod.remove()


def apply_samples(cluster: LocalCluster, sim: Simulator) -> None:
    """What the shipped samples need, then the samples, as a user applies them: the model and
    CI's build the source sample promotes (in Baseten), the truss sample's setup ConfigMap,
    the Secret the BasetenSecret sample names and the namespace's opt-in to reading it."""
    kubectl = cluster.kubectl
    spec = SOURCE["spec"]
    sim.seed_model_with_deployment(spec["modelName"], spec["sourceDeploymentName"])
    kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    ref = BASETEN_SECRET["spec"]["secretRef"]
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": ref["name"], "namespace": NAMESPACE},
            "data": {ref["key"]: base64.b64encode(HF_TOKEN.encode()).decode()},
        }
    )
    for name in (
        "secret_reader_rolebinding.yaml",
        "setup_configmap.yaml",
        "models_v1alpha1_basetenmodel_source.yaml",
        "models_v1alpha1_basetenmodel_truss.yaml",
        "models_v1alpha1_basetensecret.yaml",
    ):
        kubectl.run("apply", "-n", NAMESPACE, "-f", str(SAMPLES / name))


def wait_ready(deployed: Deployed, kind: str, name: str, condition: str) -> dict[str, Any]:
    done = deployed.cluster.kubectl.run(
        "wait", "-n", NAMESPACE, f"--for={condition}", f"{kind}/{name}",
        f"--timeout={RECONCILE_TIMEOUT}", check=False, timeout=120,
    )  # fmt: skip
    found = deployed.cluster.kubectl.json("get", kind, name, "-n", NAMESPACE)
    assert done.returncode == 0, f"{kind}/{name}: {found.get('status')}\n{deployed.pod.logs()}"
    return dict(found)


def test_it_is_ready_and_leads_with_the_in_cluster_credentials(deployed: Deployed) -> None:
    """The only credentials in the container are the projected token and CA: holding the
    Lease (in its name: the pod's hostname) proves the operator in the image used them."""
    kubectl, pod = deployed.cluster.kubectl, deployed.pod
    wait_for(
        lambda: kubectl.lease_holder().startswith(f"{pod.name}_"),
        timeout=30,
        describe=lambda: f"the Lease held by {kubectl.lease_holder()!r}\n{pod.logs()}",
    )


def test_metrics_are_served_over_https_to_a_metrics_reader_only(
    deployed: Deployed, tmp_path: Path
) -> None:
    kubectl = deployed.cluster.kubectl
    url = deployed.pod.url("https", "/metrics", scheme="https")
    ca = served_certificate(url, tmp_path / "ca.crt")
    stranger = service_account_token(kubectl, NAMESPACE, "stranger")
    reader = service_account_token(kubectl, NAMESPACE, "reader", cluster_role=METRICS_READER)

    def scrape(token: str | None) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return requests.get(url, headers=headers, verify=ca, timeout=10)

    assert scrape(None).status_code == 401
    assert scrape(stranger).status_code == 403
    scraped = scrape(reader)
    assert scraped.status_code == 200
    assert "controller_runtime_reconcile_total" in scraped.text


def test_the_source_sample_is_promoted(deployed: Deployed) -> None:
    spec = SOURCE["spec"]
    ready = wait_ready(deployed, "basetenmodel", SOURCE["metadata"]["name"], "condition=Ready")
    model_id = ready["status"]["modelID"]
    environment = deployed.sim.environment(model_id, spec["environment"]["name"])
    assert environment["current_deployment"]["name"] == spec["sourceDeploymentName"]


def test_the_truss_sample_is_pushed_from_inside_the_image(deployed: Deployed) -> None:
    ready = wait_ready(deployed, "basetenmodel", TRUSS["metadata"]["name"], "condition=Ready")
    pushes = [
        entry
        for entry in deployed.sim.audit_log()
        if entry["endpoint"].startswith("graphql:create_model")
    ]
    assert len(pushes) == 1, pushes
    environment = deployed.sim.environment(
        ready["status"]["modelID"], TRUSS["spec"]["environment"]["name"]
    )
    assert environment["current_deployment"]["name"] == ready["status"]["activeDeploymentName"]


def test_the_baseten_secret_sample_is_synced(deployed: Deployed) -> None:
    name = BASETEN_SECRET["metadata"]["name"]
    wait_ready(deployed, "basetensecret", name, "jsonpath={.status.state}=SYNCED")
    answer = requests.get(f"{deployed.sim.url}/_sim/secrets", timeout=10)
    answer.raise_for_status()
    (held,) = [s for s in answer.json() if s["name"] == BASETEN_SECRET["spec"]["name"]]
    assert held["value_sha256"] == hashlib.sha256(HF_TOKEN.encode()).hexdigest()
    assert held["writes"] == 1


def test_sigterm_stops_it_within_the_grace_period_and_releases_the_lease(
    deployed: Deployed,
) -> None:
    """As the kubelet ends a pod: SIGTERM, SIGKILL once terminationGracePeriodSeconds are
    over. Exit code 0, not 137: it drained and left within the grace period."""
    assert deployed.pod.stop() == 0, deployed.pod.logs()
    assert deployed.cluster.kubectl.lease_holder() == ""
