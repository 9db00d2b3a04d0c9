"""Audit of section 2: a second pass over an unchanged world writes no status.

Every resting state the operator can sit in for a while is visited twice; the second
pass must find nothing to write (a write is a watch event, and needless ones loop).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

SOURCE_SPEC: dict[str, Any] = {
    "modelName": "my-llm",
    "sourceDeploymentName": "src",
    "environment": {"name": "production"},
}


def steady(h) -> dict[str, Any]:
    h.steady_world()
    return SOURCE_SPEC


def candidate_in_progress(h) -> dict[str, Any]:
    h.baseten.add_model()
    old = h.baseten.add_deployment(name="old", active_replica_count=2)
    cand = h.baseten.add_deployment(name="src", status="LOADING_MODEL")
    h.baseten.add_environment(current=old, candidate=cand)
    return SOURCE_SPEC


def blocked_by_foreign_candidate(h) -> dict[str, Any]:
    h.baseten.add_model()
    h.baseten.add_deployment(name="src")
    other = h.baseten.add_deployment(name="other", status="BUILDING")
    h.baseten.add_environment(candidate=other)
    return SOURCE_SPEC


def waiting_for_source(h) -> dict[str, Any]:
    h.baseten.add_model()
    h.baseten.add_deployment(name="src", status="BUILDING")
    h.baseten.add_environment()
    return SOURCE_SPEC


def failed_source_backing_off(h) -> dict[str, Any]:
    h.baseten.add_model()
    h.baseten.add_deployment(name="src", status="DEPLOY_FAILED")
    h.baseten.add_environment()
    return SOURCE_SPEC


def observing_drift(h) -> dict[str, Any]:
    h.steady_world(autoscaling={"min_replica": 0, "max_replica": 3})
    return {
        **SOURCE_SPEC,
        "mode": "Observe",
        "environment": {"name": "production", "autoscaling": {"minReplicas": 2}},
    }


def observing_unpromoted(h) -> dict[str, Any]:
    h.steady_world(name="old")
    return {**SOURCE_SPEC, "mode": "Observe"}


def paused(h) -> dict[str, Any]:
    h.steady_world()
    return {**SOURCE_SPEC, "mode": "Pause"}


STATES: dict[str, Callable[[Any], dict[str, Any]]] = {
    "steady": steady,
    "candidate in progress": candidate_in_progress,
    "blocked by a foreign candidate": blocked_by_foreign_candidate,
    "waiting for the source": waiting_for_source,
    "failed source backing off": failed_source_backing_off,
    "observing drift": observing_drift,
    "observing an unpromoted source": observing_unpromoted,
    "paused": paused,
}


@pytest.mark.parametrize("state", STATES)
def test_second_pass_over_an_unchanged_world_writes_nothing(h, state: str) -> None:
    h.create(STATES[state](h))
    h.run()
    h.clock.advance(5)
    h.run()
    before = h.obj()["status"]
    h.clock.advance(5)
    h.run()
    assert h.writes == 0
    assert h.obj()["status"] == before


def test_delete_blocked_is_stable(h) -> None:
    h.steady_world()
    h.create(SOURCE_SPEC, deletionPolicy="DeleteWithGuardrails", status={"modelID": "m1"})
    h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))
    h.run()
    assert h.word() == "DELETE_BLOCKED"
    h.clock.advance(30)
    h.run()
    assert h.writes == 0
    assert h.reasons() == []  # ModelDeleteBlocked only when entering
