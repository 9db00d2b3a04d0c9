"""BasetenSecret.spec.reassertInterval: a Kubernetes duration of at least a minute, held to
that by the types and by the CRD's rule alike (docs/contract.md 13.1)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from baseten_operator.api.secret_crd import build_secret_crd
from baseten_operator.api.secret_types import BasetenSecretSpec
from baseten_operator.sim.kube.schema import apply_structural_schema, rule_compile_causes

SPEC = {"name": "hf_token", "secretRef": {"name": "hf", "key": "token"}}


def crd_schema() -> dict[str, Any]:
    schema: dict[str, Any] = build_secret_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def crd_refusals(spec: dict[str, Any]) -> list[str]:
    causes = apply_structural_schema(crd_schema(), {"spec": spec}, None)
    return [cause["message"] for cause in causes]


@pytest.mark.parametrize(
    ("interval", "seconds"), [("1m", 60), ("90m", 5400), ("1h30m", 5400), ("24h", 86400)]
)
def test_a_duration_of_a_minute_or_more_is_accepted(interval: str, seconds: float) -> None:
    spec = {**SPEC, "reassertInterval": interval}
    assert BasetenSecretSpec.model_validate(spec).reassert_seconds == seconds
    assert crd_refusals(spec) == []


@pytest.mark.parametrize("interval", ["30s", "59s", "0.5m"])
def test_less_than_a_minute_is_refused_by_both(interval: str) -> None:
    spec = {**SPEC, "reassertInterval": interval}
    with pytest.raises(ValidationError, match="reassertInterval must be at least 1m"):
        BasetenSecretSpec.model_validate(spec)
    assert any("reassertInterval must be at least 1m" in m for m in crd_refusals(spec))


@pytest.mark.parametrize("interval", ["3600", "1d", "1h 30m", "", "-1h"])
def test_what_is_not_a_duration_is_refused_by_both(interval: str) -> None:
    spec = {**SPEC, "reassertInterval": interval}
    with pytest.raises(ValidationError):
        BasetenSecretSpec.model_validate(spec)
    assert crd_refusals(spec) != []


def test_unset_means_never_and_the_crd_rules_compile() -> None:
    assert BasetenSecretSpec.model_validate(SPEC).reassert_seconds is None
    assert crd_refusals(SPEC) == []
    assert rule_compile_causes(crd_schema()) == []
