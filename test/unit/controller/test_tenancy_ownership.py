"""Tenancy rule 1: one owner per (team, model, environment); Observe never claims."""

from __future__ import annotations

from typing import Any

from baseten_operator.controller.ownership import claim_index, requests_for_claims
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
    assert conditions(h, "rival", "team-b") == {"Ready": "False", "Progressing": "False"}
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
