"""BasetenSecrets in a plan, on the Kubernetes emulator and the Baseten simulator: the
value read from the cluster only to tell whether it changed, and found in no output."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import SecretStr

from baseten_operator.api.constants import BASETENSECRETS
from baseten_operator.baseten.client import BasetenClient
from baseten_operator.controller.basetensecret.fingerprint import fingerprint, fingerprint_key
from baseten_operator.runtime.resource import SECRETS
from testsupport.plan_world import API_KEY, PlanWorld, only_gets

pytestmark = pytest.mark.integration

VALUE = "hf_plan_value_never_shown_3b9d"
ROTATED = "hf_plan_rotated_never_shown_a41f"


def basetensecret(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": BASETENSECRETS.api_version,
        "kind": BASETENSECRETS.kind,
        "metadata": {"name": "hf", "namespace": namespace},
        "spec": {"name": f"{namespace}_hf", "secretRef": {"name": "hf", "key": "token"}},
    }


def secret(namespace: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf", "namespace": namespace},
        "data": {"token": base64.b64encode(value.encode()).decode()},
    }


def outputs(world: PlanWorld, *args: str) -> tuple[str, str]:
    """The plan's table and its JSON, as printed."""
    return world.plan_table(*args)[1], world.plan_table("-o", "json", *args)[1]


def assert_no_value(*printed: str) -> None:
    for text in printed:
        for value in (VALUE, ROTATED):
            assert value not in text
            assert base64.b64encode(value.encode()).decode() not in text


def test_a_rotation_is_planned_as_one_upsert_without_the_value(
    world: PlanWorld, namespace: str
) -> None:
    name = f"{namespace}_hf"
    world.kube.create(SECRETS, secret(namespace, VALUE), namespace)
    world.kube.create(BASETENSECRETS, basetensecret(namespace), namespace)
    args = (
        "--cluster",
        "--kubeconfig",
        str(world.kubeconfig),
        "-n",
        namespace,
        "--detailed-exitcode",
    )

    code, document, seen = world.plan(*args)
    assert code == 2 and only_gets(seen)
    (item,) = document["secrets"]
    assert item["actions"] == [{"type": "upsert-secret", "secret": name, "team": None}]
    assert_no_value(*outputs(world, *args))

    # As the operator leaves it once written: Baseten holds the name, the status the
    # fingerprint keyed by the API key (the plan's is the operator's here). Nothing to do.
    BasetenClient(API_KEY, world.sim.api_url).upsert_secret(name, SecretStr(VALUE))
    obj = world.kube.get(BASETENSECRETS, "hf", namespace)
    obj["status"] = {
        "state": "SYNCED",
        "fingerprint": fingerprint(fingerprint_key(API_KEY), None, name, SecretStr(VALUE)),
        "lastSyncTime": "2026-01-01T00:00:00Z",
    }
    world.kube.update_status(BASETENSECRETS, obj)
    code, document, _ = world.plan(*args)
    assert code == 0 and document["secrets"][0]["actions"] == []

    # Rotated with kubectl's equivalent: one upsert, and still no value anywhere.
    rotated = world.kube.get(SECRETS, "hf", namespace)
    rotated["data"] = secret(namespace, ROTATED)["data"]
    world.kube.update(SECRETS, rotated)
    code, document, _ = world.plan(*args)
    assert code == 2
    assert document["secrets"][0]["actions"] == [
        {"type": "upsert-secret", "secret": name, "team": None}
    ]
    assert "(value changed)" in document["secrets"][0]["events"][0]["message"]
    assert_no_value(*outputs(world, *args))


def test_from_files_a_secret_not_given_is_said_not_guessed(
    world: PlanWorld, namespace: str, tmp_path: Path
) -> None:
    path = tmp_path / "bsec.yaml"
    path.write_text(yaml.safe_dump(basetensecret(namespace)))
    code, document, _ = world.plan("-f", str(path))
    assert code == 0
    (item,) = document["secrets"]
    assert item["actions"] == []
    assert item["notes"][0].startswith(f"Secret {namespace}/hf not read: without --cluster")
    # Given in the input (a decrypted SOPS file, say), it is planned, and never printed.
    path.write_text(yaml.safe_dump_all([basetensecret(namespace), secret(namespace, VALUE)]))
    code, document, _ = world.plan("-f", str(path), "--detailed-exitcode")
    assert code == 2 and [a["type"] for a in document["secrets"][0]["actions"]] == ["upsert-secret"]
    assert_no_value(*outputs(world, "-f", str(path)))
