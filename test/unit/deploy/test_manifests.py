"""The rendered install manifest: fresh, installable, hardened, least privilege."""

from __future__ import annotations

import ast
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from baseten_operator.api.constants import BASETENMODELS, BASETENSECRETS
from baseten_operator.runtime.resource import (
    CONFIGMAPS,
    EVENTS,
    LEASES,
    NAMESPACES,
    SECRETS,
    Resource,
)
from baseten_operator.sim.kube import KubeApiServer
from testsupport.paths import REPO

INSTALL = REPO / "deploy" / "install.yaml"
KUBECTL = "/usr/bin/kubectl"
PACKAGE = REPO / "baseten_operator"

NAMESPACE = "baseten-operator-system"
SERVICE_ACCOUNT = "baseten-operator-controller-manager"
MANAGER_ROLE = "baseten-operator-manager-role"
LEADER_ELECTION_ROLE = "baseten-operator-leader-election-role"
SECRET_READER_ROLE = "baseten-operator-api-key-secret-reader-role"
# Reading namespaces' Secrets for BasetenSecrets: shipped, bound by no one (opt-in).
OPT_IN_SECRET_READER = "baseten-operator-secret-reader"
# Issue 12 grants get next to the informers' list and watch on these two.
READ_ALSO_GRANTED = {(NAMESPACES.group, NAMESPACES.plural), (SECRETS.group, SECRETS.plural)}
BASETENMODEL_ROLES = {
    "admin": "baseten-operator-basetenmodel-admin-role",
    "edit": "baseten-operator-basetenmodel-editor-role",
    "view": "baseten-operator-basetenmodel-viewer-role",
}

# Where the operator talks to the Kubernetes API: the reconciler's writes, the event recorder,
# leader election, and the wiring that decides which informers (list + watch) exist.
KUBE_CALLERS = [
    *sorted((PACKAGE / "controller").rglob("*.py")),
    PACKAGE / "runtime" / "recorder.py",
    PACKAGE / "runtime" / "leaderelection.py",
]
RESOURCES = {"BASETENMODELS": BASETENMODELS, "CONFIGMAPS": CONFIGMAPS, "EVENTS": EVENTS}
RESOURCES["BASETENSECRETS"] = BASETENSECRETS
RESOURCES.update(LEASES=LEASES, NAMESPACES=NAMESPACES, SECRETS=SECRETS)
# KubeClient method -> (subresource, RBAC verb).
CLIENT_VERBS = {
    "get": ("", "get"),
    "list": ("", "list"),
    "watch": ("", "watch"),
    "create": ("", "create"),
    "update": ("", "update"),
    "patch": ("", "patch"),
    "delete": ("", "delete"),
    "update_status": ("/status", "update"),
}

Permissions = dict[tuple[str, str], set[str]]


def rendered() -> str:
    done = subprocess.run(
        [KUBECTL, "kustomize", str(REPO / "config" / "default")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


def install_objects() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(INSTALL.read_text()) if doc]


def find(kind: str, name: str) -> dict[str, Any]:
    matches = [o for o in install_objects() if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} in {INSTALL.name}"
    return matches[0]


# --------------------------------------------------------------------------- fresh


def test_committed_install_manifest_is_the_rendered_kustomization() -> None:
    assert (
        INSTALL.read_text() == rendered()
    ), "deploy/install.yaml is stale: run `make manifests` and commit the result"


# --------------------------------------------------------------------------- installable


@pytest.fixture
def emulator_kubeconfig(tmp_path: Path) -> Iterator[str]:
    server = KubeApiServer()
    server.start()
    try:
        yield server.write_kubeconfig(tmp_path / "kubeconfig")
    finally:
        server.stop()


def test_every_rendered_object_applies_to_the_emulator(emulator_kubeconfig: str) -> None:
    applied = subprocess.run(
        [KUBECTL, "--kubeconfig", emulator_kubeconfig, "apply", "-f", str(INSTALL)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert applied.returncode == 0, applied.stderr
    listed = subprocess.run(
        [KUBECTL, "--kubeconfig", emulator_kubeconfig, "get", "-f", str(INSTALL), "-o", "name"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.split()) == len(install_objects())


# --------------------------------------------------------------------------- hardened


def manager_pod() -> dict[str, Any]:
    deployment = find("Deployment", "baseten-operator-controller-manager")
    assert deployment["metadata"]["namespace"] == NAMESPACE
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def manager_container() -> dict[str, Any]:
    (container,) = [c for c in manager_pod()["containers"] if c["name"] == "manager"]
    return container


def test_manager_runs_non_root_with_runtime_default_seccomp() -> None:
    pod_context = manager_pod()["securityContext"]
    assert pod_context["runAsNonRoot"] is True
    assert pod_context["runAsUser"] != 0
    assert pod_context["seccompProfile"] == {"type": "RuntimeDefault"}
    context = manager_container()["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"]["drop"] == ["ALL"]
    assert not context["capabilities"].get("add")


def test_tmp_is_a_writable_empty_dir() -> None:
    """Read-only root: truss pushes stage their files under /tmp."""
    mounts = {m["mountPath"]: m["name"] for m in manager_container()["volumeMounts"]}
    volumes = {v["name"]: v for v in manager_pod()["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_probes_hit_the_health_server_the_flags_bind() -> None:
    container = manager_container()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert f"--health-probe-bind-address=:{ports['health']}" in container["args"]
    assert f"--metrics-bind-address=:{ports['https']}" in container["args"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}


def test_api_key_comes_from_the_secret_and_leader_election_is_on() -> None:
    container = manager_container()
    env = {e["name"]: e for e in container["env"]}
    assert env["BASETEN_API_KEY"]["valueFrom"] == {
        "secretKeyRef": {"name": "baseten-operator-api-key", "key": "api-key"}
    }
    assert "--leader-elect" in container["args"]
    assert manager_pod()["serviceAccountName"] == SERVICE_ACCOUNT


def test_the_pod_knows_its_namespace_and_service_account() -> None:
    """Where API key Secrets live, and whom a FORBIDDEN BasetenSecret's message names when
    the API server's refusal does not say (main.operator_identity)."""
    env = {e["name"]: e.get("valueFrom") for e in manager_container()["env"]}
    assert env["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["SERVICE_ACCOUNT_NAME"] == {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}


# --------------------------------------------------------------------------- least privilege


def _resource_of(node: ast.expr) -> Resource | None:
    return RESOURCES.get(node.id) if isinstance(node, ast.Name) else None


def _grant(permissions: Permissions, resource: Resource, suffix: str, verb: str) -> None:
    permissions.setdefault((resource.group, resource.plural + suffix), set()).add(verb)


def _status_writer_resource(node: ast.AST) -> Resource | None:
    """`resource = RESOURCE` in a class: a status writer's kind (status.py), whose writes
    are `update_status` and, on a conflict, `get`."""
    if not isinstance(node, ast.ClassDef):
        return None
    for statement in node.body:
        if (
            isinstance(statement, ast.Assign)
            and [getattr(t, "id", None) for t in statement.targets] == ["resource"]
            and isinstance(statement.value, ast.Name)
        ):
            return _resource_of(statement.value)
    return None


def permissions_the_code_uses() -> Permissions:
    """Every `<client>.<verb>(RESOURCE, ...)` call, list+watch for every informer wired
    with `<manager>.informer(RESOURCE)` (the reconciler reads everything else from them),
    get for the whole objects read behind one (`FetchedObjects(client, RESOURCE, ...)`),
    patch for `set_finalizer_on(client, RESOURCE, ...)`, and a status writer's
    `update_status` and `get` on the `resource` it names."""
    permissions: Permissions = {}
    for path in KUBE_CALLERS:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            written = _status_writer_resource(node)
            if written is not None:
                _grant(permissions, written, "/status", "update")
                _grant(permissions, written, "", "get")
                continue
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "set_finalizer_on"
            ):
                patched = _resource_of(node.args[1]) if len(node.args) > 1 else None
                if patched is not None:
                    _grant(permissions, patched, "", "patch")
                continue
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name) and node.func.id == "FetchedObjects":
                fetched = _resource_of(node.args[1]) if len(node.args) > 1 else None
                if fetched is not None:
                    _grant(permissions, fetched, "", "get")
                continue
            if not isinstance(node.func, ast.Attribute):
                continue
            resource = _resource_of(node.args[0]) if node.args else None
            if resource is None:
                continue
            if node.func.attr == "informer":
                _grant(permissions, resource, "", "list")
                _grant(permissions, resource, "", "watch")
            elif node.func.attr in CLIENT_VERBS:
                suffix, verb = CLIENT_VERBS[node.func.attr]
                _grant(permissions, resource, suffix, verb)
    return permissions


def granted(role: dict[str, Any]) -> Permissions:
    permissions: Permissions = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                permissions.setdefault((group, resource), set()).update(rule["verbs"])
    return permissions


def test_the_code_is_what_the_scan_sees() -> None:
    """Guards the scan itself: the calls below are known to exist."""
    used = permissions_the_code_uses()
    assert used[("models.baseten.com", "basetenmodels")] >= {"list", "watch", "patch"}
    assert used[("models.baseten.com", "basetenmodels/status")] == {"update"}
    assert used[("models.baseten.com", "basetensecrets")] >= {"list", "watch", "patch"}
    assert used[("models.baseten.com", "basetensecrets/status")] == {"update"}
    assert used[("coordination.k8s.io", "leases")] == {"get", "create", "update"}
    assert "create" in used[("", "events")]
    assert used[("", "configmaps")] == {"get", "list", "watch"}


def test_manager_cluster_role_grants_exactly_what_the_code_uses() -> None:
    used = permissions_the_code_uses()
    for resource in READ_ALSO_GRANTED:
        used[resource] = used[resource] | {"get"}
    leases = (LEASES.group, LEASES.plural)
    secrets = (SECRETS.group, SECRETS.plural)
    cluster_wide = {k: v for k, v in used.items() if k not in (leases, secrets)}
    # Not a call: what a finalizer's owner is granted on clusters that check it.
    cluster_wide[("models.baseten.com", "basetensecrets/finalizers")] = {"update"}
    assert granted(find("ClusterRole", MANAGER_ROLE)) == cluster_wide
    assert granted(find("Role", LEADER_ELECTION_ROLE)) == {leases: used[leases]}
    # Secrets only in the operator's own namespace (namespaces' API keys), never cluster-wide.
    assert granted(find("Role", SECRET_READER_ROLE)) == {secrets: {"get", "list", "watch"}}
    assert find("Role", SECRET_READER_ROLE)["metadata"]["namespace"] == NAMESPACE


def test_roles_are_bound_to_the_manager_service_account() -> None:
    subject = {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
    cluster_binding = find("ClusterRoleBinding", "baseten-operator-manager-rolebinding")
    assert cluster_binding["roleRef"]["name"] == MANAGER_ROLE
    assert cluster_binding["subjects"] == [subject]
    for name, role in (
        ("baseten-operator-leader-election-rolebinding", LEADER_ELECTION_ROLE),
        ("baseten-operator-api-key-secret-reader-rolebinding", SECRET_READER_ROLE),
    ):
        binding = find("RoleBinding", name)
        assert binding["metadata"]["namespace"] == NAMESPACE
        assert binding["roleRef"]["name"] == role
        assert binding["subjects"] == [subject]
    find("ServiceAccount", SERVICE_ACCOUNT)


def test_reading_namespaces_secrets_is_shipped_but_bound_by_no_one() -> None:
    secrets = (SECRETS.group, SECRETS.plural)
    role = find("ClusterRole", OPT_IN_SECRET_READER)
    assert granted(role) == {secrets: {"get", "list", "watch"}}
    bindings = [o for o in install_objects() if o["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    assert OPT_IN_SECRET_READER not in {b["roleRef"]["name"] for b in bindings}


def test_the_sample_role_binding_grants_it_to_the_installed_service_account() -> None:
    sample = REPO / "config" / "samples" / "secret_reader_rolebinding.yaml"
    binding = yaml.safe_load(sample.read_text())
    assert binding["kind"] == "RoleBinding" and "namespace" not in binding["metadata"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": OPT_IN_SECRET_READER,
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
    ]
    find("ServiceAccount", SERVICE_ACCOUNT)
    # Opt-in: `kubectl apply -k config/samples` grants nothing.
    listed = yaml.safe_load((sample.parent / "kustomization.yaml").read_text())["resources"]
    assert sample.name not in listed


def aggregation_labels(objects: list[dict[str, Any]]) -> dict[str, set[str]]:
    by_name = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}
    return {
        builtin: {
            label.rsplit("aggregate-to-", 1)[1]
            for label in (by_name[role]["metadata"].get("labels") or {})
            if "aggregate-to-" in label
        }
        for builtin, role in BASETENMODEL_ROLES.items()
    }


def test_basetenmodel_roles_are_not_aggregated_by_default() -> None:
    assert aggregation_labels(install_objects()) == {"admin": set(), "edit": set(), "view": set()}


def test_the_component_opts_into_aggregation(tmp_path: Path) -> None:
    overlay = tmp_path / "kustomization.yaml"
    relative = Path(os.path.relpath(REPO / "config", tmp_path))
    overlay.write_text(
        yaml.safe_dump(
            {
                "resources": [str(relative / "default")],
                "components": [str(relative / "components" / "aggregate-to-builtin-roles")],
            }
        )
    )
    output = subprocess.run(
        [KUBECTL, "kustomize", "--load-restrictor", "LoadRestrictionsNone", str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    objects = [o for o in yaml.safe_load_all(output) if o]
    assert aggregation_labels(objects) == {"admin": {"admin"}, "edit": {"edit"}, "view": {"view"}}
