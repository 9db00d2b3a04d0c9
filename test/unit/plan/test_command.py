"""The plan command's flags: the default namespace (kubectl's), and usage errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from baseten_operator.cli import main
from baseten_operator.plan import inputs
from baseten_operator.plan.inputs import context_namespace


def kubeconfig(path: Path, namespace: str | None) -> Path:
    context: dict[str, Any] = {"cluster": "c", "user": "u"}
    if namespace is not None:
        context["namespace"] = namespace
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "ctx", "context": context}],
                "current-context": "ctx",
            }
        )
    )
    return path


@pytest.fixture
def no_kube_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(inputs, "SERVICE_ACCOUNT_NAMESPACE", tmp_path / "no-such-file")


def test_the_namespace_defaults_to_the_kubeconfig_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_kube_config: None
) -> None:
    assert context_namespace(str(kubeconfig(tmp_path / "a", "team-x"))) == "team-x"
    assert context_namespace(str(kubeconfig(tmp_path / "b", None))) == "default"
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "c", "from-env")))
    assert context_namespace() == "from-env"


def test_in_a_pod_without_kubeconfig_it_is_the_pods_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_kube_config: None
) -> None:
    assert context_namespace() == "default"
    pod_namespace = tmp_path / "namespace"
    pod_namespace.write_text("argocd-apps\n")
    monkeypatch.setattr(inputs, "SERVICE_ACCOUNT_NAMESPACE", pod_namespace)
    assert context_namespace() == "argocd-apps"


def test_a_manifest_without_namespace_is_planned_in_the_context_namespace(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_kube_config: None,
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "config", "team-x")))
    monkeypatch.setenv("BASETEN_API_KEY", "read-only")
    manifest = {
        "apiVersion": "models.baseten.com/v1alpha1",
        "kind": "BasetenModel",
        "metadata": {"name": "m"},
        # Invalid (no source): planned without a single Baseten call.
        "spec": {"modelName": "llama", "environment": {"name": "production"}},
    }
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(manifest))
    assert main(["plan", "-f", str(path), "-o", "json"]) == 0
    (item,) = json.loads(capsys.readouterr().out)["items"]
    assert item["namespace"] == "team-x"
    assert main(["plan", "-f", str(path), "-o", "json", "-n", "given"]) == 0
    assert json.loads(capsys.readouterr().out)["items"][0]["namespace"] == "given"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give -f PATH or --cluster"),
        (
            ["-f", "x.yaml", "--require-namespace-policy"],
            "--require-namespace-policy needs --cluster: namespace policies are read there",
        ),
    ],
)
def test_usage_errors_exit_1(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", *args]) == 1
    assert capsys.readouterr().err == f"baseten-operator plan: {message}\n"
