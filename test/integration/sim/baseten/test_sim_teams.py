"""Teams in the simulator: team lists, per-team model names, team-bound keys, the audit's key."""

from __future__ import annotations

import pytest
import requests

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.teams import TeamNotFound, TeamScopedClient
from baseten_operator.sim.baseten import BasetenSimulator

pytestmark = pytest.mark.integration

SEARCH_KEY = "search-team-key"


def session(key: str) -> requests.Session:
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {key}"
    return http


@pytest.fixture
def teams(sim: BasetenSimulator) -> dict[str, str]:
    ids = {name: sim.create_team(name)["id"] for name in ("search", "ranking")}
    sim.add_api_key(SEARCH_KEY, "search-key", team="search")
    return ids


def test_teams_and_team_models_match_the_spec(
    sim: BasetenSimulator, http: requests.Session, teams: dict[str, str], validate
) -> None:
    sim.seed_model("le-3", team="search")
    listed = http.get(f"{sim.api_url}/teams", params={"name": "search"})
    validate(listed.json(), "TeamsV1")
    assert [t["id"] for t in listed.json()["teams"]] == [teams["search"]]
    models = http.get(f"{sim.api_url}/teams/{teams['search']}/models", params={"name": "le-3"})
    validate(models.json(), "ModelsV1")
    assert [m["team_name"] for m in models.json()["models"]] == ["search"]


def test_model_names_are_unique_per_team_only(
    sim: BasetenSimulator, http: requests.Session, teams: dict[str, str]
) -> None:
    sim.seed_model("le-3", team="search")
    sim.seed_model("le-3", team="ranking")
    sim.seed_model("le-3")
    assert len(http.get(f"{sim.api_url}/models", params={"name": "le-3"}).json()["models"]) == 3
    with pytest.raises(Exception, match="already exists"):
        sim.seed_model("le-3", team="search")


def test_a_team_key_sees_and_touches_only_its_team(
    sim: BasetenSimulator, teams: dict[str, str]
) -> None:
    mine = sim.seed_model("le-3", team="search")["id"]
    theirs = sim.seed_model("le-3", team="ranking")["id"]
    org = sim.seed_model("other")["id"]
    http = session(SEARCH_KEY)
    v1 = sim.api_url
    assert [m["id"] for m in http.get(f"{v1}/models").json()["models"]] == [mine]
    assert [t["name"] for t in http.get(f"{v1}/teams").json()["teams"]] == ["search"]
    assert http.get(f"{v1}/models/{theirs}").status_code == 404
    assert http.get(f"{v1}/models/{org}/environments").status_code == 404
    assert http.delete(f"{v1}/models/{theirs}").status_code == 404
    assert http.get(f"{v1}/teams/{teams['ranking']}/models").status_code == 404
    assert http.get(f"{v1}/models/{mine}").status_code == 200
    assert http.delete(f"{v1}/models/{mine}").status_code == 200
    assert sim.engine.find_model_id("le-3") == theirs  # only its own was deleted


def test_the_audit_log_names_the_key_of_each_call(
    sim: BasetenSimulator, http: requests.Session, teams: dict[str, str]
) -> None:
    mine = sim.seed_model("a", team="search")["id"]
    org = sim.seed_model("b")["id"]
    session(SEARCH_KEY).delete(f"{sim.api_url}/models/{mine}")
    http.delete(f"{sim.api_url}/models/{org}")
    entries = [(e["path"], e["key"]) for e in sim.audit_log()]
    assert entries == [(f"/v1/models/{mine}", "search-key"), (f"/v1/models/{org}", "org")]
    assert SEARCH_KEY not in str(sim.audit_log())


def test_the_client_resolves_a_model_in_its_team(
    sim: BasetenSimulator, teams: dict[str, str]
) -> None:
    sim.seed_model("le-3")
    mine = sim.seed_model("le-3", team="search")["id"]
    client = BasetenClient(SEARCH_KEY, sim.api_url)
    model = TeamScopedClient(client, "search").find_model("le-3")
    assert model is not None and model.id == mine
    with pytest.raises(TeamNotFound):
        TeamScopedClient(client, "ranking").find_model("le-3")  # invisible to this key


def push_into(sim: BasetenSimulator, key: str, team_id: str | None) -> dict:
    team = f'team_id: "{team_id}"' if team_id else ""
    query = (
        'mutation { create_model_from_truss(name: "x" s3_key: "none" config: "e30=" '
        f"{team}) {{ model_version {{ id }} }} }}"
    )
    return session(key).post(f"{sim.url}/graphql/", json={"query": query}).json()


def test_a_team_key_may_not_push_into_another_team_or_into_none(
    sim: BasetenSimulator, teams: dict[str, str]
) -> None:
    [forbidden] = push_into(sim, SEARCH_KEY, teams["ranking"])["errors"]
    assert forbidden["extensions"]["code"] == "FORBIDDEN"
    [unnamed] = push_into(sim, SEARCH_KEY, None)["errors"]
    assert unnamed["extensions"]["code"] == "UNAUTHORIZED_ACCESS"
    [no_upload] = push_into(sim, SEARCH_KEY, teams["search"])["errors"]
    assert no_upload["extensions"]["code"] == "RESOURCE_NOT_FOUND"  # past the team checks
