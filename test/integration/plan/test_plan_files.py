"""Files mode (`-f`): manifests from files, directories and stdin, with and without the cluster."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from plan_world import PUSH_MUTATIONS, PlanWorld, expected_writes, made_writes, manifest, only_gets

from baseten_operator.truss.naming import deployment_name

pytestmark = pytest.mark.integration

SETUP = "#!/bin/bash\necho 'installing weights'\n"
TRUSS_CONFIG: dict[str, Any] = {
    "pythonVersion": "py311",
    "resources": {"accelerator": "L4", "useGpu": True},
    "baseImage": {"image": "registry.example.com/team/vllm:0.16.0"},
    "dockerServer": {
        "startCommand": "sh -c 'bash /app/data/setup.sh'",
        "readinessEndpoint": "/health",
        "livenessEndpoint": "/health",
        "predictEndpoint": "/v1/completions",
        "serverPort": 8000,
    },
    "setupScript": {"configMapRef": {"name": "setup", "key": "setup.sh"}},
}


def configmap(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "setup", "namespace": namespace},
        "data": {"setup.sh": SETUP},
    }


def write(path: Path, *documents: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_truss_config_not_yet_pushed_plans_the_push_the_pass_launches(
    world: PlanWorld, namespace: str, tmp_path: Path
) -> None:
    model = f"{namespace}-truss"
    cr_spec = {
        "modelName": model,
        "trussConfig": TRUSS_CONFIG,
        "environment": {"name": "production", "autoscaling": {"minReplicas": 1}},
    }
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ignored"}}
    path = write(
        tmp_path / "m.yaml", manifest(namespace, "m", cr_spec), configmap(namespace), service
    )
    # The ConfigMap comes from the input: no cluster access at all.
    code, document, seen = world.plan("-f", str(path), "--detailed-exitcode")
    assert code == 2 and only_gets(seen)
    (item,) = document["items"]
    name = deployment_name(TRUSS_CONFIG, SETUP)
    assert item["actions"] == [
        {"type": "push", "deployment": name, "model": model, "createsModel": True}
    ]

    world.create_configmap(namespace, "setup", {"setup.sh": SETUP})
    world.create_cr(namespace, "m", cr_spec)
    since = len(world.sim.audit_log())
    assert world.next_pass(namespace, "m") == []  # the push runs in the background
    (push,) = world.wait_push_audited(name, since)
    assert push["endpoint"] == PUSH_MUTATIONS[0]  # a new model
    assert push["body"]["args"]["name"] == model


def test_truss_config_already_pushed_is_not_pushed_again(
    world: PlanWorld, namespace: str, tmp_path: Path
) -> None:
    model = f"{namespace}-truss"
    model_id = world.sim.seed_model(model)["id"]
    name = deployment_name(TRUSS_CONFIG, SETUP)
    world.sim.seed_deployment(model_id, name)
    cr_spec = {"modelName": model, "trussConfig": TRUSS_CONFIG, "environment": {"name": "staging"}}
    world.create_configmap(namespace, "setup", {"setup.sh": SETUP})
    world.create_cr(namespace, "m", cr_spec)
    path = write(tmp_path / "m.yaml", manifest(namespace, "m", cr_spec))
    # The ConfigMap is not in the input: read from the cluster.
    code, document, seen = world.plan(
        "-f", str(path), "--cluster", "--kubeconfig", str(world.kubeconfig)
    )
    assert code == 0 and only_gets(seen)
    (item,) = document["items"]
    assert item["source"] == {"deployment": name, "exists": True}
    assert [a["type"] for a in item["actions"]] == ["create-environment"]
    assert expected_writes([item], model_id) == made_writes(world.next_pass(namespace, "m"))


def test_directory_and_stdin_inputs_with_invalid_spec_and_missing_model(
    world: PlanWorld, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "nested").mkdir()
    invalid = manifest(namespace, "bad", {"modelName": "x", "environment": {"name": "p"}})
    missing = manifest(
        namespace,
        "missing",
        {
            "modelName": f"{namespace}-nope",
            "sourceDeploymentName": "v1",
            "environment": {"name": "p"},
        },
    )
    write(tmp_path / "nested" / "bad.yaml", invalid)
    (tmp_path / "README.md").write_text("not a manifest")
    monkeypatch.setattr(sys, "stdin", io.StringIO(yaml.safe_dump(missing)))
    code, document, seen = world.plan("-f", str(tmp_path), "-f", "-", "--detailed-exitcode")
    assert code == 0 and only_gets(seen)
    bad, gone = document["items"]
    assert bad["name"] == "bad" and bad["actions"] == []
    (problem,) = bad["blockers"]
    assert problem.startswith("invalid spec") or "spec" in problem, problem
    assert gone["actions"] == [] and any(f"{namespace}-nope" in b for b in gone["blockers"])


def test_destroy_plans_the_deletion_of_a_manifest(
    world: PlanWorld, namespace: str, tmp_path: Path
) -> None:
    model = f"{namespace}-m"
    model_id = world.sim.seed_model(model)["id"]
    world.sim.seed_deployment(model_id, "v1")
    cr_spec = {
        "modelName": model,
        "sourceDeploymentName": "v1",
        "environment": {"name": "production"},
        "deletionPolicy": "Delete",
    }
    path = write(tmp_path / "m.yaml", manifest(namespace, "m", cr_spec))
    code, document, seen = world.plan("-f", str(path), "--destroy", "--detailed-exitcode")
    assert code == 2 and only_gets(seen)
    (item,) = document["items"]
    assert item["actions"] == [
        {
            "type": "delete-model",
            "model": model,
            "modelId": model_id,
            "deletionPolicy": "Delete",
            "guardrails": "not checked",
        }
    ]


def test_the_installed_command_prints_a_table(
    world: PlanWorld, namespace: str, tmp_path: Path
) -> None:
    """The real executable, as CI runs it: a read-only key is enough."""
    model = f"{namespace}-m"
    model_id = world.sim.seed_model(model)["id"]
    world.sim.seed_deployment(model_id, "v1")
    cr = manifest(
        namespace,
        "m",
        {"modelName": model, "sourceDeploymentName": "v1", "environment": {"name": "production"}},
    )
    path = write(tmp_path / "m.yaml", cr)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "baseten_operator.cli",
            "plan",
            "-f",
            str(path),
            "--detailed-exitcode",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert result.returncode == 2, result.stderr
    assert f"{namespace}/m  model={model}  environment=production  mode=Reconcile" in result.stdout
    assert "1. create environment production" in result.stdout
    assert result.stdout.rstrip().endswith("Plan: 1 actions on 1 of 1 BasetenModels.")
