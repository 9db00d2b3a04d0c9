"""Bounded input: maxLength on every string, maxProperties on maps, minReplicas <= maxReplicas.

Each bound is checked at the limit (admitted) and one past it (refused), through the
emulator's structural-schema admission (sim/kube/schema.py), as an API server would.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from baseten_operator.api.types import Autoscaling, BasetenModelSpec
from baseten_operator.sim.kube.schema import apply_structural_schema

TRUSS = "spec.trussConfig"

STRING_LIMITS = [
    ("spec.modelName", 255),
    ("spec.environment.name", 63),
    (f"{TRUSS}.baseImage.image", 1024),
    (f"{TRUSS}.setupScript.inline", 262144),
    (f"{TRUSS}.pythonVersion", 64),
    (f"{TRUSS}.resources.accelerator", 64),
    (f"{TRUSS}.baseImage.dockerAuth.secretName", 253),
    (f"{TRUSS}.baseImage.dockerAuth.registry", 253),
    (f"{TRUSS}.dockerServer.startCommand", 4096),
    (f"{TRUSS}.dockerServer.predictEndpoint", 1024),
    (f"{TRUSS}.setupScript.configMapRef.name", 253),
    (f"{TRUSS}.setupScript.configMapRef.key", 253),
]


def admit(schema: dict[str, Any], obj: dict[str, Any]) -> list[dict[str, str]]:
    return [dict(cause) for cause in apply_structural_schema(schema, obj, None)]


def set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    node = obj
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value


# What the API server adds after an error that stops it from bounding the CEL rules' cost.
RULES_NOT_CHECKED = {
    "reason": "FieldValueInvalid",
    "message": "Invalid value: null: some validation rules were not checked because the object "
    "was invalid; correct the existing errors to complete validation",
    "field": "<nil>",
}


def a_string(length: int) -> str:
    # Environment names must also match their pattern: lowercase letters do.
    return "a" * length


@pytest.mark.parametrize(("path", "limit"), STRING_LIMITS)
def test_every_string_is_bounded(
    openapi_schema: dict[str, Any], complete_example: dict[str, Any], path: str, limit: int
) -> None:
    at_limit = copy.deepcopy(complete_example)
    set_path(at_limit, path, a_string(limit))
    assert admit(openapi_schema, at_limit) == []
    set_path(complete_example, path, a_string(limit + 1))
    assert admit(openapi_schema, complete_example) == [
        {
            "reason": "FieldValueTooLong",
            "message": f"Too long: may not be more than {limit} bytes",
            "field": path,
        },
        RULES_NOT_CHECKED,
    ]


def test_source_deployment_name_is_bounded(
    openapi_schema: dict[str, Any], complete_example: dict[str, Any]
) -> None:
    del complete_example["spec"]["trussConfig"]
    complete_example["spec"]["sourceDeploymentName"] = "s" * (1024 * 1024)
    assert [c["field"] for c in admit(openapi_schema, complete_example)] == [
        "spec.sourceDeploymentName",
        "<nil>",
    ]


@pytest.mark.parametrize("field", ["secrets", "environmentVariables"])
def test_map_keys_values_and_sizes_are_bounded(
    openapi_schema: dict[str, Any], complete_example: dict[str, Any], field: str
) -> None:
    truss = complete_example["spec"]["trussConfig"]
    truss[field] = {"k" * 253: "v" * 8192, **{f"k{i}": "" for i in range(99)}}
    assert admit(openapi_schema, copy.deepcopy(complete_example)) == []

    truss[field] = {"ok": "v" * 8193}
    assert admit(openapi_schema, copy.deepcopy(complete_example))[0]["field"] == (
        f"{TRUSS}.{field}.ok"
    )

    truss[field] = {"k" * 254: ""}
    causes = admit(openapi_schema, copy.deepcopy(complete_example))
    assert [(c["field"], c["message"]) for c in causes] == [
        (f"{TRUSS}.{field}", 'Invalid value: "object": keys must be at most 253 characters')
    ]

    truss[field] = {f"k{i}": "" for i in range(101)}
    causes = admit(openapi_schema, copy.deepcopy(complete_example))
    assert [(c["field"], c["message"]) for c in causes] == [
        (f"{TRUSS}.{field}", "Too many: 101: must have at most 100 items"),
        (RULES_NOT_CHECKED["field"], RULES_NOT_CHECKED["message"]),
    ]


def test_tags_are_bounded(openapi_schema: dict[str, Any], complete_example: dict[str, Any]) -> None:
    metadata = complete_example["spec"]["trussConfig"]["modelMetadata"]
    metadata["tags"] = ["t" * 256]
    assert admit(openapi_schema, copy.deepcopy(complete_example))[0]["field"] == (
        f"{TRUSS}.modelMetadata.tags[0]"
    )
    metadata["tags"] = ["t"] * 101
    assert admit(openapi_schema, complete_example)[0]["reason"] == "FieldValueTooMany"


@pytest.mark.parametrize(
    ("autoscaling", "admitted"),
    [
        ({"minReplicas": 2, "maxReplicas": 2}, True),
        ({"minReplicas": 0, "maxReplicas": 1}, True),
        ({"minReplicas": 5}, True),
        ({"maxReplicas": 1}, True),
        ({"minReplicas": 3, "maxReplicas": 2}, False),
    ],
)
def test_min_replicas_must_not_exceed_max_replicas(
    openapi_schema: dict[str, Any],
    complete_example: dict[str, Any],
    autoscaling: dict[str, int],
    admitted: bool,
) -> None:
    complete_example["spec"]["environment"]["autoscaling"] = dict(autoscaling)
    expected = (
        []
        if admitted
        else [
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "object": minReplicas must be less than or equal '
                "to maxReplicas",
                "field": "spec.environment.autoscaling",
            }
        ]
    )
    assert admit(openapi_schema, complete_example) == expected
    # The operator's own parse agrees with the API server.
    if admitted:
        Autoscaling.model_validate(autoscaling)
    else:
        with pytest.raises(ValidationError, match="minReplicas must be less than or equal"):
            Autoscaling.model_validate(autoscaling)


def test_the_types_enforce_the_same_string_bounds() -> None:
    spec = {"modelName": "m" * 256, "sourceDeploymentName": "s", "environment": {"name": "p"}}
    with pytest.raises(ValidationError, match="at most 255 characters"):
        BasetenModelSpec.model_validate(spec)
