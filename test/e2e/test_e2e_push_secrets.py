"""A model waits for the Baseten secrets its trussConfig names: nothing is pushed while one is
missing; once someone creates it in Baseten, the push goes out and the model becomes Ready."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from testsupport.e2e.harness import Stack, basetenmodel, unique_name
from testsupport.paths import REPO
from testsupport.polling import wait_for

pytestmark = pytest.mark.e2e

SAMPLES = REPO / "config" / "samples"


def truss_sample() -> dict[str, Any]:
    """The shipped truss sample's trussConfig (its setup script in the sample ConfigMap)."""
    sample = yaml.safe_load((SAMPLES / "models_v1alpha1_basetenmodel_truss.yaml").read_text())
    truss: dict[str, Any] = sample["spec"]["trussConfig"]
    return truss


def pushes_of(stack: Stack, model_name: str) -> list[dict[str, Any]]:
    """The truss pushes the simulator answered that create (or add to) `model_name`."""
    return [
        entry
        for entry in stack.sim.audit_log()
        if entry["endpoint"].startswith("graphql:create_model")
        and (entry["body"] or {}).get("args", {}).get("name") == model_name
    ]


def test_a_model_waits_for_its_secret_then_pushes_once_it_exists(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-secrets")
    stack.kubectl.run("apply", "-n", namespace, "-f", str(SAMPLES / "setup_configmap.yaml"))
    model_name = unique_name("e2e-secrets-model")
    # Secret names are per Baseten team, and the simulator outlives one test: a fresh name.
    secret = unique_name("hf-token").replace("-", "_")
    spec = {
        "modelName": model_name,
        "trussConfig": {**truss_sample(), "secrets": {secret: ""}},
        "environment": {"name": "production"},
    }
    stack.kubectl.apply(basetenmodel("waits", namespace, spec))

    waiting = stack.wait_status(
        namespace,
        "waits",
        lambda s: s.get("message") == f"waiting for secrets: {secret}",
        what="waiting for the secret",
    )
    assert waiting["status"]["deploymentStatus"] == "PENDING"
    row = stack.kubectl.table("bm", "waits", "-n", namespace)[0]
    assert row["STATUS"] == "PENDING"
    # Still waiting a few requeues later (push poll: 10 s, 0.2 s at the e2e time scale), and
    # nothing was pushed meanwhile: no model, no push on Baseten's audit.
    lists_before = _secret_lists(stack)
    wait_for(lambda: _secret_lists(stack) >= lists_before + 3, timeout=30)
    assert pushes_of(stack, model_name) == []
    assert stack.sim.api_get(f"/models?name={model_name}").json()["models"] == []

    # Someone creates the secret in Baseten (its API, as the UI or a BasetenSecret would).
    created = stack.sim.api_post("/secrets", {"name": secret, "value": "hf_e2e-secret-value"})
    assert created.status_code == 200, created.text

    stack.kubectl.run(
        "wait", "-n", namespace, "--for=condition=Ready", "bm/waits", "--timeout=120s"
    )
    ready = stack.get_bm(namespace, "waits")
    assert ready is not None and ready["status"]["deploymentStatus"] == "ACTIVE"
    assert len(pushes_of(stack, model_name)) == 1


def _secret_lists(stack: Stack) -> int:
    """How many times the secrets were listed (by anyone: the count only grows)."""
    return sum(
        1 for r in stack.sim.request_log() if r["method"] == "GET" and r["path"] == "/v1/secrets"
    )
