"""The install is secure by default: metrics over HTTPS behind delegated auth, scraped by
a ServiceMonitor with a bearer token; a PDB and topology spread; opt-in cert-manager,
NetworkPolicy and priority-class components that render into config/default."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from baseten_operator.runtime.delegatedauth import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS
from testsupport.paths import REPO

INSTALL = REPO / "deploy" / "install.yaml"
KUBECTL = "/usr/bin/kubectl"
NAMESPACE = "baseten-operator-system"
SERVICE_ACCOUNT = "baseten-operator-controller-manager"
DEPLOYMENT = "baseten-operator-controller-manager"
COMPONENTS = ("certmanager", "network-policy", "priority-class")

Objects = list[dict[str, Any]]


def kustomize(directory: Path) -> Objects:
    done = subprocess.run(
        [KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def one(objects: Objects, kind: str, name: str | None = None) -> dict[str, Any]:
    matches = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} found"
    return matches[0]


@pytest.fixture(scope="module")
def installed() -> Objects:
    return [doc for doc in yaml.safe_load_all(INSTALL.read_text()) if doc]


@pytest.fixture(scope="module")
def with_components(tmp_path_factory: pytest.TempPathFactory) -> Objects:
    """config/default with every opt-in component enabled, as its comment says to."""
    config = tmp_path_factory.mktemp("config") / "config"
    shutil.copytree(REPO / "config", config)
    kustomization = config / "default" / "kustomization.yaml"
    document = yaml.safe_load(kustomization.read_text())
    assert "components" not in document, "components are opt-in: none enabled by default"
    document["components"] = [f"../{name}" for name in COMPONENTS]
    kustomization.write_text(yaml.safe_dump(document))
    return kustomize(config / "default")


def pod_spec(objects: Objects) -> dict[str, Any]:
    spec: dict[str, Any] = one(objects, "Deployment", DEPLOYMENT)["spec"]["template"]["spec"]
    return spec


def manager(objects: Objects) -> dict[str, Any]:
    (container,) = [c for c in pod_spec(objects)["containers"] if c["name"] == "manager"]
    return container


def pod_labels(objects: Objects) -> dict[str, str]:
    labels: dict[str, str] = one(objects, "Deployment", DEPLOYMENT)["spec"]["template"]["metadata"][
        "labels"
    ]
    return labels


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


def test_metrics_are_served_over_https_on_8443(installed: Objects) -> None:
    container = manager(installed)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["https"] == 8443 and "metrics" not in ports
    assert "--metrics-bind-address=:8443" in container["args"]
    assert not any(a.startswith("--metrics-secure") for a in container["args"])  # the default
    service = one(installed, "Service", "baseten-operator-controller-manager-metrics-service")
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 8443, "targetPort": "https", "protocol": "TCP"}
    ]
    assert selects({"matchLabels": service["spec"]["selector"]}, pod_labels(installed))


def test_the_manager_may_create_the_reviews_its_metrics_server_sends(installed: Objects) -> None:
    role = one(installed, "ClusterRole", "baseten-operator-metrics-auth-role")
    granted = {
        (group, resource): set(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert granted == {
        (TOKEN_REVIEWS.group, TOKEN_REVIEWS.plural): {"create"},
        (SUBJECT_ACCESS_REVIEWS.group, SUBJECT_ACCESS_REVIEWS.plural): {"create"},
    }
    binding = one(installed, "ClusterRoleBinding", "baseten-operator-metrics-auth-rolebinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
    ]
    reader = one(installed, "ClusterRole", "baseten-operator-metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_one_replica_survives_voluntary_disruptions_and_replicas_spread(
    installed: Objects,
) -> None:
    budget = one(installed, "PodDisruptionBudget")
    assert budget["metadata"]["namespace"] == NAMESPACE
    assert budget["spec"]["minAvailable"] == 1
    assert selects(budget["spec"]["selector"], pod_labels(installed))
    (spread,) = pod_spec(installed)["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname"
    assert selects(spread["labelSelector"], pod_labels(installed))
    assert "priorityClassName" not in pod_spec(installed)  # opt-in


def test_the_service_monitor_scrapes_https_with_the_service_account_token() -> None:
    monitor = one(kustomize(REPO / "config" / "prometheus"), "ServiceMonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https" and endpoint["port"] == "https"
    assert endpoint["path"] == "/metrics"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"


def test_no_component_is_in_the_default_install(installed: Objects) -> None:
    kinds = {o["kind"] for o in installed}
    assert not kinds & {"Issuer", "Certificate", "NetworkPolicy"}


def test_the_cert_manager_component_mounts_its_secret_where_the_flag_points(
    with_components: Objects,
) -> None:
    certificate = one(with_components, "Certificate")
    issuer = one(with_components, "Issuer")
    assert certificate["spec"]["issuerRef"] == {
        "kind": "Issuer",
        "name": issuer["metadata"]["name"],
    }
    assert certificate["metadata"]["namespace"] == issuer["metadata"]["namespace"] == NAMESPACE
    service = one(with_components, "Service", "baseten-operator-controller-manager-metrics-service")
    assert f"{service['metadata']['name']}.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]

    container = manager(with_components)
    (cert_path,) = [
        a.split("=", 1)[1] for a in container["args"] if a.startswith("--metrics-cert-path=")
    ]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == cert_path]
    assert mount["readOnly"] is True
    volume = next(v for v in pod_spec(with_components)["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] == certificate["spec"]["secretName"]
    paths = {item["path"] for item in volume["secret"]["items"]}
    assert {"tls.crt", "tls.key"} <= paths  # the --metrics-cert-name/-key defaults


def test_the_network_policy_component_admits_only_labelled_namespaces(
    with_components: Objects,
) -> None:
    policy = one(with_components, "NetworkPolicy")
    assert policy["metadata"]["namespace"] == NAMESPACE
    assert selects(policy["spec"]["podSelector"], pod_labels(with_components))
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"metrics": "enabled"}}}]
    assert rule["ports"] == [{"port": 8443, "protocol": "TCP"}]


def test_the_priority_class_component_sets_the_pods_priority(with_components: Objects) -> None:
    assert pod_spec(with_components)["priorityClassName"] == "system-cluster-critical"
