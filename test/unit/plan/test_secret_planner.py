"""A plan of BasetenSecrets runs their real pass: upserts and deletes by name, never a value;
what the plan cannot read it says (docs/plan.md)."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonschema
import pytest
from pydantic import SecretStr

from baseten_operator.baseten.models import SecretV1
from baseten_operator.controller.basetensecret.context import OperatorIdentity
from baseten_operator.controller.basetensecret.fingerprint import fingerprint, fingerprint_key
from baseten_operator.plan.actions import DeleteSecret, UpsertSecret
from baseten_operator.plan.command import exit_code
from baseten_operator.plan.inputs import ConfigMaps, from_manifests
from baseten_operator.plan.planner import Planner
from baseten_operator.plan.render import SCHEMA_PATH, to_json, to_table
from baseten_operator.plan.secret_planner import PlanSecrets, SecretPlan, SecretPlanner
from baseten_operator.plan.tenancy import TenancyView
from baseten_operator.plan.world import RecordingBaseten
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.errors import Forbidden

API_KEY = "plan-key"
VALUE = "hf_value_never_printed_5e1a"
ROTATED = "hf_value_rotated_never_printed_77c0"


class Baseten:
    """Reads of the organisation's secrets."""

    def __init__(self, *names: str) -> None:
        self.secrets = [SecretV1(id=f"s-{n}", name=n, created_at="2026-01-01") for n in names]
        self.base_url = "http://unused"

    def list_secrets(self) -> list[SecretV1]:
        return list(self.secrets)


def basetensecret(name: str = "hf", created: str | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if created is not None:
        meta["creationTimestamp"] = created
    return {
        "apiVersion": "models.baseten.com/v1alpha1",
        "kind": "BasetenSecret",
        "metadata": meta,
        "spec": {"name": "hf_token", "secretRef": {"name": "hf", "key": "token"}, **spec},
    }


def secret(value: str = VALUE) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf", "namespace": "ns"},
        "data": {"token": base64.b64encode(value.encode()).decode()},
    }


def written(value: str) -> dict[str, Any]:
    """The status of a CR whose last write was `value`, as the operator keyed it."""
    digest = fingerprint(fingerprint_key(API_KEY), None, "hf_token", SecretStr(value))
    return {"state": "SYNCED", "fingerprint": digest, "lastSyncTime": "2026-01-01T00:00:00Z"}


def plan_all(
    objects: list[dict[str, Any]],
    baseten: Baseten | None = None,
    *,
    secrets: PlanSecrets | None = None,
    live: list[dict[str, Any]] | None = None,
    models: list[dict[str, Any]] | None = None,
    destroy: bool = False,
    tenancy: TenancyView | None = None,
) -> list[SecretPlan]:
    clock = FakeClock()
    planner = Planner(
        RecordingBaseten(baseten or Baseten()),  # type: ignore[arg-type]
        ConfigMaps(),
        clock,
        tenancy=tenancy or TenancyView.unknown(),
    )
    return SecretPlanner(
        planner.baseten,
        planner.rules(),
        secrets if secrets is not None else PlanSecrets([secret()]),
        clock,
        API_KEY,
        OperatorIdentity("baseten-system", "baseten-operator"),
    ).plan(objects, live=live or [], models=models or [], destroy=destroy)


def plan_one(obj: dict[str, Any], baseten: Baseten | None = None, **kwargs: Any) -> SecretPlan:
    (result,) = plan_all([obj], baseten, **kwargs)
    return result


def test_a_new_secret_is_planned_as_one_upsert_by_name() -> None:
    result = plan_one(basetensecret())
    assert result.actions == [UpsertSecret("hf_token", None)]
    assert result.status["state"] == "SYNCED"
    assert "(missing from Baseten)" in result.events[0].message


def test_an_unchanged_value_plans_nothing() -> None:
    obj = basetensecret()
    obj["status"] = written(VALUE)
    result = plan_one(obj, Baseten("hf_token"))
    assert result.actions == [] and result.blockers == [] and result.error is None
    assert "no changes" in to_table([], secrets=[result])


def test_a_rotated_value_plans_one_upsert_and_never_prints_a_value() -> None:
    obj = basetensecret()
    obj["status"] = written(VALUE)
    result = plan_one(obj, Baseten("hf_token"), secrets=PlanSecrets([secret(ROTATED)]))
    assert result.actions == [UpsertSecret("hf_token", None)]
    assert "(value changed)" in result.events[0].message
    table, document = to_table([], secrets=[result]), to_json([], secrets=[result])
    assert "1. upsert secret hf_token (value not shown)" in table
    assert "Plan: 1 actions on 1 of 1 BasetenSecrets." in table
    for output in (table, document):
        for value in (VALUE, ROTATED):
            assert value not in output
            assert base64.b64encode(value.encode()).decode() not in output


def test_from_files_a_secret_not_in_the_input_is_not_guessed() -> None:
    result = plan_one(basetensecret(), secrets=PlanSecrets([]))
    assert result.actions == [] and result.error is None
    assert result.notes == [
        "Secret ns/hf not read: without --cluster only the input's Secrets are, so whether "
        "its value changed is unknown"
    ]


class RefusingKube:
    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        raise Forbidden(403, "Forbidden", f'secrets "{name}" is forbidden: User "planner"')


def test_a_secret_the_plans_user_may_not_read_is_said_for_that_cr() -> None:
    result = plan_one(basetensecret(), secrets=PlanSecrets([], RefusingKube()))
    assert result.actions == []
    assert result.notes[0].startswith("Secret ns/hf not read: the plan's user may not get it (")


def test_a_younger_cr_on_a_live_owners_name_is_blocked_by_the_conflict() -> None:
    older = basetensecret("older", created="2025-01-01T00:00:00Z")
    result = plan_one(basetensecret(), live=[older])
    assert result.actions == []
    assert result.blockers == ["Baseten secret hf_token is managed by BasetenSecret ns/older"]


def model_naming(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "llm", "namespace": "ns"},
        "spec": {"trussConfig": {"secrets": {name: ""}}},
    }


@pytest.mark.parametrize("named", [True, False])
def test_destroy_deletes_only_a_secret_no_model_names(named: bool) -> None:
    obj = basetensecret(deletionPolicy="Delete")
    obj["status"] = written(VALUE)
    models = [model_naming("hf_token")] if named else []
    result = plan_one(obj, Baseten("hf_token"), models=models, destroy=True)
    if named:
        assert result.actions == []
        assert result.blockers == [
            "deletion blocked: Baseten secret hf_token is still named by BasetenModel ns/llm "
            "(trussConfig.secrets)"
        ]
    else:
        assert result.actions == [DeleteSecret("hf_token", None)]


@pytest.mark.parametrize(
    ("mode", "note"),
    [
        ("Observe", "Observe mode: the operator reads the Secret and Baseten, it never writes"),
        ("Pause", "Pause mode: the operator reads no Secret and calls nothing"),
    ],
)
def test_observe_and_pause_plan_no_writes(mode: str, note: str) -> None:
    result = plan_one(basetensecret(mode=mode))
    assert result.actions == [] and note in result.notes


def test_the_json_validates_and_counts_secret_changes() -> None:
    results = plan_all([basetensecret(), basetensecret("two", mode="Pause")])
    document = json.loads(to_json([], secrets=results))
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    assert document["changes"] is True
    assert document["secrets"][0]["actions"] == [
        {"type": "upsert-secret", "secret": "hf_token", "team": None}
    ]
    assert exit_code(results, detailed=True) == 2


def test_manifests_bring_basetensecrets_and_their_secrets() -> None:
    inputs = from_manifests([basetensecret(), secret(), {"kind": "Other"}], "ns")
    assert [o["kind"] for o in inputs.basetensecrets] == ["BasetenSecret"]
    assert [o["kind"] for o in inputs.secrets] == ["Secret"]


class NoNamespaces:
    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return None


def test_a_cr_in_a_namespace_that_does_not_exist_waits_and_says_why() -> None:
    tenancy = TenancyView(namespaces=NoNamespaces(), secrets=NoNamespaces(), operator_namespace="o")
    result = plan_one(basetensecret(), tenancy=tenancy)
    assert result.actions == []
    assert result.notes == [
        "waiting: namespace ns not found, so its policy is unknown: the operator makes no "
        "Baseten call for its BasetenSecrets until it exists"
    ]
