"""Audit of section 5: pre-push validation and the push backoff's owner."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from baseten_operator.runtime.controller import TerminalError
from baseten_operator.truss.naming import deployment_name

SCRIPT = "#!/bin/bash\necho ready\n"
DOCKER_SERVER = {
    "startCommand": "sh -c 'bash /app/data/setup.sh'",
    "readinessEndpoint": "/health",
    "livenessEndpoint": "/health",
    "predictEndpoint": "/v1/completions",
    "serverPort": 8000,
}


def truss_spec(docker_server: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "resources": {"accelerator": "L4"},
        "baseImage": {"image": "registry.example.com/team/vllm:0.16.0"},
        "dockerServer": copy.deepcopy(DOCKER_SERVER if docker_server is None else docker_server),
        "setupScript": {"inline": SCRIPT},
    }
    return {
        "modelName": "my-llm",
        "trussConfig": config,
        "environment": {"name": "production"},
        **fields,
    }


def without(field: str, **extra: Any) -> dict[str, Any]:
    server = {k: v for k, v in DOCKER_SERVER.items() if k != field}
    return {**server, **extra}


@pytest.mark.parametrize(
    ("docker_server", "problem"),
    [
        (without("readinessEndpoint"), "trussConfig.dockerServer.readinessEndpoint is required"),
        (without("livenessEndpoint"), "trussConfig.dockerServer.livenessEndpoint is required"),
        (without("predictEndpoint"), "trussConfig.dockerServer.predictEndpoint is required"),
        (without("serverPort"), "trussConfig.dockerServer.serverPort is required"),
        # noBuild spares the start command only, never the probes (truss 0.18's DockerServer)
        (
            without("readinessEndpoint", noBuild=True),
            "trussConfig.dockerServer.readinessEndpoint is required",
        ),
        # an empty string is left out of config.yaml: missing for truss
        (
            {**DOCKER_SERVER, "livenessEndpoint": ""},
            "trussConfig.dockerServer.livenessEndpoint is required",
        ),
        (
            without("startCommand"),
            "trussConfig.dockerServer.startCommand is required by truss unless noBuild is true",
        ),
        (
            without("startCommand", noBuild=False),
            "trussConfig.dockerServer.startCommand is required by truss unless noBuild is true",
        ),
    ],
)
def test_config_truss_would_refuse_fails_without_a_push(
    h, docker_server: dict[str, Any], problem: str
) -> None:
    h.create(truss_spec(docker_server), status={"activeDeploymentName": "old"})
    with pytest.raises(TerminalError):
        h.run()
    assert h.pusher.launched == []
    assert h.word() == "FAILED"
    assert h.message().startswith(f"active: old | truss push failed: {problem}")
    reason, text = h.event("TrussPushFailed")
    assert reason == "Warning"
    prepare = rf"Failed to prepare truss push for 'depl-vllm-[^']+': {re.escape(problem)}"
    assert re.match(prepare, text)
    assert h.status().get("trussPushStatus") is None
    assert h.baseten.writes == []


def test_no_build_needs_no_start_command(h) -> None:
    h.create(truss_spec(without("startCommand", noBuild=True)))
    h.run()
    assert len(h.pusher.launched) == 1
    assert h.word() == "DEPLOYING"


def test_model_name_truss_cannot_carry_is_refused_before_the_push(h) -> None:
    h.create(truss_spec(modelName="bob's model"))
    with pytest.raises(TerminalError):
        h.run()
    assert h.pusher.launched == []
    assert h.word() == "FAILED"
    assert h.message().startswith('truss push failed: modelName "bob\'s model" contains')


def test_existing_deployment_is_used_whatever_truss_would_say_now(h) -> None:
    # A deployment pushed earlier (say by the Go operator) needs no push: nothing to refuse.
    spec = truss_spec(without("readinessEndpoint"))
    h.create(spec)
    h.baseten.add_model()
    h.baseten.add_deployment(name=deployment_name(spec["trussConfig"], SCRIPT))
    h.run()
    assert h.pusher.launched == []
    assert h.status()["trussPushStatus"] == "TRUSS_PUSH_DONE"
    assert "TrussPushFailed" not in h.reasons()


def test_new_config_is_pushed_at_once_whatever_the_old_deployment_backoff(h, iso_time) -> None:
    """Section 4: the bookkeeping belongs to one failing deployment; the spec moved on."""
    h.baseten.add_model()
    now = h.clock.now()
    h.create(
        truss_spec(),
        status={
            "modelID": "m1",
            "sourceDeploymentName": "depl-vllm-0.15.0-00000000",
            "trussConfigHash": "00000000",
            "trussPushStatus": "TRUSS_PUSH_DONE",
            "deploymentStatus": "BUILD_FAILED",
            "firstDeploymentFailureTime": iso_time(now - 3600),
            "deploymentRetryCount": 5,
            "nextRetryTime": iso_time(now + 1200),
        },
    )
    assert h.run().requeue_after == 10
    (request,) = h.pusher.launched
    assert request.deployment_name.startswith("depl-vllm-0.16.0-")
    status = h.status()
    assert status["trussPushStatus"] == "TRUSS_PUSHING"
    assert "nextRetryTime" not in status
    assert "deploymentRetryCount" not in status
    assert "firstDeploymentFailureTime" not in status


def test_failed_push_of_the_same_name_still_backs_off(h) -> None:
    h.create(truss_spec())
    h.run()
    name = h.pusher.launched[0].deployment_name
    h.pusher.finish("default/my-model", name, error="registry timeout")
    assert h.run().requeue_after == 120
    h.clock.advance(60)
    assert h.run().requeue_after == 60
    assert len(h.pusher.launched) == 1
