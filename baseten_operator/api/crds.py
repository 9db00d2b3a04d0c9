"""Every CustomResourceDefinition of the API, in the order they are installed."""

from __future__ import annotations

from typing import Any

from baseten_operator.api.crd import as_yaml, build_crd
from baseten_operator.api.secret_crd import build_secret_crd


def all_crds() -> list[dict[str, Any]]:
    """BasetenModel's, then BasetenSecret's."""
    return [build_crd(), build_secret_crd()]


def all_crds_yaml() -> str:
    """What `baseten-operator crd` prints: every CRD, as one YAML stream."""
    return "---\n".join(as_yaml(crd) for crd in all_crds())
