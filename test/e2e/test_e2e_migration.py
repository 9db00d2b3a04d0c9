"""Story: taking over from the Go operator (docs/migrating-from-go.md).

What a Go operator leaves behind is built first: models, deployments and environments in
Baseten; BasetenModels with its finalizer and statuses in its shape; its Lease, held. This
operator is started with the Go operator's flags, writes nothing while the Go Lease is held,
takes over once it is released, adopts every resource, and sends Baseten nothing: no push, no
promote, no settings write, since every resource already has what it asks for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from testsupport.e2e.harness import (
    LEASE_NAME,
    OPERATOR_NAMESPACE,
    Kubectl,
    Process,
    Simulator,
    basetenmodel,
    status_of,
    unique_name,
)
from testsupport.e2e.local import LocalCluster, running_cluster, start_operator
from testsupport.polling import wait_for

GO_IDENTITY = "baseten-operator-controller-manager-7d9f8c6b5-x2x7q_5f1c2a7e"
GO_FINALIZER = "models.baseten.com/finalizer"
# The user guide's complete trussConfig: the Go operator named its deployment with this hash
# (docs/truss.md, test vector 2), so an adopted resource must find it under the same name.
TRUSS_SCRIPT = '#!/bin/bash\necho "done"'
TRUSS_CONFIG: dict[str, Any] = {
    "pythonVersion": "py312",
    "resources": {"accelerator": "H100:1", "useGpu": True},
    "baseImage": {
        "image": "us-docker.pkg.dev/my-project/my-repo/vllm:0.16.0",
        "dockerAuth": {
            "authMethod": "GCP_SERVICE_ACCOUNT_JSON",
            "secretName": "docker-registry-secret",
            "registry": "us-docker.pkg.dev",
        },
    },
    "dockerServer": {
        "startCommand": "sh -c 'bash /app/data/setup.sh'",
        "readinessEndpoint": "/health",
        "livenessEndpoint": "/health",
        "predictEndpoint": "/v1/completions",
        "serverPort": 8000,
    },
    "runtime": {"predictConcurrency": 256},
    "modelMetadata": {"tags": ["openai-compatible"]},
    "secrets": {"docker-registry-secret": ""},
    "environmentVariables": {"DD_SITE": "us5.datadoghq.com"},
    "setupScript": {"inline": TRUSS_SCRIPT},
}
GO_PUSHED_NAME = "depl-vllm-0.16.0-461d8dcb"
AUTOSCALING = {"minReplicas": 1, "maxReplicas": 2}
WRITE_EVENTS = {
    "TrussPushStarted",
    "DeploymentPromoted",
    "AutoscalingUpdated",
    "PromotionSettingsUpdated",
    "EnvironmentCreated",
    "DeploymentRetried",
    "DeploymentReactivated",
}


def rfc3339(moment: datetime, micro: bool = False) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[LocalCluster, list[Process], Path]]:
    with running_cluster(tmp_path, "migration-key") as (cluster, processes):
        yield cluster, processes, tmp_path


def go_status(model_id: str, active: str, **extra: Any) -> dict[str, Any]:
    """A status as the Go operator writes it for a model serving `active`."""
    now = rfc3339(datetime.now(UTC))
    return {
        "modelID": model_id,
        "modelIDResolvedTime": now,
        "sourceDeploymentName": active,
        "activeDeploymentName": active,
        "activeReplicaCount": 1,
        "deploymentStatus": "ACTIVE",
        "message": f"Deployment {active} is active in production environment",
        "observedGeneration": 1,
        "conditions": [
            {
                "type": t,
                "status": s,
                "reason": "ACTIVE",
                "lastTransitionTime": now,
                "message": "deployment is active",
                "observedGeneration": 1,
            }
            for t, s in (("Ready", "True"), ("Progressing", "False"))
        ],  # fmt: skip
        **extra,
    }


def adopt_from_go(kubectl: Kubectl, namespace: str, name: str, spec: dict[str, Any],
                  status: dict[str, Any]) -> None:  # fmt: skip
    """The resource as the Go operator left it: its finalizer and its status."""
    obj = basetenmodel(name, namespace, spec)
    obj["metadata"]["finalizers"] = [GO_FINALIZER]
    kubectl.apply(obj)
    kubectl.run(
        "patch", "basetenmodel", name, "-n", namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def hold_go_lease(kubectl: Kubectl) -> None:
    now = datetime.now(UTC)
    kubectl.apply(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": LEASE_NAME, "namespace": OPERATOR_NAMESPACE},
            "spec": {
                "holderIdentity": GO_IDENTITY,
                "leaseDurationSeconds": 15,
                "acquireTime": rfc3339(now - timedelta(days=3), micro=True),
                "renewTime": rfc3339(now, micro=True),
                "leaseTransitions": 4,
            },
        }
    )


def log_records(path: Path) -> list[dict[str, Any]]:
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def test_the_operator_takes_over_from_the_go_operator_and_changes_nothing(cluster) -> None:
    local, processes, workdir = cluster
    kubectl, sim = local.kubectl, Simulator(local.sim_url, local.api_key)
    namespace = unique_name("migrated")
    kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})

    # Baseten as the Go operator left it: a promoted CI build, and a pushed truss config.
    source_model, source = sim.seed_model_with_deployment("mig-source", "img-1.0")
    sim.control("seed_environment", model_id=source_model, name="production",
                current_deployment_id=source,
                autoscaling_settings={"min_replica": 1, "max_replica": 2})  # fmt: skip
    truss_model, pushed = sim.seed_model_with_deployment("mig-truss", GO_PUSHED_NAME)
    sim.control("seed_environment", model_id=truss_model, name="production",
                current_deployment_id=pushed,
                autoscaling_settings={"min_replica": 1, "max_replica": 2})  # fmt: skip

    hold_go_lease(kubectl)
    adopt_from_go(
        kubectl, namespace, "source",
        {"modelName": "mig-source", "sourceDeploymentName": "img-1.0",
         "environment": {"name": "production", "autoscaling": AUTOSCALING}},
        go_status(source_model, "img-1.0", sourceDeploymentID=source),
    )  # fmt: skip
    adopt_from_go(
        kubectl, namespace, "truss",
        {"modelName": "mig-truss", "trussConfig": TRUSS_CONFIG,
         "environment": {"name": "production", "autoscaling": AUTOSCALING}},
        go_status(truss_model, GO_PUSHED_NAME, trussConfigHash="461d8dcb",
                  trussPushStatus="TRUSS_PUSH_DONE"),
    )  # fmt: skip
    # A push the Go operator saw fail twice, its next attempt an hour away: the backoff holds.
    next_retry = rfc3339(datetime.now(UTC) + timedelta(hours=1))
    adopt_from_go(
        kubectl, namespace, "backoff",
        {"modelName": "mig-backoff", "trussConfig": TRUSS_CONFIG,
         "environment": {"name": "production", "autoscaling": AUTOSCALING}},
        {"sourceDeploymentName": GO_PUSHED_NAME, "trussConfigHash": "461d8dcb",
         "trussPushStatus": "TRUSS_PUSH_FAILED", "trussPushFailureCount": 2,
         "trussPushLastError": "truss push failed: upload refused",
         "trussPushNextRetryTime": next_retry, "deploymentStatus": "FAILED",
         "message": "truss push failed", "observedGeneration": 1},
    )  # fmt: skip
    before = {
        name: kubectl.json("get", "basetenmodel", name, "-n", namespace)
        for name in ("source", "truss", "backoff")
    }

    # Started as the Go operator's Deployment runs it: its flags, zap's included.
    log = workdir / "operator.log"
    start_operator(
        local, processes, log, "--zap-log-level=debug", "--zap-encoder=json",
        "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
    )  # fmt: skip

    def records() -> list[dict[str, Any]]:
        return log_records(log)

    wait_for(
        lambda: any(
            r.get("msg") == "new leader observed" and r.get("leader") == GO_IDENTITY
            for r in records()
        ),
        timeout=30,
        describe=lambda: log.read_text()[-3000:],
    )
    # The Go operator leads: this one has written nothing, to Kubernetes or to Baseten.
    assert kubectl.lease_holder() == GO_IDENTITY
    for name, obj in before.items():
        now = kubectl.json("get", "basetenmodel", name, "-n", namespace)
        assert now["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"], name
    assert sim.audit_log() == []
    start = records()[0]
    assert list(start)[:4] == ["severity", "ts", "logger", "msg"]
    assert any(
        r.get("severity") == "WARN" and r.get("flags") == ["--webhook-cert-path"] for r in records()
    )

    # The Go operator stops and releases its Lease: this one takes over.
    kubectl.run(
        "patch", "lease", LEASE_NAME, "-n", OPERATOR_NAMESPACE, "--type=merge",
        "-p", json.dumps({"spec": {"holderIdentity": "", "leaseDurationSeconds": 1}}),
    )  # fmt: skip
    wait_for(lambda: kubectl.lease_holder() not in ("", GO_IDENTITY), timeout=30)

    def adopted(name: str, active: str) -> bool:
        status = status_of(kubectl.get_or_none("basetenmodel", name, namespace))
        return status.get("deploymentStatus") == "ACTIVE" and str(
            status.get("message", "")
        ).startswith(f"active: {active} (")

    def backing_off() -> bool:
        status = status_of(kubectl.get_or_none("basetenmodel", "backoff", namespace))
        return str(status.get("message", "")).startswith(
            f"truss push failed for {GO_PUSHED_NAME} (attempt 2): "
        )

    wait_for(
        lambda: adopted("source", "img-1.0") and adopted("truss", GO_PUSHED_NAME) and backing_off(),
        timeout=60,
        describe=lambda: log.read_text()[-3000:],
    )

    # Adopted as they were: the Go operator's bookkeeping kept, nothing sent to Baseten.
    source_status = status_of(kubectl.get_or_none("basetenmodel", "source", namespace))
    truss_status = status_of(kubectl.get_or_none("basetenmodel", "truss", namespace))
    assert source_status["modelID"] == source_model
    assert source_status["modelIDResolvedTime"] == before["source"]["status"]["modelIDResolvedTime"]
    assert (truss_status["trussConfigHash"], truss_status["trussPushStatus"]) == (
        "461d8dcb",
        "TRUSS_PUSH_DONE",
    )
    assert truss_status["sourceDeploymentName"] == GO_PUSHED_NAME
    backoff = status_of(kubectl.get_or_none("basetenmodel", "backoff", namespace))
    assert (backoff["trussPushStatus"], backoff["trussPushFailureCount"]) == (
        "TRUSS_PUSH_FAILED",
        2,
    )
    assert backoff["trussPushNextRetryTime"] == next_retry
    assert backoff["message"].endswith(f"; next retry at {next_retry}")
    assert sim.audit_log() == []
    events = [e for name in ("source", "truss", "backoff") for e in kubectl.events(namespace, name)]
    assert not {e["reason"] for e in events} & WRITE_EVENTS
