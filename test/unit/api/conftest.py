"""Fixtures of the CRD tests: the generated schema and the user guide's examples."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from baseten_operator.api.crd import build_crd
from testsupport.paths import REPO

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def crd() -> dict[str, Any]:
    return build_crd()


@pytest.fixture(scope="session")
def openapi_schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@pytest.fixture(scope="session")
def _seed_examples() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((HERE / "seed_examples.yaml").read_text()))


@pytest.fixture
def seed_examples(_seed_examples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fresh copies: admission mutates objects (pruning, defaults)."""
    return copy.deepcopy(_seed_examples)


@pytest.fixture
def complete_example(seed_examples: list[dict[str, Any]]) -> dict[str, Any]:
    return seed_examples[0]


@pytest.fixture
def repo_root() -> Path:
    return REPO
