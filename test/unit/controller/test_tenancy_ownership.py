"""Tenancy rule 1: one owner per (team, model, environment); Observe never claims."""

from __future__ import annotations

from typing import Any

from baseten_operator.controller.basetenmodel.ownership import claim_index, requests_for_claims
from baseten_operator.runtime.controller import Request

OLDER = "2026-01-01T00:00:00Z"
YOUNGER = "2026-01-02T00:00:00Z"
CONFLICT_TEXT = "environment production of model 'my-llm' is managed by default/my-model"


def rival(h, *, namespace: str = "team-b", name: str = "rival", **spec: Any) -> None:
    h.create(name=name, namespace=namespace, created=YOUNGER, **spec)


def conditions(h, name: str, namespace: str) -> dict[str, str]:
    return {c["type"]: c["status"] for c in h.status(name, namespace)["conditions"]}


def test_the_younger_claimant_stands_down_without_calling_baseten(h) -> None:
    h.steady_world()
    h.create(created=OLDER)
    rival(h, environment={"name": "production", "autoscaling": {"minReplica": 2}})
    h.run()
    h.baseten.calls.clear()

    h.run("rival", "team-b")

    assert h.baseten.calls == []
    status = h.status("rival", "team-b")
    assert status["deploymentStatus"] == "CONFLICT"
    assert status["message"] == CONFLICT_TEXT
    assert conditions(h, "rival", "team-b") == {
        "Ready": "False",
        "Progressing": "False",
        "Reconciling": "False",
        "Stalled": "True",  # until the owner goes or moves
    }
    assert h.event("EnvironmentConflict") == ("Warning", CONFLICT_TEXT)


def test_the_conflict_event_comes_once_and_no_poll_is_scheduled(h) -> None:
    h.create(created=OLDER)
    rival(h)
    h.run("rival", "team-b")
    result = h.run("rival", "team-b")
    assert h.events == []
    assert h.writes == 0
    assert result.requeue_after is None


def test_the_owner_keeps_reconciling(h) -> None:
    h.steady_world()
    h.create(created=OLDER)
    rival(h)
    h.run()
    assert h.word() == "ACTIVE"


def test_same_creation_time_falls_back_to_namespace_then_name(h) -> None:
    h.create(name="b", namespace="ns-a", created=OLDER)
    h.create(name="a", namespace="ns-b", created=OLDER)
    h.run("a", "ns-b")
    assert h.status("a", "ns-b")["message"].endswith("is managed by ns-a/b")


def test_other_environments_and_models_do_not_conflict(h) -> None:
    h.steady_world()
    h.create(created=YOUNGER)
    h.create(name="staging", namespace="team-b", created=OLDER, environment={"name": "staging"})
    h.create(name="other", namespace="team-b", created=OLDER, modelName="other-llm")
    h.run()
    assert h.word() == "ACTIVE"


def test_observe_never_claims_and_never_conflicts(h) -> None:
    h.steady_world()
    h.create(name="watcher", namespace="team-b", created=OLDER, mode="Observe")
    h.create(created=YOUNGER)
    h.run()
    assert h.word() == "ACTIVE"
    h.run("watcher", "team-b")
    assert h.status("watcher", "team-b")["deploymentStatus"] != "CONFLICT"


def test_pause_claims(h) -> None:
    h.create(name="paused", namespace="team-b", created=OLDER, mode="Pause")
    h.create(created=YOUNGER)
    h.run()
    assert h.word() == "CONFLICT"
    assert h.message() == ("environment production of model 'my-llm' is managed by team-b/paused")


def test_teams_are_part_of_the_claim(h) -> None:
    h.baseten.add_model(team="search")
    h.namespaces.annotate("team-b", team="ranking")
    h.namespaces.annotate("default", team="search")
    h.create(name="rival", namespace="team-b", created=OLDER)
    h.create(created=YOUNGER)
    h.run()
    assert h.word() != "CONFLICT"
    assert h.baseten.called("list_team_models") == [("team-search", "my-llm")]


def test_a_claimant_its_namespace_refuses_owns_nothing(h) -> None:
    h.steady_world()
    h.namespaces.annotate("team-b", allowed_models="ranker")
    h.create(name="squatter", namespace="team-b", created=OLDER)
    h.create(created=YOUNGER)
    h.run()
    assert h.word() == "ACTIVE"


def test_the_next_in_line_takes_over_when_the_owner_is_deleted(h) -> None:
    h.steady_world()
    h.create(name="owner", namespace="team-a", created=OLDER)
    h.create(created=YOUNGER)
    h.run()
    assert h.word() == "CONFLICT"
    h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", YOUNGER), "owner", "team-a")
    h.run()
    assert h.word() == "ACTIVE"


def test_the_next_in_line_takes_over_when_the_owner_points_elsewhere(h) -> None:
    h.steady_world()
    h.create(name="owner", namespace="team-a", created=OLDER)
    h.create(created=YOUNGER)
    h.run()
    h.edit(lambda o: o["spec"].__setitem__("mode", "Observe"), "owner", "team-a")
    h.run()
    assert h.word() == "ACTIVE"


def test_a_lost_claim_wakes_every_other_claimant() -> None:
    def cr(namespace: str, name: str, env: str = "production") -> dict[str, Any]:
        return {
            "metadata": {"namespace": namespace, "name": name},
            "spec": {"modelName": "m", "environment": {"name": env}},
        }

    owner, second, third, elsewhere = cr("a", "o"), cr("b", "s"), cr("c", "t"), cr("d", "e", "x")
    everyone = [owner, second, third, elsewhere]

    def claimants(value: str) -> list[dict[str, Any]]:
        return [obj for obj in everyone if value in claim_index(obj)]

    deleting = {**owner, "metadata": {**owner["metadata"], "deletionTimestamp": OLDER}}
    assert claim_index(deleting) == []
    assert set(requests_for_claims(claimants, [deleting])) == {
        Request("a", "o"),
        Request("b", "s"),
        Request("c", "t"),
    }


# --- a CR without a team may be in every team (its lookup is organisation-wide) ---------


def test_a_team_cr_stands_down_for_an_older_cr_without_a_team(h) -> None:
    h.baseten.add_model(team="search")
    h.namespaces.annotate("default", team="search")
    h.create(name="le-3", namespace="team-b", created=OLDER)  # team-b names no team
    h.create(created=YOUNGER)
    h.run()
    assert h.word() == "CONFLICT"
    assert h.message() == "environment production of model 'my-llm' is managed by team-b/le-3"
    assert h.baseten.calls == []


def test_a_cr_without_a_team_stands_down_for_an_older_team_cr(h) -> None:
    h.steady_world()
    h.namespaces.annotate("default", team="search")
    h.create(created=OLDER)
    rival(h)  # team-b: no team
    h.run("rival", "team-b")
    assert h.status("rival", "team-b")["message"] == CONFLICT_TEXT
    assert h.baseten.calls == []


def test_a_cr_without_a_team_standing_down_holds_up_no_other_team(h) -> None:
    """search (oldest) owns; the no-team CR stands down for it; ranking owns its own
    model, since the only CR before it that could share its team is not an owner."""
    h.baseten.add_model(team="ranking")
    h.namespaces.annotate("ns-search", team="search")
    h.namespaces.annotate("ns-ranking", team="ranking")
    h.create(name="a", namespace="ns-search", created="2026-01-01T00:00:00Z")
    h.create(name="n", namespace="ns-none", created="2026-01-02T00:00:00Z")
    h.create(name="r", namespace="ns-ranking", created="2026-01-03T00:00:00Z")

    h.run("n", "ns-none")
    assert h.status("n", "ns-none")["message"].endswith("is managed by ns-search/a")
    h.run("r", "ns-ranking")
    assert h.status("r", "ns-ranking")["deploymentStatus"] != "CONFLICT"
    assert h.baseten.called("list_team_models") == [("team-ranking", "my-llm")]


def test_a_changed_owner_emits_the_conflict_event_again(h) -> None:
    h.create(name="first", namespace="team-a", created="2025-12-01T00:00:00Z")
    h.create(name="owner", namespace="team-c", created=OLDER)
    rival(h)
    h.run("rival", "team-b")
    assert h.event("EnvironmentConflict")[1].endswith("is managed by team-a/first")
    h.edit(lambda o: o["spec"].__setitem__("mode", "Observe"), "first", "team-a")
    h.run("rival", "team-b")
    text = "environment production of model 'my-llm' is managed by team-c/owner"
    assert h.event("EnvironmentConflict") == ("Warning", text)
