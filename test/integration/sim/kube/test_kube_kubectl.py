"""kubectl (the machine's /usr/bin/kubectl) driving the emulator."""

from __future__ import annotations

import base64
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")

CR = """\
apiVersion: contract.example.com/v1
kind: Widget
metadata:
  name: {name}
spec:
  size: {size}
  color: red
"""


class Kubectl:
    def __init__(self, kubeconfig: str, cache: Path, namespace: str) -> None:
        self.base = [
            KUBECTL,
            "--kubeconfig",
            kubeconfig,
            "--cache-dir",
            str(cache),
            "-n",
            namespace,
        ]

    def __call__(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        done = subprocess.run(
            [*self.base, *args], input=stdin, capture_output=True, text=True, timeout=30
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}")
        return done.stdout + done.stderr if not check else done.stdout

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, timeout=30)

    def start(self, *args: str) -> LineReader:
        return LineReader(
            subprocess.Popen(
                [*self.base, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        )


class LineReader:
    """Lines of a running kubectl, read on a thread so the test can wait with a deadline."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, needle: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            seen.append(line)
            if needle in line:
                return line
        raise AssertionError(f"{needle!r} not printed; got {seen}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def kubectl(kubeconfig: str, tmp_path: Path, namespace: str) -> Kubectl:
    return Kubectl(kubeconfig, tmp_path / "cache", namespace)


def _apply_widget(kubectl: Kubectl, tmp_path: Path, name: str, size: int) -> Path:
    manifest = tmp_path / f"{name}.yaml"
    manifest.write_text(CR.format(name=name, size=size))
    kubectl("apply", "-f", str(manifest))
    return manifest


def test_apply_crd_and_custom_resource_then_get_columns(kubectl, tmp_path):
    crd = Path(__file__).parent / "widget_crd.yaml"
    out = kubectl("apply", "-f", str(crd))
    assert "customresourcedefinition.apiextensions.k8s.io/widgets.contract.example.com" in out
    manifest = tmp_path / "w1.yaml"
    manifest.write_text(CR.format(name="w1", size=3))
    assert "widget.contract.example.com/w1 created" in kubectl("apply", "-f", str(manifest))
    table = kubectl("get", "widgets").splitlines()
    assert table[0].split() == ["NAME", "SIZE", "READY", "AGE"]
    assert table[1].split()[:2] == ["w1", "3"]
    wide = kubectl("get", "wdg", "-o", "wide").splitlines()
    assert wide[0].split() == ["NAME", "SIZE", "READY", "COLOR", "AGE"]
    assert "red" in wide[1]
    again = kubectl("apply", "-f", str(manifest))
    assert "unchanged" in again


def test_get_watch_prints_changes(kubectl, tmp_path):
    _apply_widget(kubectl, tmp_path, "watched", 2)
    watch = kubectl.start("get", "widgets", "-w")
    try:
        watch.wait_for("watched")
        kubectl("patch", "widget", "watched", "--type=merge", "-p", '{"spec":{"size":7}}')
        line = watch.wait_for(" 7 ")
        assert line.split()[0] == "watched"
    finally:
        watch.stop()


def test_wait_for_condition_set_through_the_status_subresource(kubectl, tmp_path):
    _apply_widget(kubectl, tmp_path, "ready", 2)
    waiting = kubectl.start("wait", "--for=condition=Ready", "widget/ready", "--timeout=20s")
    try:
        kubectl(
            "patch",
            "widget",
            "ready",
            "--subresource=status",
            "--type=merge",
            "-p",
            '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}',
        )
        assert "widget.contract.example.com/ready condition met" in waiting.wait_for("met")
        assert waiting.process.wait(timeout=10) == 0
    finally:
        if waiting.process.poll() is None:
            waiting.stop()
    status = yaml.safe_load(kubectl("get", "widget", "ready", "-o", "yaml"))["status"]
    assert status["conditions"][0]["status"] == "True"


def test_patch_label_and_select(kubectl, tmp_path):
    _apply_widget(kubectl, tmp_path, "gold", 2)
    _apply_widget(kubectl, tmp_path, "plain", 2)
    kubectl("patch", "widget", "gold", "--type=merge", "-p", '{"spec":{"size":5}}')
    kubectl("label", "widget", "gold", "tier=gold")
    selected = kubectl("get", "widgets", "-l", "tier=gold", "-o", "name").split()
    assert selected == ["widget.contract.example.com/gold"]
    others = kubectl("get", "widgets", "-l", "tier!=gold", "-o", "name").split()
    assert "widget.contract.example.com/plain" in others and len(others) == 1
    gold = yaml.safe_load(kubectl("get", "widget", "gold", "-o", "yaml"))
    assert gold["spec"]["size"] == 5 and gold["metadata"]["generation"] == 2


def test_delete_with_finalizer_waits_for_its_removal(kubectl, tmp_path):
    _apply_widget(kubectl, tmp_path, "held", 2)
    kubectl(
        "patch",
        "widget",
        "held",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":["contract.example.com/hold"]}}',
    )
    kubectl("delete", "widget", "held", "--wait=false")
    terminating: dict[str, Any] = yaml.safe_load(kubectl("get", "widget", "held", "-o", "yaml"))
    assert terminating["metadata"]["deletionTimestamp"]
    kubectl(
        "patch",
        "widget",
        "held",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
    )
    gone = kubectl.run("get", "widget", "held")
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_diff_leaves_the_object_untouched(kubectl, tmp_path):
    manifest = _apply_widget(kubectl, tmp_path, "diffed", 2)
    before = yaml.safe_load(kubectl("get", "widget", "diffed", "-o", "yaml"))
    manifest.write_text(CR.format(name="diffed", size=9))
    diff = kubectl.run("diff", "-f", str(manifest))
    assert diff.returncode == 1, diff.stderr
    assert "+  size: 9" in diff.stdout and "-  size: 2" in diff.stdout
    after = yaml.safe_load(kubectl("get", "widget", "diffed", "-o", "yaml"))
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["spec"]["size"] == 2


def test_configmaps_apply_and_protobuf_generators_get_advice(kubectl, tmp_path):
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm1}\ndata: {k: v}\n")
    kubectl("apply", "-f", str(manifest))
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm1}\ndata: {k: w}\n")
    assert "configured" in kubectl("apply", "-f", str(manifest))
    assert kubectl("get", "configmap", "cm1", "-o", "jsonpath={.data.k}") == "w"
    generated = kubectl.run("create", "configmap", "gen", "--from-literal=a=b")
    assert generated.returncode != 0 and "kubectl apply -f" in generated.stderr


def test_secret_generators_send_protobuf_the_emulator_reads(kubectl):
    # `kubectl create secret` (like Helm's release storage) sends a protobuf Secret.
    kubectl("create", "secret", "generic", "gen", "--from-literal=api-key=s3cret")
    secret = yaml.safe_load(kubectl("get", "secret", "gen", "-o", "yaml"))
    assert secret["data"] == {"api-key": base64.b64encode(b"s3cret").decode()}
    kubectl("delete", "secret", "gen")
    assert kubectl.run("get", "secret", "gen").returncode != 0


def test_apply_rejects_a_typo_in_a_manifest(kubectl, tmp_path):
    manifest = tmp_path / "typo.yaml"
    manifest.write_text(CR.format(name="typo", size=2).replace("color: red", "colour: red"))
    applied = kubectl.run("apply", "-f", str(manifest))
    assert applied.returncode != 0 and 'unknown field "spec.colour"' in applied.stderr
    assert kubectl.run("get", "widget", "typo").returncode != 0


INSTALL = """\
apiVersion: v1
kind: ServiceAccount
metadata: {{name: op}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: op-{suffix}}}
rules: [{{apiGroups: [""], resources: [configmaps], verbs: [get]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: op}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op-{suffix}}}
subjects: [{{kind: ServiceAccount, name: op}}]
---
apiVersion: v1
kind: Service
metadata: {{name: op}}
spec: {{ports: [{{port: 8080, name: metrics}}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: op}}
spec:
  selector: {{matchLabels: {{app: op}}}}
  template:
    metadata: {{labels: {{app: op}}}}
    spec:
      containers:
      - name: manager
        image: op:{tag}
        env: [{{name: A, value: "1"}}]
      - name: sidecar
        image: side:1
"""


def test_install_manifests_apply_and_reapply(kubectl, tmp_path, namespace):
    manifest = tmp_path / "install.yaml"
    manifest.write_text(INSTALL.format(suffix=namespace, tag="v1"))
    out = kubectl("apply", "-f", str(manifest))
    assert out.count("created") == 5
    manifest.write_text(INSTALL.format(suffix=namespace, tag="v2"))
    again = kubectl("apply", "-f", str(manifest))
    assert "deployment.apps/op configured" in again and "serviceaccount/op unchanged" in again
    deployment = yaml.safe_load(kubectl("get", "deployment", "op", "-o", "yaml"))
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("manager", "op:v2"),
        ("sidecar", "side:1"),
    ]
    assert deployment["metadata"]["generation"] == 2
    kubectl("delete", "-f", str(manifest))


RBAC = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {reader}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {stranger}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {reader}-metrics
rules:
- nonResourceURLs: ["/metrics"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {reader}-metrics
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {reader}-metrics
subjects:
- kind: ServiceAccount
  name: {reader}
  namespace: {namespace}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {reader}-configmaps
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  resourceNames: ["settings"]
  verbs: ["get", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {reader}-configmaps
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {reader}-configmaps
subjects:
- kind: ServiceAccount
  name: {reader}
  namespace: {namespace}
"""


def _review(kubectl: Kubectl, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    group = "authentication.k8s.io" if kind == "TokenReview" else "authorization.k8s.io"
    body = {"apiVersion": f"{group}/v1", "kind": kind, "spec": spec}
    status: dict[str, Any] = yaml.safe_load(
        kubectl("create", "-f", "-", "-o", "yaml", stdin=yaml.safe_dump(body))
    )["status"]
    return status


def test_service_account_tokens_are_reviewed_and_authorized_from_rbac_objects(
    kubectl: Kubectl, namespace: str
) -> None:
    kubectl("apply", "-f", "-", stdin=RBAC.format(reader="reader", stranger="stranger",
                                                 namespace=namespace))  # fmt: skip
    token = kubectl("create", "token", "reader", "--duration=1h").strip()
    stranger_token = kubectl("create", "token", "stranger").strip()
    assert token and token != stranger_token

    reviewed = _review(kubectl, "TokenReview", {"token": token})
    user = f"system:serviceaccount:{namespace}:reader"
    assert reviewed["authenticated"] is True
    assert reviewed["user"]["username"] == user
    assert f"system:serviceaccounts:{namespace}" in reviewed["user"]["groups"]
    assert _review(kubectl, "TokenReview", {"token": "forged"})["authenticated"] is False

    def allowed(who: str, **attributes: Any) -> bool:
        key = "nonResourceAttributes" if "path" in attributes else "resourceAttributes"
        status = _review(kubectl, "SubjectAccessReview", {"user": who, key: attributes})
        return bool(status["allowed"])

    stranger = f"system:serviceaccount:{namespace}:stranger"
    assert allowed(user, verb="get", path="/metrics")
    assert not allowed(user, verb="get", path="/metrics/extra")
    assert not allowed(stranger, verb="get", path="/metrics")
    cm = {"group": "", "resource": "configmaps", "namespace": namespace}
    assert allowed(user, verb="get", name="settings", **cm)
    assert not allowed(user, verb="get", name="other", **cm)
    assert not allowed(user, verb="delete", name="settings", **cm)
    assert not allowed(user, verb="get", name="settings", **{**cm, "namespace": "elsewhere"})

    # A token lives only as long as its ServiceAccount.
    kubectl("delete", "serviceaccount", "reader")
    assert _review(kubectl, "TokenReview", {"token": token})["authenticated"] is False
    failed = kubectl.run("create", "token", "reader")
    assert failed.returncode != 0 and "not found" in failed.stderr
