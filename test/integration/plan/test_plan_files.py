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

from baseten_operator.truss.naming import deployment_name
from testsupport.plan_world import (
    PUSH_MUTATIONS,
    PlanWorld,
    expected_writes,
    made_writes,
    manifest,
    only_gets,
)

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


# --- errors: exit 1 with a message, never "no changes" or a blocker -----------------------


def steady_manifest(world: PlanWorld, namespace: str, tmp_path: Path) -> Path:
    model = f"{namespace}-m"
    world.sim.seed_deployment(world.sim.seed_model(model)["id"], "v1")
    spec = {"modelName": model, "sourceDeploymentName": "v1", "environment": {"name": "p"}}
    return write(tmp_path / "m.yaml", manifest(namespace, "m", spec))


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("bad key", "HTTP 401: "),
        ("throttled", "rate limited on GET /v1/models: retry after 120s"),
        ("server error", "HTTP 503: "),
    ],
)
def test_a_failed_baseten_read_is_an_error(
    world: PlanWorld,
    namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fault: str,
    error: str,
) -> None:
    path = steady_manifest(world, namespace, tmp_path)
    if fault == "bad key":
        monkeypatch.setenv("BASETEN_API_KEY", "not-a-key-baseten-knows")
    elif fault == "throttled":  # asks for longer than the call's deadline
        world.sim.inject_fault("list_models", "429", 1, retry_after=120)
    else:  # retried (a GET), then given up
        world.sim.inject_fault("list_models", "5xx", 4, status=503)
    code, document, seen = world.plan("-f", str(path), "--detailed-exitcode")
    assert code == 1 and only_gets(seen)
    (item,) = document["items"]
    assert item["actions"] == []
    assert item["error"].startswith(f"a Baseten read failed, so this plan is incomplete: {error}")
    last_line = capsys.readouterr().err.splitlines()[-1]  # after the client's warnings
    assert last_line.startswith(
        f"baseten-operator plan: 1 of 1 BasetenModels could not be planned; {namespace}/m: "
    )


def test_a_missing_file_is_an_error(world: PlanWorld, tmp_path: Path, capsys: Any) -> None:
    code, table = world.plan_table("-f", str(tmp_path / "nope.yaml"))
    assert (code, table) == (1, "")
    err = capsys.readouterr().err
    assert err == f"baseten-operator plan: {tmp_path / 'nope.yaml'}: no such file or directory\n"


def test_no_api_key_is_an_error(
    world: PlanWorld,
    namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = steady_manifest(world, namespace, tmp_path)
    monkeypatch.delenv("BASETEN_API_KEY")
    code, table = world.plan_table("-f", str(path), "--detailed-exitcode")
    assert (code, table) == (1, "")
    assert capsys.readouterr().err == (
        "baseten-operator plan: BASETEN_API_KEY is not set or empty: "
        "the operator needs a Baseten API key\n"
    )
