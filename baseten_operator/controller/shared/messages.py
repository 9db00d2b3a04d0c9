"""The status texts both kinds share (docs/contract.md sections 1, 12 and 13), character for
character: an invalid spec, a namespace's policy, a namespace's API key Secret."""

from __future__ import annotations

from collections.abc import Sequence


def invalid_spec(problems: Sequence[str]) -> str:
    return f"invalid spec: {'; '.join(problems)}"


def policy_violation(what: str, namespace: str, annotation: str, value: str) -> str:
    return (
        f"namespace policy: {what} is not allowed in namespace {namespace} ({annotation}: {value})"
    )


def api_key_secret_missing(namespace: str, name: str) -> str:
    return f"API key Secret {namespace}/{name} not found"


def api_key_secret_key_missing(namespace: str, name: str, key: str) -> str:
    return f"API key Secret {namespace}/{name} has no non-empty key '{key}'"


def api_key_secret_key_unusable(namespace: str, name: str, key: str) -> str:
    return (
        f"API key Secret {namespace}/{name} key '{key}' contains a line break or another "
        "character an HTTP header cannot carry"
    )
