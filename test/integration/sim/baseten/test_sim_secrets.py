"""Secrets in the simulator, through the operator's client: the spec's shapes (the client's
request bodies included), upsert keeping ids, team scoping, faults and rate limits, and
the value in no answer, log line, error or audit entry."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import requests
import structlog
from pydantic import SecretStr

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.connections import Connections
from baseten_operator.baseten.errors import BasetenAPIError, RateLimited
from baseten_operator.baseten.teams import TeamScopedClient
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten import BasetenSimulator
from baseten_operator.sim.baseten.payloads import SECRET_NAME_MAX, SECRET_VALUE_MAX

pytestmark = pytest.mark.integration

API_KEY = "sim-test-key"  # the org key of the `sim` fixture
TEAM_KEY = "search-team-key"
VALUE = "hf_first-value-0123456789abcdef"
ROTATED = "hf_second-value-fedcba9876543210"


class CapturingConnections:
    """The client's connections, keeping every request body it sends."""

    def __init__(self, url: str) -> None:
        self._connections = Connections(url)
        self.bodies: list[Any] = []

    def send(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None,
        headers: Mapping[str, str],
        connect_timeout: float,
        read_timeout: float,
    ) -> requests.Response:
        if body is not None:
            self.bodies.append(json.loads(body))
        return self._connections.send(
            method,
            target,
            body=body,
            headers=headers,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
        )


@pytest.fixture
def sent() -> list[CapturingConnections]:
    return []


def client_of(
    sim: BasetenSimulator, sent: list[CapturingConnections], key: str = API_KEY
) -> BasetenClient:
    def connect(url: str) -> CapturingConnections:
        sent.append(CapturingConnections(url))
        return sent[-1]

    return BasetenClient(key, sim.api_url, connect=connect, timeout=5, backoff_base=0.01)


@pytest.fixture
def teams(sim: BasetenSimulator) -> Iterator[dict[str, str]]:
    ids = {name: sim.create_team(name)["id"] for name in ("search", "ranking")}
    sim.add_api_key(TEAM_KEY, "search-key", team="search")
    yield ids


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def test_the_secrets_endpoints_answer_and_take_what_the_spec_says(
    sim: BasetenSimulator,
    http: requests.Session,
    teams: dict[str, str],
    sent: list[CapturingConnections],
    validate,
) -> None:
    client = client_of(sim, sent)
    created = client.upsert_secret("hf_token", SecretStr(VALUE))
    scoped = TeamScopedClient(client, "search")
    scoped.upsert_secret("hf_token", SecretStr(ROTATED))
    for body in sent[0].bodies:  # the client's own requests, as the spec takes them
        validate(body, "UpsertSecretRequestV1")
    assert [body["name"] for body in sent[0].bodies] == ["hf_token", "hf_token"]

    v1 = sim.api_url
    for path in ("/secrets", f"/teams/{teams['search']}/secrets"):
        listed = http.get(v1 + path)
        assert listed.status_code == 200
        validate(listed.json(), "SecretsV1")
        answer = http.post(v1 + path, json={"name": "other", "value": "x" * 10})
        validate(answer.json(), "SecretV1")
        gone = http.delete(f"{v1}{path}/other")
        validate(gone.json(), "SecretTombstoneV1")
        assert gone.json() == {"name": "other"}
    assert [s.id for s in client.list_secrets()] == [created.id]
    assert [s.team_name for s in scoped.list_secrets()] == ["search"]


def test_an_upsert_rotates_the_value_and_keeps_the_id(
    sim: BasetenSimulator, sent: list[CapturingConnections]
) -> None:
    client = client_of(sim, sent)
    first = client.upsert_secret("hf_token", SecretStr(VALUE))
    second = client.upsert_secret("hf_token", SecretStr(ROTATED))
    assert (second.id, second.created_at) == (first.id, first.created_at)
    [state] = sim.secrets()
    assert state == {
        "name": "hf_token",
        "id": first.id,
        "team": "Sim Team",
        "writes": 2,
        "value_sha256": sha256(ROTATED),
    }
    assert client.delete_secret("hf_token") is True
    assert client.delete_secret("hf_token") is False  # a 404 the second time
    assert sim.secrets() == []
    assert client.upsert_secret("hf_token", SecretStr(VALUE)).id != first.id  # a new secret


def test_secrets_belong_to_one_team(
    sim: BasetenSimulator,
    http: requests.Session,
    teams: dict[str, str],
    sent: list[CapturingConnections],
) -> None:
    org = client_of(sim, sent)
    team_key = client_of(sim, sent, TEAM_KEY)
    org.upsert_secret("shared", SecretStr(VALUE))
    TeamScopedClient(org, "ranking").upsert_secret("shared", SecretStr(ROTATED))
    # /v1/secrets is the caller's primary team: a team key's own.
    team_key.upsert_secret("mine", SecretStr(VALUE))
    assert [s.name for s in team_key.list_secrets()] == ["mine"]
    assert [s.name for s in TeamScopedClient(org, "search").list_secrets()] == ["mine"]
    assert [s.name for s in org.list_secrets()] == ["shared"]  # the default team's
    teams_of = {(s["team"], s["name"]) for s in sim.secrets()}
    assert teams_of == {("Sim Team", "shared"), ("ranking", "shared"), ("search", "mine")}

    ranking = f"{sim.api_url}/teams/{teams['ranking']}/secrets"
    other_team = requests.Session()
    other_team.headers["Authorization"] = f"Bearer {TEAM_KEY}"
    assert other_team.get(ranking).status_code == 404
    assert other_team.post(ranking, json={"name": "x", "value": VALUE}).status_code == 403
    assert other_team.delete(f"{ranking}/shared").status_code == 403
    assert http.get(f"{sim.api_url}/teams/nope/secrets").status_code == 404
    assert len(sim.secrets()) == 3


def test_bad_upserts_are_refused_without_echoing_the_value(
    sim: BasetenSimulator, http: requests.Session
) -> None:
    url = f"{sim.api_url}/secrets"
    too_long = {"name": "n" * (SECRET_NAME_MAX + 1), "value": VALUE}
    too_large = {"name": "n", "value": VALUE * (SECRET_VALUE_MAX // len(VALUE) + 1)}
    malformed = ({"value": VALUE}, {"name": "", "value": VALUE}, {"name": "n", "value": 7})
    for body in (*malformed, too_long, too_large):
        refused = http.post(url, json=body)
        assert refused.status_code == 400, body
        assert set(refused.json()) == {"code", "message", "details"}
        assert VALUE not in refused.text
    assert http.post(url, json=[VALUE]).status_code == 400
    assert sim.secrets() == []


def test_faults_and_rate_limits_reach_the_secrets_endpoints(
    sim: BasetenSimulator, sent: list[CapturingConnections]
) -> None:
    client = client_of(sim, sent)
    sim.inject_fault("upsert_secret", "5xx", status=503)
    with pytest.raises(BasetenAPIError) as caught:
        client.upsert_secret("hf_token", SecretStr(VALUE))
    assert caught.value.status_code == 503
    assert len(sim.request_log()) == 1  # a POST is not repeated blindly
    sim.inject_fault("list_secrets", "5xx", status=502)
    assert client.list_secrets() == []  # a GET is
    sim.inject_fault("delete_team_secret", "429", retry_after=0)
    sim.create_team("search")
    TeamScopedClient(client, "search").upsert_secret("hf_token", SecretStr(VALUE))
    assert TeamScopedClient(client, "search").delete_secret("hf_token") is True

    sim.configure_rate_limits(limits={"upsert_secret": [1, 60]})
    client.upsert_secret("hf_token", SecretStr(VALUE))
    with pytest.raises(RateLimited):  # the simulator's 429 asks for longer than the deadline
        client.upsert_secret("hf_token", SecretStr(ROTATED))
    assert [s["writes"] for s in sim.secrets()] == [1]


def test_the_value_is_in_no_log_error_or_audit_entry(
    sim: BasetenSimulator,
    teams: dict[str, str],
    sent: list[CapturingConnections],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    client = client_of(sim, sent)
    scoped = TeamScopedClient(client, "search")
    with structlog.testing.capture_logs() as logs:
        client.upsert_secret("hf_token", SecretStr(VALUE))
        scoped.upsert_secret("hf_token", SecretStr(VALUE))
        sim.inject_fault("upsert_secret", "5xx")
        with pytest.raises(BasetenAPIError) as caught:
            client.upsert_secret("hf_token", SecretStr(ROTATED))
        client.delete_secret("hf_token")
    audit = sim.audit_log()
    assert [(e["endpoint"], e["body"]) for e in audit] == [  # the faulted call never ran
        ("upsert_secret", {"name": "hf_token"}),
        ("upsert_team_secret", {"name": "hf_token"}),
        ("delete_secret", None),
    ]
    everything = [
        repr(audit),
        repr(sim.request_log()),
        repr(sim.secrets()),
        repr(logs),
        caplog.text,
        str(caught.value),
        repr(caught.value),
        requests.get(f"{sim.url}/_sim/secrets").text,
        requests.get(f"{sim.url}/_sim/audit_log").text,
    ]
    for text in everything:
        for value in (VALUE, ROTATED):
            assert value not in text


def test_the_control_api_seeds_and_shows_secrets(sim: BasetenSimulator, clock: FakeClock) -> None:
    sim.create_team("search")
    seeded = requests.post(
        f"{sim.url}/_sim/seed_secret", json={"name": "hf_token", "value": VALUE, "team": "search"}
    )
    assert seeded.status_code == 200
    assert seeded.json()["team_name"] == "search"
    shown = requests.get(f"{sim.url}/_sim/secrets").json()
    assert shown == [
        {
            "name": "hf_token",
            "id": seeded.json()["id"],
            "team": "search",
            "writes": 1,
            "value_sha256": sha256(VALUE),
        }
    ]
    sim.reset()
    assert sim.secrets() == []
