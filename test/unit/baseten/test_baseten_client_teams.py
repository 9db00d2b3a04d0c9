"""Team lookups (GET /v1/teams?name=, GET /v1/teams/{id}/models?name=) and the client pool."""

from __future__ import annotations

from typing import Any

import pytest
import responses
from responses import matchers

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.pool import BasetenClientPool
from baseten_operator.baseten.teams import TeamNotFound, TeamScopedClient
from baseten_operator.runtime.logging import redact

TEAM = {"id": "t1", "name": "search", "default": False, "created_at": "2026-01-01T00:00:00Z"}


def test_a_team_scoped_lookup_goes_through_the_team(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    rsps.get(
        f"{base_url}/teams",
        json={"teams": [{**TEAM, "id": "t0", "name": "search-old"}, TEAM]},
        match=[matchers.query_param_matcher({"name": "search"})],
    )
    rsps.get(
        f"{base_url}/teams/t1/models",
        json={"models": [api_json.model(id="m0", name="llama-2"), api_json.model()]},
        match=[matchers.query_param_matcher({"name": "llama"})],
    )
    model = TeamScopedClient(client, "search").find_model("llama")
    assert model is not None and model.id == "m1"


def test_an_unknown_team_is_a_lookup_failure_naming_it(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(f"{base_url}/teams", json={"teams": []})
    with pytest.raises(TeamNotFound) as caught:
        TeamScopedClient(client, "nope").find_model("llama")
    assert str(caught.value) == 'team "nope" not found'


def test_calls_on_an_id_are_the_clients_own(client: BasetenClient) -> None:
    scoped = TeamScopedClient(client, "search")
    assert scoped.delete_model.__self__ is client
    assert scoped.base_url == client.base_url


def test_the_pool_keeps_one_client_per_key_and_drops_a_rotated_one() -> None:
    made: list[str] = []

    def make(api_key: str) -> object:
        made.append(api_key)
        return object()

    default = object()
    pool = BasetenClientPool(default, make)
    first = pool.client_for("secret-a", "key-1")
    assert pool.client_for("secret-b", "key-1") is first  # two Secrets, one key
    assert pool.client_for("secret-a", "key-1") is first
    assert made == ["key-1"]

    rotated = pool.client_for("secret-a", "key-2")
    assert rotated is not first and len(pool) == 2  # key-1 is still secret-b's
    pool.forget("secret-b")
    assert len(pool) == 1
    assert pool.client_for("secret-b", "key-1") is not first  # built afresh
    assert pool.default is default


def test_the_pool_never_holds_a_key_in_the_clear() -> None:
    pool = BasetenClientPool(object(), lambda key: object())
    pool.client_for("s", "sk-very-secret")
    assert "sk-very-secret" not in repr(vars(pool))


def test_a_namespace_key_is_masked_in_logs_once_the_pool_holds_it() -> None:
    pool = BasetenClientPool(object(), lambda key: object())
    namespace_key = "sk-team-key-only-a-namespace-knows"
    assert redact(f"echoed {namespace_key}") == f"echoed {namespace_key}"
    pool.client_for("search-key", namespace_key)
    assert namespace_key not in redact(f"Baseten answered: bad key {namespace_key}")
