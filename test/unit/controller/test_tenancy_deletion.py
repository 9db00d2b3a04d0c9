"""Tenancy rule 2: a model another CR still names is never deleted under it."""

from __future__ import annotations

from typing import Any

import pytest

BLOCKED_TEXT = (
    "deletion blocked: model 'my-llm' is still managed by default/le-3 (production environment)"
)


def deleting(h, policy: str = "Delete") -> None:
    h.create(
        name="cross",
        namespace="team-b",
        deletionPolicy=policy,
        environment={"name": "scratch"},
        status={"modelID": "m1"},
    )
    h.edit(
        lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"),
        "cross",
        "team-b",
    )


def serving(h, **spec: Any) -> dict[str, Any]:
    obj = h.create(name="le-3", **spec)
    h.siblings.append(obj)
    return obj


@pytest.mark.parametrize("policy", ["Delete", "DeleteWithGuardrails"])
def test_deleting_is_blocked_while_another_namespace_names_the_model(h, policy) -> None:
    h.baseten.add_model()
    serving(h)
    deleting(h, policy)

    result = h.run("cross", "team-b")

    assert h.baseten.calls == []
    assert result.requeue_after == 30.0
    status = h.status("cross", "team-b")
    assert (status["deploymentStatus"], status["message"]) == ("DELETE_BLOCKED", BLOCKED_TEXT)
    assert h.event("ModelDeleteBlocked") == ("Warning", BLOCKED_TEXT)
    h.run("cross", "team-b")
    assert h.events == []  # the event marks entering the state only


@pytest.mark.parametrize("mode", ["Observe", "Pause"])
def test_any_mode_blocks(h, mode) -> None:
    h.baseten.add_model()
    serving(h, mode=mode)
    deleting(h)
    h.run("cross", "team-b")
    assert h.status("cross", "team-b")["deploymentStatus"] == "DELETE_BLOCKED"


def test_once_the_others_are_gone_the_model_is_deleted(h) -> None:
    h.baseten.add_model()
    serving(h)
    deleting(h)
    h.run("cross", "team-b")
    h.siblings.clear()
    h.run("cross", "team-b")
    assert h.baseten.called("delete_model") == [("m1",)]
    assert ("team-b", "cross") not in h.kube.objects


def test_a_sibling_in_another_team_does_not_block(h) -> None:
    h.baseten.add_model(team="ranking")
    h.namespaces.annotate("default", team="search")
    h.namespaces.annotate("team-b", team="ranking")
    serving(h)
    deleting(h)
    h.run("cross", "team-b")
    assert h.baseten.called("delete_model") == [("m1",)]


def test_retain_is_never_blocked(h) -> None:
    serving(h)
    deleting(h, "Retain")
    h.run("cross", "team-b")
    assert h.baseten.calls == []
    assert ("team-b", "cross") not in h.kube.objects


def test_a_sibling_without_a_team_blocks_a_team_deletion(h) -> None:
    h.baseten.add_model(team="ranking")
    h.namespaces.annotate("team-b", team="ranking")  # default names no team
    serving(h)
    deleting(h)
    h.run("cross", "team-b")
    assert h.status("cross", "team-b")["message"] == BLOCKED_TEXT
    assert h.baseten.calls == []


def test_a_deletion_without_a_team_is_blocked_by_any_team_sibling(h) -> None:
    """team-b names no team: its lookup could have resolved default's team model."""
    h.baseten.add_model(team="search")
    h.namespaces.annotate("default", team="search")
    serving(h)
    deleting(h)
    h.run("cross", "team-b")
    assert h.status("cross", "team-b")["message"] == BLOCKED_TEXT
    assert h.baseten.calls == []


def test_a_new_reason_to_block_emits_the_event_again(h) -> None:
    """From the shared-model block to a guardrail block: the reason changed, so the
    Event comes again, with the new text."""
    h.steady_world()
    serving(h)
    deleting(h, "DeleteWithGuardrails")
    h.run("cross", "team-b")
    assert h.event("ModelDeleteBlocked") == ("Warning", BLOCKED_TEXT)
    h.siblings.clear()
    h.run("cross", "team-b")
    guardrail = (
        "deletion blocked: production (min=1, active=3) must be scaled to min_replicas: 0 "
        "and idle before model can be deleted"
    )
    assert h.status("cross", "team-b")["message"] == guardrail
    assert h.event("ModelDeleteBlocked") == ("Warning", guardrail)
    h.run("cross", "team-b")
    assert h.events == []
