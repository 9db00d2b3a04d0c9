"""Tenancy through kubectl: one owner per environment, no deletion under another namespace,
namespace policy annotations, and a namespace's own (rotated) Baseten API key."""

from __future__ import annotations

from typing import Any

import pytest

from testsupport.e2e.harness import (
    OPERATOR_NAMESPACE,
    Stack,
    basetenmodel,
    status_of,
    unique_name,
)
from testsupport.e2e.local import KeyStack
from testsupport.polling import wait_for

pytestmark = pytest.mark.e2e

AUTOSCALING = {"minReplicas": 1, "maxReplicas": 3}


def annotate(stack: Stack, namespace: str, **annotations: str) -> None:
    """What the platform team does: `kubectl annotate namespace` (the edit role cannot)."""
    pairs = [
        f"models.baseten.com/{key.replace('_', '-')}={value}" for key, value in annotations.items()
    ]
    stack.kubectl.run("annotate", "--overwrite", "namespace", namespace, *pairs)


def spec(model: str, env: str = "production", **extra: Any) -> dict[str, Any]:
    return {
        "modelName": model,
        "sourceDeploymentName": "build-1",
        "environment": {"name": env, "autoscaling": AUTOSCALING},
        **extra,
    }


def word_is(word: str) -> Any:
    return lambda status: status.get("deploymentStatus") == word


def test_a_second_claimant_conflicts_and_takes_over_when_the_owner_goes(stack: Stack) -> None:
    owner_ns, rival_ns = stack.new_namespace("e2e-own-a"), stack.new_namespace("e2e-own-b")
    model = unique_name("e2e-own")
    model_id, _ = stack.promoted_model(owner_ns, model, autoscaling=AUTOSCALING)
    writes_before = stack.sim.writes_for_model(model_id)

    rival = spec(model)
    rival["environment"]["autoscaling"] = {"minReplicas": 1, "maxReplicas": 5}
    stack.kubectl.apply(basetenmodel("rival", rival_ns, rival))
    conflict = f"environment production of model '{model}' is managed by {owner_ns}/{model}"
    obj = stack.wait_status(rival_ns, "rival", word_is("CONFLICT"), what="CONFLICT")
    assert obj["status"]["message"] == conflict
    conditions = {c["type"]: c["status"] for c in obj["status"]["conditions"]}
    assert conditions == {
        "Ready": "False",
        "Progressing": "False",
        "Reconciling": "False",
        "Stalled": "True",
    }
    event = stack.wait_event(rival_ns, "rival", "EnvironmentConflict")
    assert (event["type"], event["message"]) == ("Warning", conflict)
    assert stack.sim.writes_for_model(model_id) == writes_before  # the rival called nothing

    stack.kubectl.run("delete", "bm", model, "-n", owner_ns, "--timeout=30s")  # Retain
    stack.wait_status(rival_ns, "rival", word_is("ACTIVE"), what="the rival taking over")
    settings = stack.sim.environment(model_id, "production")["autoscaling_settings"]
    assert settings["max_replica"] == 5


def test_a_cross_namespace_delete_is_blocked_while_the_model_is_served(stack: Stack) -> None:
    serving_ns, scratch_ns = stack.new_namespace("e2e-del-a"), stack.new_namespace("e2e-del-b")
    model = unique_name("e2e-le")
    model_id, _ = stack.promoted_model(serving_ns, model, autoscaling=AUTOSCALING)
    stack.kubectl.apply(
        basetenmodel(
            "cross",
            scratch_ns,
            spec(model, "scratch", deletionPolicy="Delete"),
        )
    )
    stack.kubectl.run(
        "wait", "-n", scratch_ns, "--for=condition=Ready", "bm/cross", "--timeout=60s"
    )

    stack.kubectl.run("delete", "bm", "cross", "-n", scratch_ns, "--wait=false")
    blocked = (
        f"deletion blocked: model '{model}' is still managed by {serving_ns}/{model} "
        "(production environment)"
    )
    stack.wait_status(
        scratch_ns,
        "cross",
        lambda s: s.get("deploymentStatus") == "DELETE_BLOCKED" and s.get("message") == blocked,
        what="DELETE_BLOCKED",
    )
    stack.wait_event(scratch_ns, "cross", "ModelDeleteBlocked", contains="still managed by")
    assert stack.sim.api_get(f"/models/{model_id}").status_code == 200

    stack.kubectl.run("delete", "bm", model, "-n", serving_ns, "--timeout=30s")  # Retain
    wait_for(
        lambda: stack.get_bm(scratch_ns, "cross") is None,
        timeout=30.0,
        describe=lambda: str(status_of(stack.get_bm(scratch_ns, "cross"))),
    )
    assert stack.sim.api_get(f"/models/{model_id}").status_code == 404  # the usual Delete


def test_each_policy_violation_and_a_policy_change(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-policy")
    model = unique_name("e2e-pol")
    model_id, _ = stack.sim.seed_model_with_deployment(model, "build-1")
    annotate(stack, namespace, allowed_models="search-*,ranker")
    stack.kubectl.apply(basetenmodel("refused", namespace, spec(model, deletionPolicy="Delete")))
    text = (
        f"namespace policy: model '{model}' is not allowed in namespace {namespace} "
        "(models.baseten.com/allowed-models: search-*,ranker)"
    )
    obj = stack.wait_status(namespace, "refused", word_is("FAILED"), what="policy FAILED")
    assert obj["status"]["message"] == text
    event = stack.wait_event(namespace, "refused", "PolicyViolation")
    assert (event["type"], event["message"]) == ("Warning", text)

    # One change of both annotations: the model is allowed now, its deletion policy is not.
    annotate(stack, namespace, allowed_models="e2e-pol-*", allowed_deletion_policies="Retain")
    stack.wait_status(
        namespace,
        "refused",
        lambda s: s.get("message")
        == (
            f"namespace policy: deletionPolicy Delete is not allowed in namespace {namespace} "
            "(models.baseten.com/allowed-deletion-policies: Retain)"
        ),
        what="deletionPolicy refused",
    )
    assert stack.sim.writes_for_model(model_id) == []

    # The platform team widens the policy: the CR goes ahead without being touched.
    annotate(stack, namespace, allowed_deletion_policies="Retain,Delete")
    stack.wait_status(namespace, "refused", word_is("ACTIVE"), what="ACTIVE after the change")

    # Deleting a CR its namespace refuses never touches Baseten, whatever its policy.
    annotate(stack, namespace, allowed_models="ranker")
    stack.wait_status(namespace, "refused", word_is("FAILED"), what="refused again")
    stack.kubectl.run("delete", "bm", "refused", "-n", namespace, "--timeout=30s")
    assert stack.sim.api_get(f"/models/{model_id}").status_code == 200


def test_a_namespace_key_serves_its_crs_and_rotates_without_a_restart(stack: Stack) -> None:
    team = unique_name("e2e-team")
    stack.sim.control("create_team", name=team)
    stack.sim.control("add_api_key", key=f"{team}-key-1", label=f"{team}-1", team=team)
    namespace = stack.new_namespace("e2e-key")
    secret = f"{namespace}-baseten-key"
    stack.kubectl.apply(key_secret(secret, f"{team}-key-1"))
    annotate(stack, namespace, team=team, api_key_secret=secret)

    model = unique_name("e2e-key")
    # The same name in the organisation's default team: the namespace must not pick it.
    decoy = stack.sim.control("seed_model", name=model)["id"]
    model_id = stack.sim.control("seed_model", name=model, team=team)["id"]
    stack.sim.control("seed_deployment", model_id=model_id, name="build-1")
    stack.kubectl.apply(basetenmodel("keyed", namespace, spec(model)))
    stack.kubectl.run("wait", "-n", namespace, "--for=condition=Ready", "bm/keyed", "--timeout=60s")
    assert status_of(stack.get_bm(namespace, "keyed"))["modelID"] == model_id
    first = stack.sim.writes_for_model(model_id)
    assert first and {entry["key"] for entry in first} == {f"{team}-1"}
    assert stack.sim.writes_for_model(decoy) == []

    # Rotation: a new key in the Secret, the old one revoked; no restart.
    stack.sim.control("add_api_key", key=f"{team}-key-2", label=f"{team}-2", team=team)
    stack.kubectl.apply(key_secret(secret, f"{team}-key-2"))
    stack.sim.control("revoke_api_key", key=f"{team}-key-1")
    patched = dict(spec(model))
    patched["environment"] = {
        "name": "production",
        "autoscaling": {"minReplicas": 1, "maxReplicas": 4},
    }
    stack.kubectl.apply(basetenmodel("keyed", namespace, patched))
    wait_for(
        lambda: stack.sim.environment(model_id, "production")["autoscaling_settings"]["max_replica"]
        == 4,
        timeout=30.0,
    )
    later = stack.sim.writes_for_model(model_id)[len(first) :]
    assert later and {entry["key"] for entry in later} == {f"{team}-2"}
    stack.wait_status(namespace, "keyed", word_is("ACTIVE"), what="ACTIVE with the new key")


def test_a_missing_key_secret_fails_naming_it_until_it_appears(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-nokey")
    secret = f"{namespace}-baseten-key"
    annotate(stack, namespace, api_key_secret=secret)
    model = unique_name("e2e-nokey")
    model_id, _ = stack.sim.seed_model_with_deployment(model, "build-1")
    stack.kubectl.apply(basetenmodel("keyless", namespace, spec(model)))
    text = f"API key Secret {OPERATOR_NAMESPACE}/{secret} not found"
    stack.wait_status(
        namespace, "keyless", lambda s: s.get("message") == text, what="FAILED naming the Secret"
    )
    assert status_of(stack.get_bm(namespace, "keyless"))["deploymentStatus"] == "FAILED"
    assert stack.sim.writes_for_model(model_id) == []

    # The Secret appears (the platform team's key for this namespace): its watch wakes the CR.
    stack.sim.control("add_api_key", key=f"{namespace}-key", label=namespace)
    stack.kubectl.apply(key_secret(secret, f"{namespace}-key"))
    stack.wait_status(namespace, "keyless", word_is("ACTIVE"), what="ACTIVE once the key exists")
    assert {entry["key"] for entry in stack.sim.writes_for_model(model_id)} == {namespace}


def test_require_namespace_policy_manages_nothing_without_allowed_models(
    key_stack: KeyStack,
) -> None:
    stack = key_stack.stack
    key_stack.start_operator("strict", "--require-namespace-policy")
    namespace = stack.new_namespace("e2e-strict")
    model = unique_name("e2e-strict")
    model_id, _ = stack.sim.seed_model_with_deployment(model, "build-1")
    stack.kubectl.apply(basetenmodel("denied", namespace, spec(model)))
    text = (
        f"namespace policy: model '{model}' is not allowed in namespace {namespace} "
        "(models.baseten.com/allowed-models: (unset))"
    )
    stack.wait_status(namespace, "denied", lambda s: s.get("message") == text, what="denied")
    event = stack.wait_event(namespace, "denied", "PolicyViolation")
    assert (event["type"], event["message"]) == ("Warning", text)
    assert stack.sim.writes_for_model(model_id) == []

    annotate(stack, namespace, allowed_models="e2e-strict-*")
    stack.wait_status(namespace, "denied", word_is("ACTIVE"), what="ACTIVE once allowed")


def key_secret(name: str, api_key: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
        "type": "Opaque",
        "stringData": {"api-key": api_key},
    }
