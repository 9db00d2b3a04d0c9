"""The Helm chart, through the real Helm SDK (helm_python): lint, render, schema, docs, package.

Every values set is rendered once (`objects`); tests read the rendered objects, never text.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from testsupport.paths import REPO

CHART = REPO / "deploy" / "charts" / "baseten-operator"
RELEASE = "baseten-operator"
NAMESPACE = "baseten-operator-system"
# Labels Helm charts conventionally add; kustomize's `managed-by: kustomize` is its twin.
HELM_LABELS = {
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
}
# The chart's selectors also carry name and instance (two releases never select each other's
# pods); config/default's select on control-plane alone.
SELECTOR_EXTRAS = {"app.kubernetes.io/name", "app.kubernetes.io/instance"}

Obj = dict[str, Any]


def load_generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "generate_manifests", REPO / "hack" / "generate_manifests.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def chart() -> helm.Chart:
    return helm.Chart.load(CHART)


@functools.cache
def _rendered(values_json: str, release: str) -> tuple[Obj, ...]:
    manifests = chart().render(json.loads(values_json), name=release, namespace=NAMESPACE)
    objects = []
    for path, text in manifests.items():
        if path.endswith("NOTES.txt"):
            continue
        objects += [doc for doc in yaml.safe_load_all(text) if doc]
    return tuple(objects)


def objects(values: Obj | None = None, release: str = RELEASE) -> list[Obj]:
    return list(_rendered(json.dumps(values or {}, sort_keys=True), release))


def find(objs: list[Obj], kind: str, name: str | None = None) -> Obj:
    matches = [o for o in objs if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} rendered"
    return matches[0]


def kinds(objs: list[Obj]) -> set[str]:
    return {o["kind"] for o in objs}


def manager(objs: list[Obj]) -> Obj:
    deployment = find(objs, "Deployment")
    container: Obj = deployment["spec"]["template"]["spec"]["containers"][0]
    return container


def pod_spec(objs: list[Obj]) -> Obj:
    spec: Obj = find(objs, "Deployment")["spec"]["template"]["spec"]
    return spec


# --------------------------------------------------------------------------- lint, metadata


EVERY_OPT_IN: Obj = {
    "namespace": {"create": True},
    "crds": {"keep": True},
    "rbac": {"aggregatedRoles": True},
    "metrics": {"certManager": {"enabled": True}},
    "networkPolicy": {"enabled": True},
    "serviceMonitor": {"enabled": True},
    "prometheusRule": {"enabled": True},
    "grafanaDashboard": {"enabled": True},
}


@pytest.mark.parametrize("values", [{}, EVERY_OPT_IN], ids=["defaults", "every-opt-in"])
def test_lint_reports_no_error_or_warning(values: Obj) -> None:
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE, kube_version="v1.28.0")
    assert report["errors"] == []
    # Severity 1 is informational (Helm's "icon is recommended"); 2 warnings, 3 errors.
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_chart_versions_are_the_projects() -> None:
    with (REPO / "pyproject.toml").open("rb") as file:
        version = tomllib.load(file)["project"]["version"]
    metadata = chart().metadata
    assert metadata["appVersion"] == version and metadata["version"] == version
    assert metadata["kubeVersion"] == ">=1.28.0-0"


def test_chart_copies_of_crd_rbac_and_monitoring_are_fresh() -> None:
    stale = [
        str(path.relative_to(REPO))
        for path, text in load_generator().expected_files().items()
        if not path.exists() or path.read_text() != text
    ]
    assert stale == [], f"stale: {stale}; run `make manifests` and commit the result"


@pytest.mark.parametrize("plural", ["basetenmodels", "basetensecrets"])
def test_chart_crd_is_config_crd(plural: str) -> None:
    config_crd = yaml.safe_load(
        (REPO / "config" / "crd" / "bases" / f"models.baseten.com_{plural}.yaml").read_text()
    )
    name = config_crd["metadata"]["name"]
    rendered = find(objects(), "CustomResourceDefinition", name)
    assert rendered["spec"] == config_crd["spec"]


# --------------------------------------------------------------------------- chart = config/default


def kustomize_default() -> list[Obj]:
    done = subprocess.run(
        ["kubectl", "kustomize", str(REPO / "config" / "default")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def without_helm_labels(obj: Any, key: str = "") -> Any:
    if isinstance(obj, dict):
        if key in ("labels", "matchLabels") or (
            key == "selector" and all(isinstance(v, str) for v in obj.values())
        ):
            dropped = HELM_LABELS | (SELECTOR_EXTRAS if key != "labels" else set())
            obj = {k: v for k, v in obj.items() if k not in dropped}
        return {k: without_helm_labels(v, k) for k, v in obj.items() if k != "labels" or v}
    if isinstance(obj, list):
        return [without_helm_labels(item, key) for item in obj]
    return obj


# Named the same in every release: the operator's FORBIDDEN message names it.
SECRET_READER = "baseten-operator-secret-reader"


def normalized(obj: Obj, prefix: str) -> Obj:
    """obj without Helm's labels, and without the name prefix where kustomize's namePrefix goes."""

    def strip(name: str) -> str:
        if name == SECRET_READER:
            return name.removeprefix("baseten-operator-")
        return name.removeprefix(prefix + "-")

    obj = without_helm_labels(obj)
    if obj["kind"] != "Namespace":
        obj["metadata"]["name"] = strip(obj["metadata"]["name"])
    if "roleRef" in obj:
        obj["roleRef"]["name"] = strip(obj["roleRef"]["name"])
    for subject in obj.get("subjects", []):
        subject["name"] = strip(subject["name"])
    if obj["kind"] == "Deployment":
        pod = obj["spec"]["template"]["spec"]
        pod["serviceAccountName"] = strip(pod["serviceAccountName"])
        for container in pod["containers"]:
            # The chart pins the image to appVersion, config/default to `latest`.
            container["image"] = container["image"].rsplit(":", 1)[0]
    return obj


def by_identity(objs: list[Obj], prefix: str) -> dict[tuple[str, str], Obj]:
    normal = [normalized(o, prefix) for o in objs]
    return {(o["kind"], o["metadata"]["name"]): o for o in normal}


# Rendered by config/default but left to Helm: `helm install --create-namespace`.
KUSTOMIZE_ONLY = {("Namespace", "baseten-operator-system")}


def differences(values: Obj) -> list[str]:
    kustomized = by_identity(kustomize_default(), "baseten-operator")
    charted = by_identity(objects(values, release="my-ops"), "my-ops")
    problems = [f"only in the chart: {k}" for k in charted.keys() - kustomized.keys()]
    problems += [
        f"only in config/default: {k}" for k in kustomized.keys() - charted.keys() - KUSTOMIZE_ONLY
    ]
    for identity in sorted(charted.keys() & kustomized.keys()):
        if charted[identity] != kustomized[identity]:
            problems.append(
                f"{identity} differs:\n  chart:     {json.dumps(charted[identity], sort_keys=True)}"
                f"\n  kustomize: {json.dumps(kustomized[identity], sort_keys=True)}"
            )
    return problems


def test_default_values_render_config_default() -> None:
    assert differences({}) == []


# --------------------------------------------------------------------------- the values matrix


def test_defaults_render_the_operator_with_secure_metrics_and_no_opt_ins() -> None:
    objs = objects()
    assert {
        "Namespace",
        "NetworkPolicy",
        "ServiceMonitor",
        "PrometheusRule",
        "ConfigMap",
    }.isdisjoint(kinds(objs))
    assert {"Certificate", "Issuer"}.isdisjoint(kinds(objs))
    container = manager(objs)
    assert container["image"] == f"baseten-operator:{chart().metadata['appVersion']}"
    assert container["args"] == [
        "--leader-elect",
        "--metrics-bind-address=:8443",
        "--health-probe-bind-address=:8081",
    ]
    service = find(objs, "Service")
    assert service["metadata"]["name"] == f"{RELEASE}-controller-manager-metrics-service"
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 8443, "targetPort": "https", "protocol": "TCP"}
    ]
    assert find(objs, "PodDisruptionBudget")["spec"]["minAvailable"] == 1
    assert all(o["metadata"].get("namespace", NAMESPACE) == NAMESPACE for o in objs)
    secret_ref = next(e for e in container["env"] if e["name"] == "BASETEN_API_KEY")
    assert secret_ref["valueFrom"]["secretKeyRef"] == {
        "name": "baseten-operator-api-key",
        "key": "api-key",
    }
    assert downward_fields(container) == {
        "POD_NAMESPACE": "metadata.namespace",
        "SERVICE_ACCOUNT_NAME": "spec.serviceAccountName",
    }


def downward_fields(container: Obj) -> dict[str, str]:
    """The variables the kubelet fills from the pod's own fields."""
    return {
        e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"]
        for e in container["env"]
        if "fieldRef" in e.get("valueFrom", {})
    }


def test_aggregation_into_the_builtin_roles_is_opt_in() -> None:
    def aggregation(values: Obj) -> dict[str, set[str]]:
        return {
            o["metadata"]["name"]: {
                k for k in o["metadata"]["labels"] if k.startswith("rbac.authorization.k8s.io/")
            }
            for o in objects(values)
            if o["kind"] == "ClusterRole" and "basetenmodel-" in o["metadata"]["name"]
        }

    prefix = f"{RELEASE}-basetenmodel"
    assert aggregation({}) == {
        f"{prefix}-admin-role": set(),
        f"{prefix}-editor-role": set(),
        f"{prefix}-viewer-role": set(),
    }
    assert aggregation({"rbac": {"aggregatedRoles": True}}) == {
        f"{prefix}-admin-role": {"rbac.authorization.k8s.io/aggregate-to-admin"},
        f"{prefix}-editor-role": {"rbac.authorization.k8s.io/aggregate-to-edit"},
        f"{prefix}-viewer-role": {"rbac.authorization.k8s.io/aggregate-to-view"},
    }


def test_manager_rbac_is_config_rbac_role_bound_to_the_service_account() -> None:
    objs = objects({"serviceAccount": {"name": "robot"}})
    config_roles = [
        doc
        for doc in yaml.safe_load_all((REPO / "config" / "rbac" / "role.yaml").read_text())
        if doc
    ]
    for config_role in config_roles:
        name = f"{RELEASE}-{config_role['metadata']['name']}"
        role = find(objs, config_role["kind"], name)
        assert role["rules"] == config_role["rules"]
        binding_kind = (
            "ClusterRoleBinding" if config_role["kind"] == "ClusterRole" else "RoleBinding"
        )
        binding = find(objs, binding_kind, f"{name}binding")
        assert binding["roleRef"]["name"] == name
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "robot", "namespace": NAMESPACE}
        ]


def test_namespace_created_and_objects_placed_in_it() -> None:
    objs = objects({"namespace": {"create": True, "name": "ops"}})
    assert find(objs, "Namespace")["metadata"]["name"] == "ops"
    namespaced = [o for o in objs if "namespace" in o["metadata"]]
    assert {o["metadata"]["namespace"] for o in namespaced} == {"ops"}
    assert (
        find(objs, "RoleBinding", f"{RELEASE}-leader-election-rolebinding")["subjects"][0][
            "namespace"
        ]
        == "ops"
    )


def test_empty_namespace_name_means_the_release_namespace() -> None:
    objs = objects({"namespace": {"name": ""}})
    assert {o["metadata"]["namespace"] for o in objs if "namespace" in o["metadata"]} == {NAMESPACE}


def test_without_crd() -> None:
    assert "CustomResourceDefinition" not in kinds(objects({"crds": {"install": False}}))
    kept = [o for o in objects({"crds": {"keep": True}}) if o["kind"] == "CustomResourceDefinition"]
    assert len(kept) == 2
    for crd in kept:
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_image_override_and_pull_secrets() -> None:
    objs = objects(
        {
            "image": {"repository": "registry.example.com/ops/baseten-operator", "tag": "1.2.3",
                      "pullPolicy": "Always"},
            "imagePullSecrets": [{"name": "regcred"}],
        }
    )  # fmt: skip
    container = manager(objs)
    assert container["image"] == "registry.example.com/ops/baseten-operator:1.2.3"
    assert container["imagePullPolicy"] == "Always"
    assert pod_spec(objs)["imagePullSecrets"] == [{"name": "regcred"}]


def test_operator_flags_and_extra_args_in_order() -> None:
    container = manager(
        objects(
            {
                "watchNamespace": "models",
                "maxConcurrentReconciles": 8,
                "maxConcurrentPushes": 2,
                "logging": {"level": "debug", "format": "console"},
                "leaderElection": {"enabled": False},
                "extraArgs": ["--leader-election-id=custom", "--time-scale=1"],
            }
        )
    )
    assert container["args"] == [
        "--metrics-bind-address=:8443",
        "--health-probe-bind-address=:8081",
        "--watch-namespace=models",
        "--max-concurrent-reconciles=8",
        "--max-concurrent-pushes=2",
        "--log-level=debug",
        "--log-format=console",
        "--leader-election-id=custom",
        "--time-scale=1",
    ]


def test_leader_election_off_drops_its_role() -> None:
    objs = objects({"leaderElection": {"enabled": False}})
    assert not [o for o in objs if "leader-election" in o["metadata"]["name"]]


def test_existing_service_account() -> None:
    objs = objects({"serviceAccount": {"create": False, "name": "platform-ops"}})
    assert "ServiceAccount" not in kinds(objs)
    assert pod_spec(objs)["serviceAccountName"] == "platform-ops"
    with pytest.raises(helm.HelmRenderError, match="serviceAccount.name is required"):
        objects({"serviceAccount": {"create": False}})


def secret_readers(objs: list[Obj]) -> list[Obj]:
    return [o for o in objs if o["metadata"]["name"] == SECRET_READER]


@pytest.mark.parametrize("release", [RELEASE, "my-ops"])
def test_the_secret_reader_cluster_role_has_a_fixed_name_and_no_binding(release: str) -> None:
    objs = objects(release=release)
    [role] = secret_readers(objs)
    assert role["kind"] == "ClusterRole"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}
    ]
    bound = [o for o in objs if o["kind"].endswith("Binding")]
    assert SECRET_READER not in {b["roleRef"]["name"] for b in bound}  # opt-in, per namespace


def test_a_second_release_can_leave_the_secret_reader_to_the_first() -> None:
    assert secret_readers(objects({"rbac": {"secretReaderClusterRole": False}})) == []


def test_the_notes_tell_how_a_namespace_opts_in_to_secret_reading() -> None:
    notes = next(
        text
        for path, text in chart().render({}, name=RELEASE, namespace=NAMESPACE).items()
        if path.endswith("NOTES.txt")
    )
    assert "--clusterrole=baseten-operator-secret-reader" in notes
    assert f"--serviceaccount={NAMESPACE}:{RELEASE}-controller-manager" in notes
    without = chart().render(
        {"rbac": {"secretReaderClusterRole": False}}, name=RELEASE, namespace=NAMESPACE
    )
    assert "does not create that ClusterRole" in next(
        text for path, text in without.items() if path.endswith("NOTES.txt")
    )


def test_no_rbac() -> None:
    objs = objects({"rbac": {"create": False}})
    assert kinds(objs) & {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} == set()


def test_secure_metrics_off_serves_plain_http() -> None:
    objs = objects(
        {"metrics": {"secure": False, "port": 8080}, "serviceMonitor": {"enabled": True}}
    )
    assert "--metrics-secure=false" in manager(objs)["args"]
    assert "--metrics-bind-address=:8080" in manager(objs)["args"]
    assert find(objs, "Service")["spec"]["ports"][0]["name"] == "metrics"
    endpoint = find(objs, "ServiceMonitor")["spec"]["endpoints"][0]
    assert endpoint["scheme"] == "http" and endpoint["port"] == "metrics"


def test_metrics_off_drops_service_and_metrics_rbac() -> None:
    objs = objects({"metrics": {"enabled": False}, "networkPolicy": {"enabled": True}})
    assert "--metrics-bind-address=0" in manager(objs)["args"]
    assert "Service" not in kinds(objs) and "NetworkPolicy" not in kinds(objs)
    assert not [o for o in objs if "metrics" in o["metadata"]["name"]]


def test_metrics_certificate_from_a_secret() -> None:
    objs = objects({"metrics": {"certSecretName": "metrics-tls"}})
    assert "--metrics-cert-path=/etc/baseten-operator/metrics-certs" in manager(objs)["args"]
    volume = next(v for v in pod_spec(objs)["volumes"] if v["name"] == "metrics-certs")
    assert volume["secret"]["secretName"] == "metrics-tls"
    mount = next(m for m in manager(objs)["volumeMounts"] if m["name"] == "metrics-certs")
    assert mount == {
        "name": "metrics-certs",
        "mountPath": "/etc/baseten-operator/metrics-certs",
        "readOnly": True,
    }


def test_metrics_certificate_from_cert_manager() -> None:
    objs = objects(
        {"metrics": {"certManager": {"enabled": True}}, "serviceMonitor": {"enabled": True}}
    )
    certificate = find(objs, "Certificate")
    service = f"{RELEASE}-controller-manager-metrics-service"
    assert certificate["spec"]["dnsNames"] == [
        f"{service}.{NAMESPACE}.svc",
        f"{service}.{NAMESPACE}.svc.cluster.local",
    ]
    issuer = find(objs, "Issuer")
    assert issuer["spec"] == {"selfSigned": {}}
    assert certificate["spec"]["issuerRef"] == {
        "kind": "Issuer",
        "name": issuer["metadata"]["name"],
    }
    volume = next(v for v in pod_spec(objs)["volumes"] if v["name"] == "metrics-certs")
    assert volume["secret"]["secretName"] == certificate["spec"]["secretName"]
    tls = find(objs, "ServiceMonitor")["spec"]["endpoints"][0]["tlsConfig"]
    assert tls["ca"]["secret"]["name"] == certificate["spec"]["secretName"]
    own_issuer = objects(
        {
            "metrics": {
                "certManager": {
                    "enabled": True,
                    "issuerRef": {"kind": "ClusterIssuer", "name": "ca"},
                }
            }
        }
    )
    assert "Issuer" not in kinds(own_issuer)
    assert find(own_issuer, "Certificate")["spec"]["issuerRef"] == {
        "kind": "ClusterIssuer",
        "name": "ca",
    }
    with pytest.raises(helm.HelmRenderError, match="exclude each other"):
        objects({"metrics": {"certSecretName": "x", "certManager": {"enabled": True}}})


def test_pod_placement_and_security_values() -> None:
    values = {
        "replicaCount": 3,
        "podAnnotations": {"example.com/team": "ml"},
        "podLabels": {"team": "ml"},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "pool", "operator": "In", "values": ["system"]}]}]}}},
        "priorityClassName": "system-cluster-critical",
        "terminationGracePeriodSeconds": 90,
        "resources": {"requests": {"cpu": "200m", "memory": "512Mi"}},
        "podSecurityContext": {"runAsNonRoot": True},
        "securityContext": {"readOnlyRootFilesystem": True},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "health"}, "periodSeconds": 7},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "health"}, "periodSeconds": 3},
        "topologySpreadConstraints": [{"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
                                       "whenUnsatisfiable": "DoNotSchedule"}],
    }  # fmt: skip
    objs = objects(values)
    # Helm merges maps given by the user into the defaults (the values the release would use).
    merged = chart().merge_values(values)
    deployment = find(objs, "Deployment")
    spec = pod_spec(objs)
    container = manager(objs)
    assert merged["resources"]["limits"] == {"cpu": "1", "memory": "1Gi"}
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["template"]["metadata"]["annotations"] == values["podAnnotations"]
    assert deployment["spec"]["template"]["metadata"]["labels"]["team"] == "ml"
    for key in ("nodeSelector", "tolerations", "affinity", "priorityClassName",
                "terminationGracePeriodSeconds"):  # fmt: skip
        assert spec[key] == merged[key], key
    assert spec["securityContext"] == merged["podSecurityContext"]
    for key in ("resources", "securityContext", "livenessProbe", "readinessProbe"):
        assert container[key] == merged[key], key
    (constraint,) = spec["topologySpreadConstraints"]
    assert constraint["topologyKey"] == "topology.kubernetes.io/zone"
    assert (
        constraint["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    )


def test_api_secret_and_base_url() -> None:
    container = manager(
        objects({"api": {"secretName": "bt", "secretKey": "token", "baseUrl": "https://b.example"}})
    )
    env = {e["name"]: e for e in container["env"]}
    assert env["BASETEN_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "bt", "key": "token"}
    assert env["BASETEN_API_BASE_URL"]["value"] == "https://b.example"


def test_names_follow_release_and_overrides() -> None:
    objs = objects({"fullnameOverride": "bt", "nameOverride": "models-operator"})
    deployment = find(objs, "Deployment")
    assert deployment["metadata"]["name"] == "bt-controller-manager"
    assert deployment["metadata"]["labels"]["app.kubernetes.io/name"] == "models-operator"
    assert find(objs, "Service")["metadata"]["name"] == "bt-controller-manager-metrics-service"


def test_network_policy_admits_metrics_from_labelled_namespaces() -> None:
    objs = objects({"networkPolicy": {"enabled": True}})
    policy = find(objs, "NetworkPolicy")
    assert (
        policy["spec"]["podSelector"]["matchLabels"]
        == find(objs, "Deployment")["spec"]["selector"]["matchLabels"]
    )
    assert policy["spec"]["ingress"] == [
        {
            "from": [{"namespaceSelector": {"matchLabels": {"metrics": "enabled"}}}],
            "ports": [{"port": 8443, "protocol": "TCP"}],
        }
    ]


def test_service_monitor_scrapes_https_with_the_service_account_token() -> None:
    objs = objects({"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}})
    monitor = find(objs, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https" and endpoint["port"] == "https"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert monitor["spec"]["selector"]["matchLabels"] == find(objs, "Service")["spec"]["selector"]


def test_prometheus_rule_carries_the_alerts_of_deploy_monitoring() -> None:
    rules = yaml.safe_load((REPO / "deploy" / "monitoring" / "prometheus-rules.yaml").read_text())
    rendered = find(objects({"prometheusRule": {"enabled": True}}), "PrometheusRule")
    assert rendered["spec"] == rules["spec"]
    assert rendered["metadata"]["namespace"] == NAMESPACE


def test_grafana_dashboard_configmap_for_the_sidecar() -> None:
    dashboard = json.loads((REPO / "deploy" / "monitoring" / "grafana-dashboard.json").read_text())
    values = {"grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "Ops"}}}
    config_map = find(objects(values), "ConfigMap")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["metadata"]["annotations"] == {"grafana_folder": "Ops"}
    assert json.loads(config_map["data"]["baseten-operator.json"]) == dashboard


def test_pod_disruption_budget_toggle() -> None:
    assert "PodDisruptionBudget" not in kinds(objects({"podDisruptionBudget": {"enabled": False}}))
    budget = find(objects({"podDisruptionBudget": {"minAvailable": "50%"}}), "PodDisruptionBudget")
    assert budget["spec"]["minAvailable"] == "50%"


# --------------------------------------------------------------------------- the schema


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"replicaCont": 2}, "at '': additional properties 'replicaCont' not allowed"),
        ({"metrics": {"secure": "yes"}}, "at '/metrics/secure': got string, want boolean"),
        ({"metrics": {"port": 70000}}, "at '/metrics/port'"),
        ({"image": {"tag": 1}}, "at '/image/tag': got number, want string"),
        ({"extraArgs": "--leader-elect"}, "at '/extraArgs': got string, want array"),
        ({"logging": {"level": "verbose"}}, "at '/logging/level'"),
        ({"maxConcurrentPushes": 0}, "at '/maxConcurrentPushes'"),
        ({"serviceMonitor": {"enabled": True, "scheme": "http"}}, "'scheme' not allowed"),
    ],
)
def test_schema_refuses_unknown_keys_and_wrong_types(values: Obj, message: str) -> None:
    with pytest.raises(helm.HelmValuesError) as refused:
        chart().render(values, name=RELEASE, namespace=NAMESPACE)
    assert "values don't meet the specifications of the schema" in str(refused.value)
    assert message in str(refused.value)


def test_schema_accepts_the_defaults_and_a_go_chart_values_file() -> None:
    chart().validate_schema(chart().values)
    go_chart_values = yaml.safe_load((Path(__file__).parent / "go_chart_values.yaml").read_text())
    chart().validate_schema(go_chart_values)
    objs = objects(go_chart_values)
    assert (
        manager(objs)["image"] == f"ghcr.io/example/baseten-operator:{chart().metadata['version']}"
    )
    assert find(objs, "Deployment")["spec"]["replicas"] == 1
    assert manager(objs)["resources"]["limits"] == {"cpu": "1000m", "memory": "512Mi"}


# --------------------------------------------------------------------------- README, package


def value_keys(values: Obj, schema: Obj, prefix: str = "") -> set[str]:
    """Documented keys: nested objects with properties in the schema, else the key itself."""
    keys = set()
    for key, value in values.items():
        node = schema["properties"][key]
        if isinstance(value, dict) and "properties" in node and value:
            keys |= value_keys(value, node, f"{prefix}{key}.")
        else:
            keys.add(prefix + key)
    return keys


def test_readme_values_table_lists_exactly_the_values() -> None:
    readme = (CHART / "README.md").read_text()
    documented = set(re.findall(r"^\| `([^`]+)` \|", readme, re.MULTILINE))
    expected = value_keys(yaml.safe_load((CHART / "values.yaml").read_text()), chart().schema)
    assert documented == expected


def test_make_helm_package_writes_the_versioned_archive(tmp_path: Path) -> None:
    version = chart().metadata["version"]
    done = subprocess.run(
        ["make", "-C", str(REPO), "helm-package", "STAMP=", f"BIN={Path(sys.executable).parent}",
         f"DIST={tmp_path}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    archive = tmp_path / f"baseten-operator-{version}.tgz"
    assert archive.is_file()
    with helm.Chart.load(archive) as packaged:
        assert packaged.metadata["appVersion"] == chart().metadata["appVersion"]
        assert {t["name"] for t in packaged.templates} == {t["name"] for t in chart().templates}
        assert packaged.values == chart().values


# --------------------------------------------------------------------------- the operator's CLI


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"metrics": {"enabled": False}},
        {"metrics": {"secure": False}},
        {"metrics": {"certSecretName": "metrics-tls"}},
        {"watchNamespace": "models", "maxConcurrentReconciles": 8, "maxConcurrentPushes": 2,
         "logging": {"level": "debug", "format": "console"}, "leaderElection": {"enabled": False},
         "extraArgs": ["--leader-election-id=custom"]},
    ],
    ids=["defaults", "metrics-off", "secure-off", "cert-secret", "operator-flags"],
)  # fmt: skip
def test_rendered_arguments_are_the_operators_flags(values: Obj) -> None:
    from baseten_operator.cli import build_parser, options_from_args

    args = manager(objects(values))["args"]
    parsed, unknown = build_parser().parse_known_args(["run", *args])
    assert unknown == []
    options = options_from_args(parsed)
    merged = chart().merge_values(values)
    assert options.leader_elect == merged["leaderElection"]["enabled"]
    assert options.health_probe_bind_address == ":8081"
    port = merged["metrics"]["port"] if merged["metrics"]["enabled"] else None
    assert options.metrics_bind_address == (f":{port}" if port else "0")
    assert (options.namespace or "") == merged["watchNamespace"]  # empty: every namespace
    if merged.get("maxConcurrentReconciles"):
        assert options.max_concurrent_reconciles == merged["maxConcurrentReconciles"]
    if merged["logging"]["level"]:
        assert options.log_level == merged["logging"]["level"]


def test_argocd_application_installs_the_chart() -> None:
    application = yaml.safe_load(
        (REPO / "deploy" / "argocd" / "operator-application.yaml").read_text()
    )
    source = application["spec"]["source"]
    assert (REPO / source["path"]).resolve() == CHART
    values = source["helm"]["valuesObject"]
    chart().validate_schema(values)
    objs = objects(values, release=source["helm"]["releaseName"])
    destination = application["spec"]["destination"]["namespace"]
    assert {o["metadata"]["namespace"] for o in objs if "namespace" in o["metadata"]} == {
        destination
    }
    assert {"ServiceMonitor", "PrometheusRule"} <= kinds(objs)
