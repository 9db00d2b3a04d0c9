"""Which deployments belong to the spec's source (docs/contract.md 3.7 and 3.9)."""

from __future__ import annotations

from baseten_operator.controller.context import Pass


def matches_source(name: str, source: str) -> bool:
    """Baseten suffixes promoted copies with `.{unix time}`: they still belong to `source`."""
    return name == source or name.startswith(f"{source}.")


def track_source(p: Pass, source: str) -> None:
    """Record the source this pass works on; a new one starts a new failure episode."""
    status = p.status
    if status.source_deployment_name == source:
        return
    status.source_deployment_name = source
    status.source_deployment_id = None
    p.writer.clear_retries()
