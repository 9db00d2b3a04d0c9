"""spec.promotion's rules (docs/contract.md section 14): through the emulator's admission of
the generated CRD, as an API server judges it, and through the operator's own types, which
must agree."""

from __future__ import annotations

from typing import Any

import pytest

from testsupport.crd_admission import admit, operator_problems

ERRORS = {"name": "errors", "errorRatio": {"maxPercent": 2}}


def spec(analysis: dict[str, Any], settings: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "modelName": "m",
        "sourceDeploymentName": "s",
        "environment": {
            "name": "production",
            "promotionSettings": {"rollingDeploy": True} if settings is None else settings,
        },
        "promotion": {"analysis": analysis},
    }


@pytest.mark.parametrize(
    "settings", [{"rollingDeploy": True}, {"rampUpWhilePromoting": True}], ids=str
)
def test_an_analysis_of_a_stepped_promotion_is_admitted_with_its_defaults(
    openapi_schema: dict[str, Any], settings: dict[str, Any]
) -> None:
    full = spec({"metrics": [ERRORS]}, settings)
    assert admit(openapi_schema, full) == []
    assert operator_problems(full) is None


PROMETHEUS = {"address": "http://prometheus:9090", "query": "up"}


@pytest.mark.parametrize(
    ("analysis", "settings", "refusal"),
    [
        (
            {"metrics": [ERRORS]},
            {},
            "promotion.analysis needs environment.promotionSettings.rollingDeploy or "
            "rampUpWhilePromoting",
        ),
        (
            {"metrics": [ERRORS]},
            {"rollingDeploy": False},
            "promotion.analysis needs environment.promotionSettings.rollingDeploy",
        ),
        ({"interval": "29s", "metrics": [ERRORS]}, None, "interval must be at least 30s"),
        (
            {
                "metrics": [
                    {
                        "name": "both",
                        "errorRatio": {"maxPercent": 1},
                        "latency": {"quantile": "p99", "maxMilliseconds": 1},
                    }
                ]
            },
            None,
            "exactly one of errorRatio, latency or prometheus must be set",
        ),  # fmt: skip
        ({"metrics": [{"name": "none"}]}, None, "exactly one of errorRatio, latency"),
        (
            {"metrics": [{"name": "p", "prometheus": PROMETHEUS}]},
            None,
            "max or min must be set",
        ),
        ({"metrics": []}, None, "should have at least 1 item"),
        ({"failureLimit": 0, "metrics": [ERRORS]}, None, "greater than or equal to 1"),
    ],
)
def test_what_the_rules_refuse_both_refuse(
    openapi_schema: dict[str, Any],
    analysis: dict[str, Any],
    settings: dict[str, Any] | None,
    refusal: str,
) -> None:
    full = spec(analysis, settings)
    causes = admit(openapi_schema, full)
    assert causes, "the API server admitted it"
    problems = operator_problems(full)
    assert problems is not None, "the operator's types admitted it"
    if "at least 1 item" not in refusal and "greater than" not in refusal:
        assert any(refusal in cause for cause in causes), causes
        assert refusal.split(":")[0] in problems


def test_metric_names_are_unique(openapi_schema: dict[str, Any]) -> None:
    full = spec({"metrics": [ERRORS, {**ERRORS, "errorRatio": {"maxPercent": 5}}]})
    assert any("Duplicate value" in cause for cause in admit(openapi_schema, full))
    assert "metric names must be unique" in (operator_problems(full) or "")
