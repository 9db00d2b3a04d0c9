"""The BasetenSecret CustomResourceDefinition, generated from api/secret_types.py the way
api/crd.py generates BasetenModel's; the rules JSON schema cannot say (name immutable, team
as BasetenModel's) are CEL here. `make manifests` writes it to config/crd/bases."""

from __future__ import annotations

from typing import Any

from baseten_operator.api import constants
from baseten_operator.api.crd import (
    GENERATED_HEADER,
    TEAM_RULE,
    JsonSchema,
    as_yaml,
    custom_resource_definition,
    object_schema,
    status_with_conditions,
    structural_schema,
)
from baseten_operator.api.secret_types import (
    NAME_IMMUTABLE_MESSAGE,
    REASSERT_MIN,
    REASSERT_MIN_MESSAGE,
    BasetenSecretSpec,
    BasetenSecretStatus,
)

SECRET_CRD_NAME = f"{constants.SECRET_PLURAL}.{constants.GROUP}"

NAME_RULE = {"rule": "self.name == oldSelf.name", "message": NAME_IMMUTABLE_MESSAGE}
REASSERT_RULE = {
    "rule": f"!has(self.reassertInterval) || "
    f"duration(self.reassertInterval) >= duration('{REASSERT_MIN}')",
    "message": REASSERT_MIN_MESSAGE,
}

PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": "Secret", "type": "string", "jsonPath": ".spec.name"},
    {"name": "Team", "type": "string", "jsonPath": ".spec.team"},
    {"name": "State", "type": "string", "jsonPath": ".status.state"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "Message", "type": "string", "jsonPath": ".status.message"},
]


def build_secret_crd() -> dict[str, Any]:
    """The apiextensions.k8s.io/v1 CustomResourceDefinition of BasetenSecret."""
    return custom_resource_definition(
        kind=constants.SECRET_KIND,
        list_kind=constants.SECRET_LIST_KIND,
        plural=constants.SECRET_PLURAL,
        singular=constants.SECRET_SINGULAR,
        short_name=constants.SECRET_SHORT_NAME,
        printer_columns=PRINTER_COLUMNS,
        schema=object_schema(
            "BasetenSecret writes the value of one key of a Kubernetes Secret to a Baseten "
            "secret.",
            spec_schema(),
            status_with_conditions(BasetenSecretStatus, "What the operator last wrote and saw."),
        ),
    )


def spec_schema() -> JsonSchema:
    schema = structural_schema(BasetenSecretSpec)
    schema["description"] = "The Baseten secret and where its value is kept."
    schema["x-kubernetes-validations"] = [dict(NAME_RULE), dict(TEAM_RULE), dict(REASSERT_RULE)]
    return schema


def secret_manifest_text() -> str:
    """The committed config/crd/bases file of BasetenSecret."""
    return GENERATED_HEADER + as_yaml(build_secret_crd())
