"""Tenancy rule 3: namespace policy annotations, team lookups, namespace API keys."""

from __future__ import annotations

import pytest

from baseten_operator.controller.shared.endings import ReconcileError


def violation(h) -> tuple[str, str]:
    assert h.word() == "FAILED"
    assert h.baseten.calls == []
    return h.event("PolicyViolation")


def test_a_model_outside_allowed_models_is_refused(h) -> None:
    h.namespaces.annotate("default", allowed_models="search-*, ranker")
    h.create()
    result = h.run()
    text = (
        "namespace policy: model 'my-llm' is not allowed in namespace default "
        "(models.baseten.com/allowed-models: search-*, ranker)"
    )
    assert violation(h) == ("Warning", text)
    assert h.message() == text
    assert result.requeue_after is None
    h.run()
    assert h.events == []


@pytest.mark.parametrize("model", ["search-a", "ranker"])
def test_allowed_models_are_shell_patterns(h, model) -> None:
    h.baseten.add_model(model)
    h.namespaces.annotate("default", allowed_models="search-*,ranker")
    h.create(modelName=model)
    h.run()
    assert h.word() != "FAILED"
    assert h.baseten.called("find_model") == [(model,)]


def test_a_deletion_policy_outside_the_allowed_ones_is_refused(h) -> None:
    h.namespaces.annotate("default", allowed_deletion_policies="Retain,DeleteWithGuardrails")
    h.create(deletionPolicy="Delete")
    h.run()
    assert violation(h)[1] == (
        "namespace policy: deletionPolicy Delete is not allowed in namespace default "
        "(models.baseten.com/allowed-deletion-policies: Retain,DeleteWithGuardrails)"
    )


def test_require_namespace_policy_denies_a_namespace_without_allowed_models(h) -> None:
    h.require_namespace_policy = True
    h.reconciler = h.make_reconciler()
    h.create()
    h.run()
    assert violation(h)[1] == (
        "namespace policy: model 'my-llm' is not allowed in namespace default "
        "(models.baseten.com/allowed-models: (unset))"
    )


def test_observe_is_held_to_the_policy_too(h) -> None:
    h.namespaces.annotate("default", allowed_models="ranker")
    h.create(mode="Observe")
    h.run()
    violation(h)


def test_a_policy_change_takes_effect_on_the_next_pass(h) -> None:
    h.steady_world()
    h.namespaces.annotate("default", allowed_models="ranker")
    h.create()
    h.run()
    assert h.word() == "FAILED"
    h.namespaces.annotate("default", allowed_models="my-*")
    h.run()
    assert h.word() == "ACTIVE"


def test_deleting_a_refused_cr_never_touches_baseten(h) -> None:
    h.baseten.add_model()
    h.create(deletionPolicy="Delete", status={"modelID": "m1"})
    h.namespaces.annotate("default", allowed_models="ranker")
    h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))
    h.run()
    assert h.baseten.calls == []
    assert ("default", "my-model") not in h.kube.objects


def test_a_team_namespace_looks_its_models_up_in_the_team(h) -> None:
    h.steady_world()
    h.baseten.model_teams["m1"] = h.baseten.teams.setdefault("search", "team-search")
    h.namespaces.annotate("default", team="search")
    h.create()
    h.run()
    assert h.word() == "ACTIVE"
    assert h.baseten.called("list_teams") == [("search",)]
    assert h.baseten.called("find_model") == []


def test_a_model_of_another_team_is_not_found(h) -> None:
    h.steady_world()  # an organisation-wide model of the same name, in no team
    h.baseten.teams["search"] = "team-search"
    h.namespaces.annotate("default", team="search")
    h.create()
    with pytest.raises(ReconcileError):
        h.run()
    assert h.message() == "model 'my-llm' not found"


def test_an_unknown_team_is_a_lookup_failure_naming_it(h) -> None:
    h.namespaces.annotate("default", team="nope")
    h.create()
    with pytest.raises(ReconcileError):
        h.run()
    assert h.message() == 'unable to check model my-llm: team "nope" not found'
    assert h.reasons() == []  # no ModelNotFound: the model's absence is not established


def test_a_namespace_key_serves_every_call_of_its_crs(h) -> None:
    h.secrets.put("team-a-key", {"api-key": "key-a"})
    h.namespaces.annotate("default", api_key_secret="team-a-key")
    h.create()
    with pytest.raises(ReconcileError):
        h.run()  # the namespace's Baseten has no such model
    assert h.baseten.calls == []
    assert h.keyed["key-a"].called("find_model") == [("my-llm",)]


def test_a_missing_secret_is_a_failure_naming_it(h) -> None:
    h.namespaces.annotate("default", api_key_secret="team-a-key")
    h.create()
    h.run()
    assert h.word() == "FAILED"
    assert h.message() == "API key Secret baseten-system/team-a-key not found"
    assert h.baseten.calls == [] and h.keyed == {}


def test_a_secret_without_the_key_is_a_failure_naming_it(h) -> None:
    h.secrets.put("team-a-key", {"token": "x"})
    h.namespaces.annotate("default", api_key_secret="team-a-key")
    h.create()
    h.run()
    assert h.message() == "API key Secret baseten-system/team-a-key has no non-empty key 'api-key'"


def test_a_rotated_key_replaces_the_pooled_client(h) -> None:
    h.secrets.put("team-a-key", {"api-key": "key-1"})
    h.namespaces.annotate("default", api_key_secret="team-a-key")
    h.create()
    with pytest.raises(ReconcileError):
        h.run()
    h.secrets.put("team-a-key", {"api-key": "key-2"})
    with pytest.raises(ReconcileError):
        h.run()
    assert len(h.keyed["key-1"].calls) == 1
    assert len(h.keyed["key-2"].calls) == 1


def test_pushes_carry_the_namespace_key_and_team(h) -> None:
    h.baseten.teams["search"] = "team-search"
    h.secrets.put("team-a-key", {"api-key": "key-a"})
    h.keyed["key-a"] = h.baseten
    h.namespaces.annotate("default", api_key_secret="team-a-key", team="search")
    h.create(
        {
            "modelName": "my-llm",
            "environment": {"name": "production"},
            "trussConfig": {
                "baseImage": {"image": "img:1"},
                "resources": {"accelerator": "T4"},
            },
        }
    )
    h.run()
    [request] = h.pusher.launched
    assert (request.api_key, request.team_id) == ("key-a", "team-search")
    assert "key-a" not in repr(request)


def test_a_paused_cr_needs_no_key(h) -> None:
    h.namespaces.annotate("default", api_key_secret="missing")
    h.create(mode="Pause")
    h.run()
    assert h.word() == "PAUSED"


def test_a_crs_own_team_looks_its_model_up_in_the_team(h) -> None:
    h.steady_world()
    h.baseten.model_teams["m1"] = h.baseten.teams.setdefault("search", "team-search")
    h.create(team="search")
    h.run()
    assert h.word() == "ACTIVE"
    assert h.baseten.called("list_teams") == [("search",)]
    assert h.baseten.called("find_model") == []


def test_a_crs_team_must_be_its_namespaces_team(h) -> None:
    h.namespaces.annotate("default", team="search")
    h.create(team="ranking")
    h.run()
    assert violation(h)[1] == (
        "namespace policy: team 'ranking' is not allowed in namespace default "
        "(models.baseten.com/team: search)"
    )


def test_the_same_team_on_the_cr_and_its_namespace_is_no_violation(h) -> None:
    h.steady_world()
    h.baseten.model_teams["m1"] = h.baseten.teams.setdefault("search", "team-search")
    h.namespaces.annotate("default", team="search")
    h.create(team="search")
    h.run()
    assert h.word() == "ACTIVE"


@pytest.mark.parametrize("deleting", [False, True])
def test_a_namespace_not_yet_in_the_cache_waits_without_calling_baseten(h, deleting) -> None:
    """Fail closed: a CR can arrive before its Namespace; until the Namespace is cached its
    policy, team and key are unknown, so no Baseten call and no finalizer removal."""
    h.steady_world()
    h.create(deletionPolicy="Delete")
    h.run()
    assert h.word() == "ACTIVE"
    h.baseten.calls.clear()
    h.namespaces.unseen.add("default")  # e.g. a CR re-created with its Namespace
    if deleting:
        h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))
    result = h.run()
    assert h.baseten.calls == []
    assert (h.writes, h.events) == (0, [])
    assert result.requeue_after == 5.0
    assert ("default", "my-model") in h.kube.objects

    h.namespaces.unseen.clear()  # the Namespace's add event wakes the CR
    h.namespaces.annotate("default", allowed_models="ranker")
    h.run()
    assert h.baseten.calls == []
    if deleting:
        assert ("default", "my-model") not in h.kube.objects  # refused: let go, untouched
    else:
        assert h.word() == "FAILED"


def test_the_policy_violation_event_comes_again_when_the_reason_changes(h) -> None:
    h.namespaces.annotate("default", allowed_models="ranker")
    h.create(deletionPolicy="Delete")
    h.run()
    h.namespaces.annotate("default", allowed_models="my-*", allowed_deletion_policies="Retain")
    h.run()
    assert violation(h)[1] == (
        "namespace policy: deletionPolicy Delete is not allowed in namespace default "
        "(models.baseten.com/allowed-deletion-policies: Retain)"
    )


def test_a_key_with_a_line_break_inside_is_a_failure_naming_the_secret(h) -> None:
    # Pasted with its line break (and what a header injection would add after it).
    h.secrets.put("team-a-key", {"api-key": "key-a\nX-Injected: yes"})
    h.namespaces.annotate("default", api_key_secret="team-a-key")
    h.create()
    h.run()
    assert h.word() == "FAILED"
    assert h.message() == (
        "API key Secret baseten-system/team-a-key key 'api-key' contains a line break or "
        "another character an HTTP header cannot carry"
    )
    assert h.keyed == {}
