"""BasetenSecret end to end (docs/contract.md section 13): kubectl, the operator process
authenticating as its ServiceAccount, the simulator.

- A Secret rotated with kubectl reaches Baseten within seconds, in exactly one upsert, and
  the value is nowhere: operator logs (at debug), Events, statuses, the metrics scrape, the
  simulator's audit log.
- A namespace that has not bound the secret-reader ClusterRole is told exactly what to
  grant; granting it syncs.
- Two BasetenSecrets on one Baseten secret name do not fight.
- `deletionPolicy: Delete` never removes a secret a BasetenModel still names.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import requests

from testsupport.e2e.harness import (
    OPERATOR_NAMESPACE,
    OPERATOR_SERVICE_ACCOUNT,
    Kubectl,
    Simulator,
    Stack,
    scrape_as_prometheus,
    unique_name,
)
from testsupport.e2e.local import UNBOUND_NAMESPACE_PREFIX, KeyStack
from testsupport.polling import wait_for

pytestmark = pytest.mark.e2e

READER_ROLE = "baseten-operator-secret-reader"
# Within seconds: the watch on the Secret wakes its BasetenSecret at once.
ROTATION_DEADLINE = 10.0


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def put_secret(kubectl: Kubectl, namespace: str, name: str, value: str) -> None:
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "type": "Opaque",
            "data": {"token": base64.b64encode(value.encode()).decode()},
        }
    )


def bind_reader(kubectl: Kubectl, namespace: str) -> None:
    """The opt-in the README shows: the namespace lets the operator read its Secrets."""
    kubectl.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "baseten-operator-secret-reader", "namespace": namespace},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": READER_ROLE,
            },
            "subjects": [
                {
                    "kind": "ServiceAccount",
                    "name": OPERATOR_SERVICE_ACCOUNT,
                    "namespace": OPERATOR_NAMESPACE,
                }
            ],
        }
    )


def basetensecret(
    kubectl: Kubectl, namespace: str, name: str, secret_name: str, ref: str, **spec: Any
) -> None:
    kubectl.apply(
        {
            "apiVersion": "models.baseten.com/v1alpha1",
            "kind": "BasetenSecret",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"name": secret_name, "secretRef": {"name": ref, "key": "token"}, **spec},
        }
    )


def bsec_status(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    obj = kubectl.get_or_none("basetensecret", name, namespace)
    return dict((obj or {}).get("status") or {})


def wait_state(
    kubectl: Kubectl, namespace: str, name: str, state: str, timeout: float = 30.0
) -> dict[str, Any]:
    last: dict[str, Any] = {}

    def probe() -> dict[str, Any] | None:
        nonlocal last
        last = bsec_status(kubectl, namespace, name)
        return last if last.get("state") == state else None

    return wait_for(
        probe,
        timeout=timeout,
        describe=lambda: f"{namespace}/{name} {state}; last: {last.get('state')} "
        f"{last.get('message')!r}",
    )


def sim_secret(sim: Simulator, name: str) -> dict[str, Any] | None:
    response = requests.get(f"{sim.url}/_sim/secrets", timeout=10)
    response.raise_for_status()
    return next((s for s in response.json() if s["name"] == name), None)


def wait_sim_value(sim: Simulator, name: str, value: str, timeout: float) -> dict[str, Any]:
    return wait_for(
        lambda: (
            secret
            if (secret := sim_secret(sim, name)) and secret["value_sha256"] == sha256(value)
            else None
        ),
        timeout=timeout,
        describe=lambda: f"Baseten secret {name} holding the value; last: {sim_secret(sim, name)}",
    )


def test_a_rotation_reaches_baseten_in_one_upsert_and_leaves_no_trace(
    key_stack: KeyStack, tmp_path: Path
) -> None:
    stack, kubectl = key_stack.stack, key_stack.cluster.kubectl
    operator = key_stack.start_operator("operator")
    namespace = stack.new_namespace("e2e-bsec")
    bind_reader(kubectl, namespace)
    secret_name = unique_name("hf_token").replace("-", "_")
    first, rotated = "hf-first-" + unique_name("v"), "hf-rotated-" + unique_name("v")
    put_secret(kubectl, namespace, "hf", first)
    basetensecret(kubectl, namespace, "hf-token", secret_name, "hf")
    wait_state(kubectl, namespace, "hf-token", "SYNCED")
    assert wait_sim_value(stack.sim, secret_name, first, timeout=10)["writes"] == 1

    put_secret(kubectl, namespace, "hf", rotated)
    arrived = wait_sim_value(stack.sim, secret_name, rotated, timeout=ROTATION_DEADLINE)
    assert arrived["writes"] == 2
    stack.wait_event(namespace, "hf-token", "SecretSynced", contains="(value changed)")
    table = kubectl.table("bsec", "-n", namespace)
    assert list(table[0]) == ["NAME", "SECRET", "TEAM", "STATE", "AGE", "MESSAGE"]
    assert table[0]["STATE"] == "SYNCED" and table[0]["SECRET"] == secret_name

    scraped = scrape_as_prometheus(kubectl, namespace, operator.metrics_port, tmp_path)
    assert "baseten_secret_syncs_total 2.0" in scraped
    seen = {
        "operator log": (key_stack.workdir / "operator.log").read_text(),
        "events": kubectl.run("get", "events", "-A", "-o", "json").stdout,
        "statuses": kubectl.run("get", "bsec", "-A", "-o", "json").stdout,
        "metrics": scraped,
        "simulator audit log": json.dumps(stack.sim.audit_log()),
    }
    assert '"severity": "DEBUG"' in seen["operator log"]
    assert "SecretSynced" in seen["events"]
    for value in (first, rotated):
        forms = [value, base64.b64encode(value.encode()).decode()]
        leaks = [where for where, text in seen.items() for form in forms if form in text]
        assert not leaks, f"the value leaked into {leaks}"


def test_an_unbound_namespace_is_told_what_to_grant_then_syncs(stack: Stack) -> None:
    kubectl = stack.kubectl
    namespace = stack.new_namespace(UNBOUND_NAMESPACE_PREFIX.rstrip("-"))
    assert namespace.startswith(UNBOUND_NAMESPACE_PREFIX)
    secret_name = unique_name("unbound").replace("-", "_")
    put_secret(kubectl, namespace, "creds", "unbound-value")
    basetensecret(kubectl, namespace, "creds", secret_name, "creds")
    status = wait_state(kubectl, namespace, "creds", "FORBIDDEN")
    assert status["message"] == (
        f"cannot read Secret {namespace}/creds: create a RoleBinding in namespace {namespace} "
        f"granting ClusterRole {READER_ROLE} to ServiceAccount "
        f"{OPERATOR_NAMESPACE}/{OPERATOR_SERVICE_ACCOUNT}"
    )
    assert sim_secret(stack.sim, secret_name) is None

    bind_reader(kubectl, namespace)
    wait_state(kubectl, namespace, "creds", "SYNCED", timeout=60)
    assert wait_sim_value(stack.sim, secret_name, "unbound-value", timeout=10)["writes"] == 1


def test_two_crs_on_one_name_do_not_fight(stack: Stack) -> None:
    kubectl = stack.kubectl
    namespace = stack.new_namespace("e2e-bsec-two")
    bind_reader(kubectl, namespace)
    secret_name = unique_name("shared").replace("-", "_")
    put_secret(kubectl, namespace, "first", "first-value")
    put_secret(kubectl, namespace, "second", "second-value")
    basetensecret(kubectl, namespace, "first", secret_name, "first")
    wait_state(kubectl, namespace, "first", "SYNCED")
    basetensecret(kubectl, namespace, "second", secret_name, "second")
    conflict = wait_state(kubectl, namespace, "second", "CONFLICT")
    assert conflict["message"] == (
        f"Baseten secret {secret_name} is managed by BasetenSecret {namespace}/first"
    )
    stack.wait_event(namespace, "second", "SecretSyncFailed", contains=f"{namespace}/first")
    # The one that stands down changes its value, then the owner rotates: only the owner's
    # rotation arrives, in one more write.
    put_secret(kubectl, namespace, "second", "second-rotated")
    put_secret(kubectl, namespace, "first", "first-rotated")
    arrived = wait_sim_value(stack.sim, secret_name, "first-rotated", timeout=ROTATION_DEADLINE)
    assert arrived["writes"] == 2
    assert bsec_status(kubectl, namespace, "second")["state"] == "CONFLICT"


def test_delete_never_removes_a_secret_a_model_names(stack: Stack) -> None:
    kubectl = stack.kubectl
    namespace = stack.new_namespace("e2e-bsec-del")
    bind_reader(kubectl, namespace)
    secret_name = unique_name("model_secret").replace("-", "_")
    put_secret(kubectl, namespace, "creds", "deleted-value")
    basetensecret(kubectl, namespace, "creds", secret_name, "creds", deletionPolicy="Delete")
    wait_state(kubectl, namespace, "creds", "SYNCED")
    # A paused model: it names the secret and does nothing else.
    kubectl.apply(
        {
            "apiVersion": "models.baseten.com/v1alpha1",
            "kind": "BasetenModel",
            "metadata": {"name": "user", "namespace": namespace},
            "spec": {
                "modelName": unique_name("user"),
                "mode": "Pause",
                "environment": {"name": "production"},
                "trussConfig": {
                    "resources": {"cpu": "1"},
                    "baseImage": {"image": "python:3.11-slim"},
                    "secrets": {secret_name: ""},
                },
            },
        }
    )
    kubectl.run("delete", "bsec", "creds", "-n", namespace, "--wait=false")
    blocked = wait_state(kubectl, namespace, "creds", "DELETE_BLOCKED")
    assert blocked["message"] == (
        f"deletion blocked: Baseten secret {secret_name} is still named by BasetenModel "
        f"{namespace}/user (trussConfig.secrets)"
    )
    stack.wait_event(namespace, "creds", "SecretDeleteBlocked", contains=f"{namespace}/user")
    assert sim_secret(stack.sim, secret_name) is not None

    kubectl.run("delete", "bm", "user", "-n", namespace)
    wait_for(
        lambda: kubectl.get_or_none("basetensecret", "creds", namespace) is None or None,
        timeout=30,
        describe=lambda: f"BasetenSecret gone; status {bsec_status(kubectl, namespace, 'creds')}",
    )
    assert sim_secret(stack.sim, secret_name) is None


def test_delete_never_removes_a_secret_in_a_team_it_never_wrote(stack: Stack) -> None:
    """Synced in the organisation; `team` set afterwards (unset to set is allowed) while the
    Secret is gone (no new write in the team); the CR deleted: the team's secret of that
    name is someone else's, and the operator says why it deletes nothing."""
    kubectl = stack.kubectl
    namespace = stack.new_namespace("e2e-bsec-team")
    bind_reader(kubectl, namespace)
    team = unique_name("red")
    stack.sim.control("create_team", name=team)
    secret_name = unique_name("hf_token").replace("-", "_")
    stack.sim.control("seed_secret", name=secret_name, value="someone-elses", team=team)
    put_secret(kubectl, namespace, "creds", "ours")
    basetensecret(kubectl, namespace, "creds", secret_name, "creds", deletionPolicy="Delete")
    synced = wait_state(kubectl, namespace, "creds", "SYNCED")
    assert synced["writtenName"] == secret_name and "writtenTeam" not in synced

    kubectl.run("delete", "secret", "creds", "-n", namespace)
    wait_state(kubectl, namespace, "creds", "WAITING_FOR_SECRET")
    kubectl.run(
        "patch", "bsec", "creds", "-n", namespace, "--type=merge",
        "-p", json.dumps({"spec": {"team": team}}),
    )  # fmt: skip
    wait_for(
        lambda: bsec_status(kubectl, namespace, "creds").get("observedGeneration") == 2 or None,
        timeout=30,
        describe=lambda: f"the team change seen: {bsec_status(kubectl, namespace, 'creds')}",
    )
    kubectl.run("delete", "bsec", "creds", "-n", namespace, "--wait=false")
    wait_for(
        lambda: kubectl.get_or_none("basetensecret", "creds", namespace) is None or None,
        timeout=30,
        describe=lambda: f"BasetenSecret gone; status {bsec_status(kubectl, namespace, 'creds')}",
    )
    held = {(s["team"], s["name"]): s["value_sha256"] for s in stack.sim.control("secrets")}
    assert held[(team, secret_name)] == sha256("someone-elses")
    assert sha256("ours") in held.values()  # its own, in the organisation, retained too
    stack.wait_event(
        namespace,
        "creds",
        "SecretDeleteBlocked",
        contains=f"Not deleting Baseten secret {secret_name} in team {team}: this "
        f"BasetenSecret last wrote its value to Baseten secret {secret_name} in the organisation",
    )
