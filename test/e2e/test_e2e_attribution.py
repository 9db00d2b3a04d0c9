"""Who and why (docs/contract.md 3.8 and 4): a reverted drift names who made it, a failed
build shows its error, on the real API server."""

from __future__ import annotations

import re

import pytest
import requests

from testsupport.e2e.harness import API_KEY, Stack, basetenmodel
from testsupport.polling import wait_for

pytestmark = pytest.mark.e2e

AUTOSCALING = {"minReplicas": 1, "maxReplicas": 3}
CORRECTED = "Put production's settings back to the spec: minReplicas 2→1; "
AT = r"at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
# Another team's CI key: Baseten shows a key by the prefix before its dot.
CI_KEY = "cikey123.s3cret-part-of-the-ci-key"


def test_a_ui_change_is_reverted_naming_the_user_and_the_ui(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-who-ui")
    model_id, _ = stack.promoted_model(namespace, "who-ui", autoscaling=AUTOSCALING)

    stack.sim.ui_autoscaling(model_id, "alice@example.com", min_replica=2)

    event = stack.wait_event(namespace, "who-ui", "DriftCorrected", contains="alice")
    assert event["type"] == "Normal"
    assert re.fullmatch(
        re.escape(CORRECTED + "changed by alice@example.com via UI ") + AT, event["message"]
    ), event["message"]
    _wait_reverted(stack, model_id)


def test_a_change_made_with_another_key_names_its_prefix(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-who-key")
    model_id, _ = stack.promoted_model(namespace, "who-key", autoscaling=AUTOSCALING)
    stack.sim.control("add_api_key", key=CI_KEY, label="ci")

    response = requests.patch(
        f"{stack.sim.url}/v1/models/{model_id}/environments/production",
        json={"autoscaling_settings": {"min_replica": 2}},
        headers={"Authorization": f"Api-Key {CI_KEY}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text

    event = stack.wait_event(namespace, "who-key", "DriftCorrected", contains="cikey123")
    assert re.fullmatch(
        re.escape(CORRECTED + "changed by cikey123 via API ") + AT, event["message"]
    ), event["message"]
    assert "s3cret" not in event["message"]
    _wait_reverted(stack, model_id)


def test_an_audit_log_answering_500_still_reverts_with_an_unknown_actor(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-who-500")
    model_id, _ = stack.promoted_model(namespace, "who-500", autoscaling=AUTOSCALING)
    stack.sim.control(
        "inject_fault", endpoint="list_audit_logs", kind="5xx", status=500, count=100000
    )
    try:
        stack.sim.ui_autoscaling(model_id, "alice@example.com", min_replica=2)
        event = stack.wait_event(namespace, "who-500", "DriftCorrected")
        assert event["message"] == CORRECTED + "changed by an unknown actor"
        _wait_reverted(stack, model_id)
        asked = [
            r
            for r in stack.sim.request_log()
            if r["path"].endswith(f"/models/{model_id}/audit_logs")
        ]
        assert asked and all(r["fault"] == "5xx" for r in asked)
    finally:
        stack.sim.control("clear_faults")


def test_a_failed_build_is_explained_once_with_secrets_masked(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-why")
    model_id, _ = stack.sim.seed_model_with_deployment("why", "build-1")
    failed = stack.sim.control("seed_deployment", model_id=model_id, name="build-2",
                               status="BUILD_FAILED")  # fmt: skip
    line = f"ERROR: registry refused the pull: key {API_KEY}, Bearer tok.s3cr3t-9 not valid"
    stack.sim.control("inject_log", deployment_id=failed["id"], message=line)
    # Baseten refuses the retries: the failure lasts through several retry passes.
    stack.sim.control("inject_fault", endpoint="retry", kind="5xx", status=500, count=100000)
    try:
        stack.kubectl.apply(
            basetenmodel(
                "why",
                namespace,
                {
                    "modelName": "why",
                    "sourceDeploymentName": "build-2",
                    "environment": {"name": "production"},
                },
            )
        )
        retried = stack.wait_status(
            namespace,
            "why",
            lambda s: (s.get("deploymentRetryCount") or 0) >= 3,
            what="three retry attempts",
            timeout=60.0,
        )
    finally:
        stack.sim.control("clear_faults")

    failure = retried["status"]["lastFailure"]
    masked = "ERROR: registry refused the pull: key [redacted], Bearer [redacted] not valid"
    assert failure["deploymentID"] == failed["id"]
    assert failure["reason"] == "BUILD_FAILED"
    # The line the build failed with (the simulator's), then the one injected after it.
    assert failure["excerpt"] == (f"Build failed: the image build exited with an error\n{masked}")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", failure["time"])
    events = [
        e for e in stack.kubectl.events(namespace, "why") if e["reason"] == "DeploymentFailed"
    ]
    assert [(e["type"], e["message"], e.get("count", 1)) for e in events] == [
        (
            "Warning",
            "Deployment build-2 is BUILD_FAILED: Build failed: the image build exited with an "
            f"error | {masked}",
            1,
        )
    ]
    reads = [
        r
        for r in stack.sim.request_log()
        if r["path"].endswith(f"/deployments/{failed['id']}/logs")
    ]
    assert len(reads) == 1  # once per failure, not once per retry
    described = stack.kubectl.run("describe", "bm", "why", "-n", namespace).stdout
    assert "Last Failure:" in described and "registry refused the pull" in described
    assert API_KEY not in described.replace("baseten-operator-api-key", "")


def _wait_reverted(stack: Stack, model_id: str) -> None:
    wait_for(
        lambda: stack.sim.environment(model_id, "production")["autoscaling_settings"]["min_replica"]
        == 1,
        timeout=30.0,
        describe=lambda: str(stack.sim.environment(model_id, "production")),
    )
