"""Section 5: a push waits for the Baseten secrets its trussConfig names."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.baseten.errors import BasetenAPIError

# No dockerServer: nothing for the preflight to refuse.
TRUSS = {
    "resources": {"accelerator": "L4"},
    "baseImage": {"image": "vllm:1"},
    "secrets": {"hf_token": "", "b_key": "", "api.key": ""},
}


def truss_spec(truss: dict[str, Any] = TRUSS) -> dict[str, Any]:
    return {"modelName": "my-llm", "trussConfig": truss, "environment": {"name": "production"}}


@pytest.fixture
def t(h):
    h.create(truss_spec())
    return h


def test_a_push_waits_for_every_missing_secret_and_says_which(t) -> None:
    t.baseten.add_secret("b_key")
    result = t.run()
    assert t.pusher.launched == []
    assert t.word() == "PENDING"
    assert t.message() == "waiting for secrets: api.key, hf_token"
    assert result.requeue_after == t.timing.push_poll
    assert t.baseten.called("list_secrets") == [()]  # one list for the decision
    assert "trussPushStatus" not in t.status()  # nothing on record as pushing


def test_the_push_goes_on_once_the_secrets_exist(t) -> None:
    t.run()
    t.run()  # still missing: waits again, the same status, no second write
    assert t.writes == 0 and t.pusher.launched == []
    for name in ("hf_token", "b_key", "api.key"):
        t.baseten.add_secret(name)  # by anyone: the UI, the CLI, a BasetenSecret
    t.clock.advance(t.timing.push_poll)
    t.run()
    assert [r.deployment_name for r in t.pusher.launched] == [t.status()["sourceDeploymentName"]]
    assert t.word() == "DEPLOYING"
    assert len(t.baseten.called("list_secrets")) == 3


def test_a_config_without_secrets_never_lists_them(h) -> None:
    h.create(truss_spec({k: v for k, v in TRUSS.items() if k != "secrets"}))
    h.run()
    assert len(h.pusher.launched) == 1
    assert h.baseten.called("list_secrets") == []


def test_a_pushed_model_does_not_list_secrets_again(t) -> None:
    for name in ("hf_token", "b_key", "api.key"):
        t.baseten.add_secret(name)
    t.run()
    [request] = t.pusher.launched
    t.baseten.add_model()
    t.pusher.finish(request.key, request.deployment_name, model_id="m1")
    current = t.baseten.add_deployment(
        name=request.deployment_name, active_replica_count=1, environment="production"
    )
    t.baseten.add_environment(current=current, autoscaling={"min_replica": 1})
    t.baseten.calls.clear()
    for _ in range(3):
        t.clock.advance(t.steady_period())
        t.run()
    assert t.word() == "ACTIVE"
    assert t.baseten.called("list_secrets") == []  # steady state asks nothing about secrets


def test_no_capacity_is_waited_for_before_secrets_are_listed(t) -> None:
    t.pusher.capacity = False
    t.run()
    assert t.message().startswith("waiting for push capacity")
    assert t.baseten.called("list_secrets") == []


def test_an_unreadable_list_pushes_nothing(t) -> None:
    t.baseten.fail("list_secrets", BasetenAPIError(503, "unavailable"))
    result = t.run()
    assert t.pusher.launched == []
    assert t.word() == "PENDING"
    name = t.status()["sourceDeploymentName"]
    assert t.message() == f"unable to check the Baseten secrets {name} needs: HTTP 503: unavailable"
    assert result.requeue_after == t.timing.poll


def test_a_team_namespace_needs_the_secrets_in_its_team(h) -> None:
    h.namespaces.annotate("default", team="search")
    for name in ("hf_token", "b_key", "api.key"):
        h.baseten.add_secret(name)  # the primary team's: not the model's team
    h.baseten.add_secret("hf_token", team="search")
    h.create(truss_spec())
    h.run()
    assert h.pusher.launched == []
    assert h.message() == "waiting for secrets: api.key, b_key"
    assert h.baseten.called("list_team_secrets") == [("team-search",)]
    assert h.baseten.called("list_secrets") == []
