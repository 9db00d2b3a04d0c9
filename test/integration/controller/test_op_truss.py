"""trussConfig CRs: real truss pushes (child processes) into the Baseten simulator."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from baseten_operator.truss.naming import deployment_name
from testsupport.operator_harness import (
    OperatorHarness,
    is_ready,
)
from testsupport.polling import wait_for

pytestmark = pytest.mark.integration

SETUP = "#!/bin/bash\nset -e\necho 'installing weights'\n"
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
    "runtime": {"predictConcurrency": 16},
    "modelMetadata": {"tags": ["openai-compatible"], "exampleModelInput": {"prompt": "hi"}},
    "environmentVariables": {"DD_SITE": "us5.datadoghq.com"},
    "setupScript": {"configMapRef": {"name": "setup", "key": "setup.sh"}},
}
PUSH_TIMEOUT = 40.0
# The deployment name's argument in the two push mutations (new model / new version).
NAME_ARGS = ("version_name", "name")
NAME = re.compile(r"^depl-vllm-0\.16\.0-[0-9a-f]{8}$")


def truss_spec(model_name: str, config: dict[str, Any], env: str = "production") -> dict[str, Any]:
    return {
        "modelName": model_name,
        "trussConfig": copy.deepcopy(config),
        # A minimum of one replica: the pushed deployment stays ACTIVE (not SCALED_TO_ZERO).
        "environment": {"name": env, "autoscaling": {"minReplicas": 1}},
    }


def pushes_of(harness: OperatorHarness, deployment: str) -> list[dict[str, Any]]:
    """Push mutations the simulator accepted for this deployment name."""
    return [
        e
        for e in harness.sim.audit_log()
        if e["endpoint"].startswith("graphql:")
        and deployment in ((e["body"] or {}).get("args", {}).get(arg) for arg in NAME_ARGS)
    ]


def ready_on(harness: OperatorHarness, namespace: str, name: str, source: str) -> dict[str, Any]:
    return harness.wait_status(
        namespace,
        name,
        lambda cr: is_ready(cr) and (cr.get("status") or {}).get("sourceDeploymentName") == source,
        timeout=PUSH_TIMEOUT,
        what=f"Ready on {source}",
    )


def test_push_promote_config_change_and_configmap_edit(
    harness: OperatorHarness, namespace: str
) -> None:
    harness.create_configmap(namespace, "setup", {"setup.sh": SETUP})
    harness.create_model_cr(namespace, "llm", truss_spec("truss-llm", TRUSS_CONFIG))
    first = deployment_name(TRUSS_CONFIG, SETUP)
    assert NAME.match(first)

    cr = ready_on(harness, namespace, "llm", first)
    status = cr["status"]
    assert status["deploymentStatus"] == "ACTIVE"
    assert status["trussPushStatus"] == "TRUSS_PUSH_DONE"
    assert status["activeDeploymentName"] == first
    assert status["trussConfigHash"] == first.rsplit("-", 1)[1]
    assert harness.wait_event(namespace, "llm", "TrussPushStarted") == (
        f"Creating model 'truss-llm' and deployment '{first}' via truss push"
    )
    harness.wait_event(namespace, "llm", "DeploymentPromoted", contains=f"Promoted {first}")
    model_id = status["modelID"]
    assert harness.sim.engine.find_model_id("truss-llm") == model_id
    pushed = harness.deployment(model_id, first)
    assert pushed is not None
    files = harness.sim.uploaded_files(pushed["id"])
    assert files["data/setup.sh"] == SETUP
    config = yaml.safe_load(files["config.yaml"])
    assert config["model_name"] == "truss-llm"
    assert config["python_version"] == "py311"
    assert config["resources"]["accelerator"] == "L4"
    assert config["resources"]["use_gpu"] is True
    assert config["base_image"]["image"] == "registry.example.com/team/vllm:0.16.0"
    assert config["docker_server"] == {
        "start_command": "sh -c 'bash /app/data/setup.sh'",
        "readiness_endpoint": "/health",
        "liveness_endpoint": "/health",
        "predict_endpoint": "/v1/completions",
        "server_port": 8000,
    }
    assert config["runtime"]["predict_concurrency"] == 16
    assert config["model_metadata"]["tags"] == ["openai-compatible"]
    assert config["model_metadata"]["example_model_input"] == {"prompt": "hi"}
    assert config["environment_variables"] == {"DD_SITE": "us5.datadoghq.com"}
    assert len(pushes_of(harness, first)) == 1

    # A config change: a new name, a new push, promoted.
    changed = copy.deepcopy(TRUSS_CONFIG)
    changed["runtime"]["predictConcurrency"] = 32
    harness.patch_spec(namespace, "llm", {"trussConfig": {"runtime": {"predictConcurrency": 32}}})
    second = deployment_name(changed, SETUP)
    assert second != first and NAME.match(second)
    ready_on(harness, namespace, "llm", second)
    harness.wait_event(
        namespace, "llm", "TrussPushStarted", contains=f"Creating deployment '{second}'"
    )
    assert len(pushes_of(harness, second)) == 1
    assert harness.environment(model_id, "production")["current_deployment"]["name"] == second

    # A ConfigMap edit changes the setup script, hence the name: pushed anew.
    edited = SETUP + "echo 'warm cache'\n"
    harness.update_configmap(namespace, "setup", {"setup.sh": edited})
    third = deployment_name(changed, edited)
    assert third not in (first, second)
    ready_on(harness, namespace, "llm", third)
    third_deployment = harness.deployment(model_id, third)
    assert third_deployment is not None
    assert harness.sim.uploaded_files(third_deployment["id"])["data/setup.sh"] == edited
    assert len(pushes_of(harness, third)) == 1
    assert len(pushes_of(harness, first)) == 1


def test_same_config_in_two_environments_pushes_once(
    harness: OperatorHarness, namespace: str
) -> None:
    config = copy.deepcopy(TRUSS_CONFIG)
    config["setupScript"] = {"inline": "echo shared\n"}
    name = deployment_name(config, "echo shared\n")
    # The model exists: both CRs resolve it, and neither push creates a second model.
    harness.sim.seed_model("truss-shared")
    harness.create_model_cr(
        namespace, "shared-staging", truss_spec("truss-shared", config, "staging")
    )
    harness.create_model_cr(namespace, "shared-prod", truss_spec("truss-shared", config))

    staging = ready_on(harness, namespace, "shared-staging", name)
    production = ready_on(harness, namespace, "shared-prod", name)
    assert staging["status"]["modelID"] == production["status"]["modelID"]
    assert len(pushes_of(harness, name)) == 1
    launched = [
        text
        for cr in ("shared-staging", "shared-prod")
        for text in harness.event_messages(namespace, cr, "TrussPushStarted")
    ]
    assert launched == [f"Creating deployment '{name}' via truss push"]
    assert (
        sum(
            harness.event_count(namespace, cr, "TrussPushStarted")
            for cr in ("shared-staging", "shared-prod")
        )
        == 1
    )
    model_id = staging["status"]["modelID"]
    for env in ("staging", "production"):
        current = harness.environment(model_id, env)["current_deployment"]["name"]
        assert current == name or current.startswith(f"{name}.")


def test_failing_push_is_reported_and_retried(harness: OperatorHarness, namespace: str) -> None:
    config = copy.deepcopy(TRUSS_CONFIG)
    config["setupScript"] = {"inline": "echo flaky\n"}
    name = deployment_name(config, "echo flaky\n")
    harness.sim.seed_model("truss-flaky")
    # The first push's deployment creation fails on Baseten's side.
    harness.sim.inject_fault("graphql:create_model_version_from_truss", "5xx", count=1)
    harness.create_model_cr(namespace, "flaky", truss_spec("truss-flaky", config))

    failed = harness.wait_event(namespace, "flaky", "TrussPushFailed", timeout=PUSH_TIMEOUT)
    assert failed.startswith(f"Truss push for '{name}' failed (attempt 1), retrying in ")
    seen = harness.wait_seen(
        namespace,
        "flaky",
        lambda cr: (cr.get("status") or {}).get("deploymentStatus") == "FAILED"
        and f"truss push failed for {name} (attempt 1): "
        in (cr.get("status") or {}).get("message", ""),
        what="push failure in status",
    )
    assert seen["status"]["trussPushStatus"] == "TRUSS_PUSH_FAILED"
    assert seen["status"]["trussPushFailureCount"] == 1
    assert "; next retry at " in seen["status"]["message"]
    ready = ready_on(harness, namespace, "flaky", name)
    # The retry succeeded: the failure is behind it, and it never was a deployment's.
    for field in (
        "trussPushFailureCount",
        "trussPushLastError",
        "trussPushNextRetryTime",
        "firstDeploymentFailureTime",
        "deploymentRetryCount",
        "nextRetryTime",
    ):
        assert field not in ready["status"], field
    assert len(harness.event_messages(namespace, "flaky", "TrussPushStarted")) >= 1
    assert len(pushes_of(harness, name)) == 1


def test_push_of_an_operator_that_died_is_pushed_again_at_once_by_the_next(
    harness: OperatorHarness, namespace: str
) -> None:
    script = SETUP + "# a script of its own: a deployment name no other test pushes\n"
    expected = deployment_name(TRUSS_CONFIG, script)
    harness.create_configmap(namespace, "setup", {"setup.sh": script})
    # The dying operator's push hangs in truss's first call, so it never creates anything.
    harness.sim.inject_fault("graphql:truss_validation", "latency", 1, seconds=6000)
    harness.create_model_cr(namespace, "stale", truss_spec("it-truss-stale", TRUSS_CONFIG))
    harness.wait_status(
        namespace,
        "stale",
        lambda cr: (cr.get("status") or {}).get("trussPushStatus") == "TRUSS_PUSHING",
        what="the first push on record",
    )
    wait_for(lambda: harness.sim.faults.pending("graphql:truss_validation") == 0, timeout=20.0)
    harness.restart_operator()  # TRUSS_PUSHING stays on record; nothing runs the push now

    interrupted = harness.wait_event(namespace, "stale", "TrussPushFailed", timeout=PUSH_TIMEOUT)
    assert interrupted == (
        f"Truss push for '{expected}' is on record but runs nowhere "
        "(the replica that started it stopped), retrying"
    )
    ready_on(harness, namespace, "stale", expected)
    assert len(pushes_of(harness, expected)) == 1  # only the second push reached Baseten
