"""Reading a kind's spec from the object the informer holds: the one parser of both kinds."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

SpecT = TypeVar("SpecT", bound=BaseModel)


def parse_spec(kind: type[SpecT], obj: dict[str, Any]) -> tuple[SpecT | None, list[str]]:
    """The spec, or the problems that make it invalid, each naming its field."""
    try:
        return kind.model_validate(obj.get("spec") or {}), []
    except ValidationError as error:
        problems = []
        for detail in error.errors():
            field = ".".join(["spec", *(str(part) for part in detail["loc"])])
            problems.append(f"{field}: {detail['msg'].removeprefix('Value error, ')}")
        return None, problems


def valid_spec(kind: type[SpecT], obj: dict[str, Any]) -> SpecT | None:
    """The spec of another object a pass looks at (a claimant, a model naming a secret);
    None when it is invalid, which the caller treats as failing closed."""
    return parse_spec(kind, obj)[0]
