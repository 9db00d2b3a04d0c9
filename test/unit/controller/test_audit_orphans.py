"""Audit of section 8: every sibling CR's source is protected, trussConfig siblings included."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from baseten_operator.baseten.models import AutoscalingSettingsV1
from baseten_operator.truss.naming import deployment_name

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SCRIPT = "#!/bin/bash\necho weights\n"
TRUSS: dict[str, Any] = {
    "resources": {"accelerator": "L4"},
    "baseImage": {"image": "registry.example.com/team/vllm:0.17.0"},
    "dockerServer": {
        "startCommand": "sh -c 'bash /app/data/setup.sh'",
        "readinessEndpoint": "/health",
        "livenessEndpoint": "/health",
        "predictEndpoint": "/v1/completions",
        "serverPort": 8000,
    },
    "setupScript": {"configMapRef": {"name": "setup", "key": "setup.sh"}},
}


def steady_with_cleanup(h) -> None:
    h.steady_world()
    h.create(orphanDeploymentCleanup={"intervalMinutes": 10, "scaleToZero": True})


def unattached(h, name: str) -> None:
    h.baseten.add_deployment(
        name=name,
        status="ACTIVE",
        created_at=NOW - timedelta(days=3),
        autoscaling_settings=AutoscalingSettingsV1(min_replica=1),
    )


def sibling(namespace: str, mode: str = "Observe") -> dict[str, Any]:
    # Never reconciled in Reconcile mode: nothing in its status says what it will promote.
    return {
        "metadata": {"namespace": namespace, "name": "staging"},
        "spec": {
            "modelName": "my-llm",
            "mode": mode,
            "trussConfig": TRUSS,
            "environment": {"name": "staging"},
        },
    }


def test_truss_sibling_without_status_protects_the_deployment_its_spec_names(h) -> None:
    steady_with_cleanup(h)
    h.configmaps.add("setup", {"setup.sh": SCRIPT}, namespace="team-b")
    expected = deployment_name(TRUSS, SCRIPT)
    unattached(h, expected)
    unattached(h, "leftover")
    h.siblings = [sibling("team-b")]
    h.run()
    assert h.event("OrphanDeploymentsScaledIn")[1] == "Scaled in 1 orphan deployments: leftover"


def test_truss_sibling_script_is_read_from_its_own_namespace(h) -> None:
    steady_with_cleanup(h)
    h.configmaps.add("setup", {"setup.sh": SCRIPT}, namespace="team-b")
    h.configmaps.add("setup", {"setup.sh": "something else"})  # this CR's namespace
    unattached(h, deployment_name(TRUSS, SCRIPT))
    h.siblings = [sibling("team-b", mode="Pause")]
    h.run()
    assert h.baseten.called("update_deployment_autoscaling") == []


def test_unreadable_truss_sibling_falls_back_to_its_status(h) -> None:
    steady_with_cleanup(h)
    unattached(h, "pushed-before")
    unattached(h, "leftover")
    broken = sibling("team-b")  # its ConfigMap is missing
    broken["status"] = {"sourceDeploymentName": "pushed-before"}
    h.siblings = [broken]
    h.run()
    assert h.event("OrphanDeploymentsScaledIn")[1] == "Scaled in 1 orphan deployments: leftover"
