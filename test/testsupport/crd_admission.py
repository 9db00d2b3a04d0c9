"""A BasetenModel spec judged twice: by the emulator's admission of the generated CRD (as an
API server would judge it) and by the operator's own types, which must agree."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import ValidationError

from baseten_operator.api.types import BasetenModelSpec
from baseten_operator.sim.kube.schema import apply_structural_schema


def admit(
    schema: dict[str, Any], spec: dict[str, Any], old: dict[str, Any] | None = None
) -> list[str]:
    """The messages of the causes the API server would answer (empty: admitted)."""
    old_object = None if old is None else {"spec": copy.deepcopy(old)}
    causes = apply_structural_schema(schema, {"spec": copy.deepcopy(spec)}, old_object)
    return [cause["message"] for cause in causes]


def operator_problems(spec: dict[str, Any]) -> str | None:
    try:
        BasetenModelSpec.model_validate(spec)
    except ValidationError as error:
        return str(error)
    return None
