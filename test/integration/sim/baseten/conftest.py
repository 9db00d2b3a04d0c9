"""Fixtures: a Baseten simulator over HTTP on a fake clock, and OpenAPI schema validation."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten import BasetenSimulator

API_KEY = "sim-test-key"
# The component schemas of Baseten's published OpenAPI spec (docs/baseten-api.md) that the simulator
# answers with, copied verbatim (the full spec lives outside the repository).
SPEC_PATH = Path(__file__).with_name("baseten-openapi-subset.json")
SPEC_URI = "urn:baseten-openapi"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sim(clock: FakeClock) -> Iterator[BasetenSimulator]:
    simulator = BasetenSimulator(API_KEY, clock=clock)
    simulator.start()
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture
def http() -> Iterator[requests.Session]:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {API_KEY}"
    yield session
    session.close()


Validate = Callable[[Any, str], None]


@pytest.fixture(scope="session")
def validate() -> Validate:
    """Validate a response body against `#/components/schemas/<name>` of the spec.

    OpenAPI 3.1 schemas are JSON Schema 2020-12; $refs resolve against the spec document.
    On top of the schema, every property sent must be declared and `date-time`s parse.
    """
    spec = json.loads(SPEC_PATH.read_text())
    registry = Registry().with_resource(
        SPEC_URI, Resource.from_contents(spec, default_specification=DRAFT202012)
    )
    schemas = spec["components"]["schemas"]

    def matches(instance: Any, ref: dict) -> bool:
        """Whether `instance` is valid against a `#/components/...` reference of the spec."""
        absolute = {"$ref": ref["$ref"].replace("#", f"{SPEC_URI}#", 1)}
        return Draft202012Validator(absolute, registry=registry).is_valid(instance)

    def check_declared(instance: Any, schema: dict) -> None:
        if "$ref" in schema:
            check_declared(instance, schemas[schema["$ref"].rsplit("/", 1)[1]])
            return
        # Of an anyOf's object shapes, the one the instance is (a schedule is a recurring
        # one or a one-time one) declares its properties.
        shapes = [option for option in schema.get("anyOf", []) if "$ref" in option]
        if isinstance(instance, dict) and shapes:
            chosen = [option for option in shapes if matches(instance, option)]
            assert chosen, f"{schema.get('title')}: matches none of {shapes}"
            check_declared(instance, chosen[0])
        if isinstance(instance, dict) and "properties" in schema:
            undeclared = set(instance) - set(schema["properties"])
            assert not undeclared, f"{schema.get('title')}: undeclared {undeclared}"
            for key, value in instance.items():
                prop = schema["properties"][key]
                if prop.get("format") == "date-time":
                    datetime.fromisoformat(value)
                check_declared(value, prop)
        if isinstance(instance, list) and "items" in schema:
            for item in instance:
                check_declared(item, schema["items"])

    def validate_body(body: Any, component: str) -> None:
        ref = {"$ref": f"{SPEC_URI}#/components/schemas/{component}"}
        Draft202012Validator(ref, registry=registry).validate(body)
        check_declared(body, schemas[component])

    return validate_body
