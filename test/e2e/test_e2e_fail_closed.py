"""Fail closed, end to end: Baseten answering partial data or a 200 that acknowledges nothing
never deletes a model nor reads as "not found"; oversized input is refused at the door.

The simulator's `omit` and `body` faults make it answer so (sim/baseten/faults.py); each story
clears them once it has seen the operator hold back, and then sees it carry on.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testsupport.e2e.harness import (
    KubectlError,
    Stack,
    basetenmodel,
)
from testsupport.polling import wait_for

pytestmark = pytest.mark.e2e

ANALYSED_ERRORS = {"name": "errors", "errorRatio": {"maxPercent": 2}}

MANY = 100_000  # uses of a fault: it stays until the story clears it


@pytest.fixture
def faults(stack: Stack) -> Iterator[Stack]:
    yield stack
    stack.sim.control("clear_faults")


def idle(stack: Stack, model_id: str) -> None:
    """Wait until the environment's current deployment has scaled to zero."""
    wait_for(
        lambda: stack.sim.environment(model_id, "production")["current_deployment"][
            "active_replica_count"
        ]
        == 0,
        timeout=30,
    )


def test_guardrails_hold_while_baseten_answers_without_replica_counts(faults: Stack) -> None:
    stack = faults
    namespace = stack.new_namespace("e2e-partial")
    model_id, _ = stack.promoted_model(
        namespace,
        "partial",
        # A minute's scale-down delay: the deployment goes idle soon (1.2 s at the e2e scale).
        autoscaling={"minReplicas": 0, "maxReplicas": 1, "scaleDownDelay": 60},
        deletionPolicy="DeleteWithGuardrails",
    )
    idle(stack, model_id)  # complete answers would let the deletion through at once
    stack.sim.control(
        "inject_fault",
        endpoint="list_environments",
        kind="omit",
        count=MANY,
        fields=["environments.*.autoscaling_settings"],
    )

    stack.kubectl.run("delete", "bm", "partial", "-n", namespace, "--wait=false")

    blocked = stack.wait_status(
        namespace,
        "partial",
        lambda s: s.get("deploymentStatus") == "DELETE_BLOCKED",
        what="DELETE_BLOCKED",
    )
    message = (
        "deletion blocked: replica counts of environment production unknown "
        "(Baseten answered without autoscaling_settings)"
    )
    assert blocked["status"]["message"] == message
    event = stack.wait_event(namespace, "partial", "ModelDeleteBlocked")
    assert (event["type"], event["message"]) == ("Warning", message)
    assert stack.sim.api_get(f"/models/{model_id}").status_code == 200

    stack.sim.control("clear_faults")
    stack.kubectl.run("wait", "-n", namespace, "--for=delete", "bm/partial", "--timeout=60s")
    assert stack.sim.api_get(f"/models/{model_id}").status_code == 404


def test_a_delete_answered_with_an_error_body_keeps_the_finalizer(faults: Stack) -> None:
    stack = faults
    namespace = stack.new_namespace("e2e-unacked")
    model_id, _ = stack.promoted_model(
        namespace,
        "unacked",
        autoscaling={"minReplicas": 1, "maxReplicas": 1},
        deletionPolicy="Delete",
    )
    stack.sim.control(
        "inject_fault",
        endpoint="delete_model",
        kind="body",
        count=MANY,
        body={"error": "model is locked"},
    )

    stack.kubectl.run("delete", "bm", "unacked", "-n", namespace, "--wait=false")

    failed = stack.wait_status(
        namespace,
        "unacked",
        lambda s: s.get("deploymentStatus") == "DELETE_FAILED",
        what="DELETE_FAILED",
    )
    assert failed["status"]["message"] == (
        f"failed to delete Baseten model {model_id}: HTTP 200: DELETE /v1/models/{{model_id}} "
        'not acknowledged: Baseten answered {"error": "model is locked"}'
    )
    assert failed["metadata"]["finalizers"] == ["models.baseten.com/finalizer"]
    assert stack.sim.api_get(f"/models/{model_id}").status_code == 200

    stack.sim.control("clear_faults")
    stack.kubectl.run("wait", "-n", namespace, "--for=delete", "bm/unacked", "--timeout=60s")
    assert stack.sim.api_get(f"/models/{model_id}").status_code == 404


def test_a_settings_patch_answered_with_an_error_body_is_a_failure(faults: Stack) -> None:
    stack = faults
    namespace = stack.new_namespace("e2e-patch")
    model_id, _ = stack.promoted_model(
        namespace, "patched", autoscaling={"minReplicas": 1, "maxReplicas": 1}
    )
    stack.sim.control(
        "inject_fault",
        endpoint="update_environment",
        kind="body",
        count=MANY,
        body={"error": "settings locked"},
    )
    stack.sim.control(
        "ui_update_environment",
        model_id=model_id,
        env="production",
        autoscaling_settings={"max_replica": 3},
    )

    failed = stack.wait_status(
        namespace,
        "patched",
        lambda s: s.get("deploymentStatus") == "FAILED",
        what="FAILED after an unacknowledged PATCH",
    )
    assert failed["status"]["message"].endswith(
        "failed to update settings for production: HTTP 200: PATCH "
        "/v1/models/{model_id}/environments/{env_name} not acknowledged: "
        'Baseten answered {"error": "settings locked"}'
    )
    event = stack.wait_event(namespace, "patched", "AutoscalingUpdateFailed")
    assert event["type"] == "Warning"
    assert not any(
        e.get("reason") == "AutoscalingUpdated" for e in stack.kubectl.events(namespace, "patched")
    )

    stack.sim.control("clear_faults")
    wait_for(
        lambda: stack.sim.environment(model_id, "production")["autoscaling_settings"]["max_replica"]
        == 1,
        timeout=30,
    )


def test_a_deployment_listed_without_its_environment_is_never_scaled_in(faults: Stack) -> None:
    stack = faults
    namespace = stack.new_namespace("e2e-orphan")
    model_id, _ = stack.sim.seed_model_with_deployment("orphaned", "build-1")
    leftover = stack.sim.control(
        "seed_deployment",
        model_id=model_id,
        name="leftover-1",
        autoscaling_settings={"min_replica": 1, "max_replica": 1},
    )
    stack.sim.control(
        "inject_fault",
        endpoint="list_deployments",
        kind="omit",
        count=MANY,
        fields=["deployments.*.environment"],
    )
    spec = {
        "modelName": "orphaned",
        "sourceDeploymentName": "build-1",
        "environment": {"name": "production"},
        "orphanDeploymentCleanup": {"intervalMinutes": 10, "scaleToZero": True},
    }
    stack.kubectl.apply(basetenmodel("orphaned", namespace, spec))
    stack.wait_status(
        namespace, "orphaned", lambda s: bool(s.get("lastCleanupTime")), what="a cleanup pass"
    )

    def scaled_in() -> bool:
        return any(
            e["endpoint"] == "update_deployment_autoscaling" and leftover["id"] in e["path"]
            for e in stack.sim.writes_for_model(model_id)
        )

    assert not scaled_in()
    stack.sim.control("clear_faults")
    # The next cleanup (10 minutes, x0.02) sees Baseten say `environment: null`.
    wait_for(scaled_in, timeout=40)


def test_a_failed_source_lookup_is_not_reported_as_not_found(faults: Stack) -> None:
    stack = faults
    namespace = stack.new_namespace("e2e-lookup")
    stack.sim.seed_model_with_deployment("lookup", "build-1")
    stack.sim.control("inject_fault", endpoint="list_deployments", kind="5xx", count=MANY)
    spec = {
        "modelName": "lookup",
        "sourceDeploymentName": "build-1",
        "environment": {"name": "production"},
    }
    stack.kubectl.apply(basetenmodel("lookup", namespace, spec))

    pending = stack.wait_status(
        namespace,
        "lookup",
        lambda s: "unable to check deployment" in (s.get("message") or ""),
        what="unable to check deployment",
    )
    assert pending["status"]["deploymentStatus"] == "PENDING"
    assert pending["status"]["message"] == (
        "unable to check deployment build-1: HTTP 503: injected server error"
    )
    reasons = {e.get("reason") for e in stack.kubectl.events(namespace, "lookup")}
    assert "SourceDeploymentNotFound" not in reasons

    stack.sim.control("clear_faults")
    stack.kubectl.run(
        "wait", "-n", namespace, "--for=condition=Ready", "bm/lookup", "--timeout=60s"
    )


@pytest.mark.parametrize(
    ("spec", "refusal"),
    [
        (
            {"sourceDeploymentName": "s" * 1_000_000},
            "spec.sourceDeploymentName: Too long: may not be more than 255 bytes",
        ),
        (
            {
                "sourceDeploymentName": "build-1",
                "environment": {
                    "name": "production",
                    "autoscaling": {"minReplicas": 3, "maxReplicas": 2},
                },
            },
            "minReplicas must be less than or equal to maxReplicas",
        ),
        # Section 14's rules, as the real API server's CEL evaluates them.
        (
            {
                "sourceDeploymentName": "build-1",
                "promotion": {"analysis": {"metrics": [ANALYSED_ERRORS]}},
            },
            "promotion.analysis needs environment.promotionSettings.rollingDeploy or "
            "rampUpWhilePromoting",
        ),
        (
            {
                "sourceDeploymentName": "build-1",
                "environment": {"name": "production", "promotionSettings": {"rollingDeploy": True}},
                "promotion": {"analysis": {"interval": "20s", "metrics": [ANALYSED_ERRORS]}},
            },
            "interval must be at least 30s",
        ),
        (
            {
                "sourceDeploymentName": "build-1",
                "environment": {"name": "production", "promotionSettings": {"rollingDeploy": True}},
                "promotion": {
                    "analysis": {
                        "metrics": [
                            {"name": "q", "prometheus": {"address": "http://p:9090", "query": "up"}}
                        ]
                    }
                },
            },
            "max or min must be set",
        ),
    ],
)
def test_oversized_or_inconsistent_input_is_refused_by_the_api_server(
    stack: Stack, spec: dict, refusal: str
) -> None:
    namespace = stack.new_namespace("e2e-bounds")
    full = {"modelName": "bounded", "environment": {"name": "production"}, **spec}
    with pytest.raises(KubectlError) as refused:
        stack.kubectl.apply(basetenmodel("bounded", namespace, full))
    assert refusal in str(refused.value)
    assert stack.get_bm(namespace, "bounded") is None
