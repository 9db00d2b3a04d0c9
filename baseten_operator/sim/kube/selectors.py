"""Label and field selectors, as `?labelSelector=` and `?fieldSelector=` express them."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import bad_request

_PUNCTUATION = frozenset({"(", ")", ",", "!=", "==", "=", "!"})
_TOKEN = re.compile(r"\s*(\(|\)|,|!=|==|=|!|[A-Za-z0-9_./-]+)")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        # "!=" and "notin" also match objects that lack the label.
        return not present or value not in self.values


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        found = _TOKEN.match(text, pos)
        if found is None:
            raise bad_request(f"unable to parse requirement: invalid label selector {text!r}")
        tokens.append(found.group(1))
        pos = found.end()
    return tokens


class LabelSelector:
    """A conjunction of requirements; the empty selector matches everything."""

    def __init__(self, requirements: list[Requirement]) -> None:
        self.requirements = requirements

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        tokens = _tokens(text or "")
        requirements: list[Requirement] = []
        i = 0

        def fail() -> Exception:
            return bad_request(f"unable to parse requirement: invalid label selector {text!r}")

        def take() -> str:
            nonlocal i
            if i >= len(tokens):
                raise fail()
            i += 1
            return tokens[i - 1]

        def take_key() -> str:
            key = take()
            if key in _PUNCTUATION:
                raise fail()
            return key

        while i < len(tokens):
            if tokens[i] == "!":
                i += 1
                requirements.append(Requirement(take_key(), "!"))
            else:
                key = take_key()
                nxt = tokens[i] if i < len(tokens) else ","
                if nxt == ",":
                    requirements.append(Requirement(key, "exists"))
                elif nxt in ("=", "==", "!="):
                    i += 1
                    value = tokens[i] if i < len(tokens) and tokens[i] != "," else ""
                    if value:
                        i += 1
                    requirements.append(Requirement(key, "!=" if nxt == "!=" else "=", (value,)))
                elif nxt in ("in", "notin"):
                    i += 1
                    if take() != "(":
                        raise fail()
                    values: list[str] = []
                    while (tok := take()) != ")":
                        if tok != ",":
                            values.append(tok)
                    requirements.append(Requirement(key, nxt, tuple(values)))
                else:
                    raise fail()
            if i < len(tokens):
                if tokens[i] != ",":
                    raise fail()
                i += 1
        return cls(requirements)

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


def _dotted(path: str) -> Callable[[dict[str, Any]], str]:
    keys = path.split(".")

    def read(obj: dict[str, Any]) -> str:
        value: Any = obj
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return "" if value is None else str(value)

    return read


class FieldSelector:
    """`metadata.name` / `metadata.namespace` (plus extra fields a resource allows)."""

    def __init__(self, terms: list[tuple[Callable[[dict[str, Any]], str], bool, str]]) -> None:
        self.terms = terms

    @classmethod
    def parse(cls, text: str | None, allowed: frozenset[str] = frozenset()) -> FieldSelector:
        terms: list[tuple[Callable[[dict[str, Any]], str], bool, str]] = []
        for part in filter(None, (p.strip() for p in (text or "").split(","))):
            found = re.fullmatch(r"([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*)", part)
            if found is None:
                raise bad_request(f"invalid selector: {part!r}; can't understand it")
            field, op, value = found.groups()
            if field not in ("metadata.name", "metadata.namespace") and field not in allowed:
                raise bad_request(f'field label not supported: "{field}"')
            terms.append((_dotted(field), op != "!=", value))
        return cls(terms)

    def matches(self, obj: dict[str, Any]) -> bool:
        return all((read(obj) == value) == equal for read, equal, value in self.terms)

    @property
    def empty(self) -> bool:
        return not self.terms
