"""One owner per (team, Baseten secret name), the namespace policy's secret prefixes and
team (docs/contract.md 13.6)."""

from __future__ import annotations

from typing import Any


def test_the_younger_of_two_crs_on_one_name_stands_down(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "a"})
    sh.secrets.put("hf2", {"token": "b"})
    sh.create(name="older", created="2026-01-01T00:00:00Z")
    sh.create(
        name="younger", created="2026-01-02T00:00:00Z", secretRef={"name": "hf2", "key": "token"}
    )
    sh.run("older")
    sh.run("younger")
    status = sh.status("younger")
    assert status["state"] == "CONFLICT"
    assert status["message"] == "Baseten secret hf_token is managed by BasetenSecret default/older"
    assert sh.events == [("Warning", "SecretSyncFailed", status["message"])]
    assert len(sh.upserts()) == 1
    assert sh.baseten.secret_value("hf_token") == "a"
    # Passes again: no fight, no second Event.
    sh.run("older")
    sh.run("younger")
    assert len(sh.upserts()) == 1
    assert sh.events == []


def test_the_younger_takes_over_when_the_owner_goes(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "a"})
    sh.secrets.put("hf2", {"token": "b"})
    sh.create(name="older", created="2026-01-01T00:00:00Z")
    sh.create(
        name="younger", created="2026-01-02T00:00:00Z", secretRef={"name": "hf2", "key": "token"}
    )
    sh.run("older")
    sh.run("younger")
    del sh.kube.objects[("default", "older")]
    sh.run("younger")
    assert sh.status("younger")["state"] == "SYNCED"
    assert sh.baseten.secret_value("hf_token") == "b"


def test_crs_in_different_teams_both_own(sh: Any) -> None:
    sh.baseten.teams.update(red="team-red", blue="team-blue")
    sh.secrets.put("hf", {"token": "a"})
    sh.create(name="one", team="red", created="2026-01-01T00:00:00Z")
    sh.create(name="two", team="blue", created="2026-01-02T00:00:00Z")
    sh.run("one")
    sh.run("two")
    assert sh.status("one")["state"] == sh.status("two")["state"] == "SYNCED"
    assert sh.baseten.secret_value("hf_token", team="red") == "a"
    assert sh.baseten.secret_value("hf_token", team="blue") == "a"
    assert sh.baseten.secret_value("hf_token") is None  # never the workspace's own


def test_an_observe_cr_never_conflicts(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "a"})
    sh.create(name="older", created="2026-01-01T00:00:00Z")
    sh.create(name="watcher", created="2026-01-02T00:00:00Z", mode="Observe")
    sh.run("older")
    sh.run("watcher")
    # It only reports: its own status never recorded a write, so it can neither vouch for
    # the value nor call it wrong.
    assert sh.status("watcher")["state"] == "SYNCED"
    assert sh.status("watcher")["message"] == (
        "observe: Baseten secret hf_token exists; whether it holds this Secret's value is "
        "unknown (Baseten never returns values)"
    )


def test_a_name_outside_the_namespace_prefixes_never_writes(sh: Any) -> None:
    sh.namespaces.annotate("default", allowed_secret_prefixes="team-a-, shared_")
    sh.secrets.put("hf", {"token": "a"})
    sh.create()
    sh.run()
    assert sh.status()["state"] == "FAILED"
    assert sh.status()["message"] == (
        "namespace policy: secret 'hf_token' is not allowed in namespace default "
        "(models.baseten.com/allowed-secret-prefixes: team-a-, shared_)"
    )
    assert sh.baseten.calls == [] and sh.secrets.reads == 0
    sh.namespaces.annotate("default", allowed_secret_prefixes="hf_")
    sh.run()
    assert sh.status()["state"] == "SYNCED"


def test_the_namespace_team_scopes_the_writes(sh: Any) -> None:
    sh.baseten.teams["red"] = "team-red"
    sh.namespaces.annotate("default", team="red")
    sh.secrets.put("hf", {"token": "a"})
    sh.create()
    sh.run()
    assert sh.baseten.secret_value("hf_token", team="red") == "a"
    assert sh.baseten.secret_value("hf_token") is None


def test_a_team_other_than_the_namespace_team_is_refused(sh: Any) -> None:
    sh.namespaces.annotate("default", team="red")
    sh.create(team="blue")
    sh.run()
    assert sh.status()["state"] == "FAILED"
    assert "team 'blue' is not allowed" in sh.status()["message"]
