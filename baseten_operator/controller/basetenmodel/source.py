"""Which deployments belong to the spec's source (docs/contract.md 3.9)."""

from __future__ import annotations


def matches_source(name: str, source: str) -> bool:
    """Baseten suffixes promoted copies with `.{unix time}`: they still belong to `source`."""
    return name == source or name.startswith(f"{source}.")
