"""Preparing the emulated cluster: the CRDs, namespaces, the API-key Secret, the samples'
namespace's opt-in to Secret reading (the Secret its BasetenSecret names, the RoleBinding),
and the samples."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from baseten_operator.api.constants import BASETENMODELS, BASETENSECRETS, KIND, SECRET_KIND
from baseten_operator.api.crds import all_crds
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.errors import AlreadyExists
from baseten_operator.runtime.resource import CONFIGMAPS, CRDS, NAMESPACES, SECRETS, Resource
from baseten_operator.sandbox.seed import HF_SECRET, HF_SECRET_KEY, HF_TOKEN
from baseten_operator.sandbox.waiting import wait_until

OPERATOR_NAMESPACE = "baseten-operator-system"
SAMPLES_NAMESPACE = "default"
API_KEY_SECRET = "baseten-operator-api-key"
API_KEY_SECRET_KEY = "api-key"
# The kinds config/samples holds, and where the client finds them.
SAMPLE_RESOURCES: dict[str, Resource] = {
    "ConfigMap": CONFIGMAPS,
    KIND: BASETENMODELS,
    SECRET_KIND: BASETENSECRETS,
}
CLUSTER_ROLES = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False
)
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
# The ClusterRole config/rbac ships (secret_reader_role.yaml, under the install's prefix).
SECRET_READER_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "baseten-operator-secret-reader"},
    "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}],
}


def install_crd(kube: KubeClient, *, timeout: float = 10.0) -> None:
    """Create the CRDs (BasetenModel, BasetenSecret) and wait until the API server serves them."""
    for crd in all_crds():
        with contextlib.suppress(AlreadyExists):
            kube.create(CRDS, crd)
    for crd in all_crds():
        _await_established(kube, crd["metadata"]["name"], timeout)


def _await_established(kube: KubeClient, name: str, timeout: float) -> None:
    wait_until(lambda: _established(kube.get(CRDS, name)), timeout, f"CRD {name} Established")


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def ensure_namespace(kube: KubeClient, name: str) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    with contextlib.suppress(AlreadyExists):
        kube.create(NAMESPACES, namespace)


def create_api_key_secret(kube: KubeClient, api_key: str) -> None:
    """The Secret a real install holds (`kubectl create secret generic ...`)."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": API_KEY_SECRET, "namespace": OPERATOR_NAMESPACE},
        "type": "Opaque",
        "data": {API_KEY_SECRET_KEY: base64.b64encode(api_key.encode()).decode()},
    }
    with contextlib.suppress(AlreadyExists):
        kube.create(SECRETS, secret, OPERATOR_NAMESPACE)


def open_secret_reading(kube: KubeClient, samples_dir: Path) -> None:
    """What a namespace does for its BasetenSecrets: the Secret its sample names (kept by
    External Secrets or kubectl in real life) and the opt-in RoleBinding of
    config/samples (the sandbox's operator runs as an administrator, so the binding is
    there to be seen, as on a real install)."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": HF_SECRET, "namespace": SAMPLES_NAMESPACE},
        "type": "Opaque",
        "data": {HF_SECRET_KEY: base64.b64encode(HF_TOKEN.encode()).decode()},
    }
    binding = yaml.safe_load((samples_dir / "secret_reader_rolebinding.yaml").read_text())
    binding["metadata"]["namespace"] = SAMPLES_NAMESPACE
    for resource, body, namespace in (
        (SECRETS, secret, SAMPLES_NAMESPACE),
        (CLUSTER_ROLES, SECRET_READER_ROLE, None),
        (ROLE_BINDINGS, binding, SAMPLES_NAMESPACE),
    ):
        with contextlib.suppress(AlreadyExists):
            kube.create(resource, body, namespace)


def load_samples(samples_dir: Path) -> list[dict[str, Any]]:
    """The objects of the kustomization in `samples_dir`, in its `resources` order."""
    kustomization = yaml.safe_load((samples_dir / "kustomization.yaml").read_text())
    objects: list[dict[str, Any]] = []
    for file_name in kustomization.get("resources") or []:
        with (samples_dir / file_name).open() as stream:
            objects.extend(doc for doc in yaml.safe_load_all(stream) if doc)
    return objects


def apply_samples(
    kube: KubeClient,
    objects: list[dict[str, Any]],
    *,
    namespace: str = SAMPLES_NAMESPACE,
    on_applied: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Create every sample (ConfigMaps first so no model waits on its setup script)."""
    ordered = sorted(objects, key=lambda obj: obj["kind"] != "ConfigMap")
    for obj in ordered:
        resource = SAMPLE_RESOURCES.get(obj["kind"])
        if resource is None:
            raise ValueError(f"the sandbox cannot apply a sample of kind {obj['kind']}")
        body = {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}
        try:
            kube.create(resource, body, namespace)
        except AlreadyExists:
            continue
        if on_applied is not None:
            on_applied(body)
