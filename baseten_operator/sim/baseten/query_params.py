"""Reading a GET's query parameters (`parse_qs`' lists) as the spec's types, 400 otherwise."""

from __future__ import annotations

from baseten_operator.sim.baseten.errors import bad_request

Query = dict[str, list[str]]


def one(query: Query, name: str) -> str | None:
    """The parameter's value (the last one when sent several times), None when absent."""
    values = query.get(name)
    return values[-1] if values else None


def integer(query: Query, name: str) -> int | None:
    text = one(query, name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise bad_request(f"{name} must be an integer") from None


def bounded(query: Query, name: str, default: int, maximum: int) -> int:
    """An integer parameter within 1..maximum, `default` when absent."""
    value = integer(query, name)
    if value is None:
        return default
    if not 1 <= value <= maximum:
        raise bad_request(f"{name} must be between 1 and {maximum}")
    return value
