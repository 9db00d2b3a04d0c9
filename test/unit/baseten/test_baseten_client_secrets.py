"""Secrets: list, upsert and delete, the workspace's and a team's, and the value never shown."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
import responses
import structlog
from pydantic import SecretStr
from responses import matchers

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.errors import BasetenAPIError, RateLimited
from baseten_operator.baseten.teams import TeamScopedClient
from testsupport.request_failures import refused, reset

VALUE = "hf_Zq8-the-token-value-0123456789"
SECRET = {
    "id": "3kZ9xqd",
    "name": "hf_token",
    "created_at": "2026-01-01T00:00:00Z",
    "team_name": "Default",
    "rotated_by": "someone",  # unknown to the client
}
TEAM = {"id": "t1", "name": "search", "default": False}


def test_list_secrets_gives_names_only(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(f"{base_url}/secrets", json={"secrets": [SECRET, {**SECRET, "name": "other"}]})
    secrets = client.list_secrets()
    assert [s.name for s in secrets] == ["hf_token", "other"]
    assert secrets[0].id == "3kZ9xqd" and secrets[0].team_name == "Default"
    assert secrets[0].created_at is not None and secrets[0].created_at.year == 2026


def test_upsert_sends_name_and_value_and_answers_the_secret(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.post(
        f"{base_url}/secrets",
        json=SECRET,
        match=[matchers.json_params_matcher({"name": "hf_token", "value": VALUE})],
    )
    assert client.upsert_secret("hf_token", SecretStr(VALUE)).id == "3kZ9xqd"


def test_delete_says_whether_there_was_one(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.delete(f"{base_url}/secrets/hf_token", json={"name": "hf_token"})
    rsps.delete(f"{base_url}/secrets/gone", status=404, json={"message": "not found"})
    assert client.delete_secret("hf_token") is True
    assert client.delete_secret("gone") is False


def test_a_delete_answered_without_a_tombstone_is_an_error(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.delete(f"{base_url}/secrets/hf_token", json={})
    with pytest.raises(BasetenAPIError, match="not acknowledged"):
        client.delete_secret("hf_token")


def test_a_secret_name_is_quoted_in_the_path(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.delete(f"{base_url}/secrets/a%2Fb%20c", json={"name": "a/b c"})
    assert client.delete_secret("a/b c") is True


def test_a_team_view_works_on_the_teams_secrets(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(
        f"{base_url}/teams",
        json={"teams": [TEAM]},
        match=[matchers.query_param_matcher({"name": "search"})],
    )
    rsps.get(f"{base_url}/teams/t1/secrets", json={"secrets": [SECRET]})
    rsps.post(
        f"{base_url}/teams/t1/secrets",
        json=SECRET,
        match=[matchers.json_params_matcher({"name": "hf_token", "value": VALUE})],
    )
    rsps.delete(f"{base_url}/teams/t1/secrets/hf_token", json={"name": "hf_token"})
    scoped = TeamScopedClient(client, "search")
    assert [s.name for s in scoped.list_secrets()] == ["hf_token"]
    assert scoped.upsert_secret("hf_token", SecretStr(VALUE)).name == "hf_token"
    assert scoped.delete_secret("hf_token") is True
    assert len(rsps.calls) == 4  # the team looked up once


# --- retries: as every other call of its method ------------------------------------------


def test_an_upsert_is_not_repeated_after_a_5xx_or_a_broken_connection(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    rsps.post(f"{base_url}/secrets", status=503, json={"message": "unavailable"})
    rsps.post(f"{base_url}/secrets", body=reset())
    for _ in range(2):
        with pytest.raises(BasetenAPIError):
            client.upsert_secret("hf_token", SecretStr(VALUE))
    assert len(rsps.calls) == 2
    assert clock.sleeps == []


def test_an_upsert_that_never_left_is_tried_again(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.post(f"{base_url}/secrets", body=refused())
    rsps.post(f"{base_url}/secrets", json=SECRET)
    assert client.upsert_secret("hf_token", SecretStr(VALUE)).name == "hf_token"
    assert len(rsps.calls) == 2


def test_an_upsert_waits_out_a_429(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    rsps.post(f"{base_url}/secrets", status=429, json={"error": "slow down", "retry_after": 3})
    rsps.post(f"{base_url}/secrets", json=SECRET)
    client.upsert_secret("hf_token", SecretStr(VALUE))
    assert clock.sleeps == [3.0]


def test_a_429_past_the_deadline_ends_the_list_throttled(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(f"{base_url}/secrets", status=429, json={"error": "slow", "retry_after": 600})
    with pytest.raises(RateLimited) as caught:
        client.list_secrets()
    assert caught.value.retry_after == 600


def test_list_and_delete_are_retried_after_a_5xx(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(f"{base_url}/secrets", status=502, body="bad gateway")
    rsps.get(f"{base_url}/secrets", json={"secrets": []})
    rsps.delete(f"{base_url}/secrets/hf_token", status=500, json={"message": "oops"})
    rsps.delete(f"{base_url}/secrets/hf_token", json={"name": "hf_token"})
    assert client.list_secrets() == []
    assert client.delete_secret("hf_token") is True


# --- the value never shows ------------------------------------------------------------------


def echoing(value: str) -> Callable[[Any], tuple[int, dict[str, str], str]]:
    """A server whose error quotes the request body back, in several encodings."""

    def answer(request: Any) -> tuple[int, dict[str, str], str]:
        sent = json.loads(request.body)
        encoded = base64.b64encode(value.encode()).decode()
        message = f"rejected {sent} ({json.dumps(sent)}, basic {encoded})"
        return 400, {"Content-Type": "application/json"}, json.dumps({"message": message})

    return answer


# Values a JSON echo escapes (a PEM's line breaks, a quote, non-ASCII letters): each holds
# PIECE, which no form of the value may leave behind.
PIECE = "Zq8-the-token"


@pytest.mark.parametrize(
    "value",
    [
        VALUE,
        f"-----BEGIN KEY-----\nhf_{PIECE}\n-----END KEY-----",
        f'pa"ss-{PIECE}',
        f"pässwörd-{PIECE}",
    ],
)
def test_an_error_that_echoes_the_value_does_not_show_it(
    client: BasetenClient,
    rsps: responses.RequestsMock,
    base_url: str,
    caplog: pytest.LogCaptureFixture,
    value: str,
) -> None:
    rsps.add_callback(responses.POST, f"{base_url}/secrets", callback=echoing(value))
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as logs, pytest.raises(BasetenAPIError) as caught:
        client.upsert_secret("hf_token", SecretStr(value))
    error = caught.value
    texts = [str(error), repr(error), error.message, repr(error.args), caplog.text, repr(logs)]
    encoded = base64.b64encode(value.encode()).decode()
    for text in texts:
        assert value not in text and encoded not in text
        assert PIECE not in text  # not even a piece of it, in whatever escaping
    assert "hf_token" in error.message  # the rest of the answer is kept
    assert error.__cause__ is None


@pytest.mark.parametrize("value", ["x9", "é\n"])  # the second only escaped in the echo
def test_a_value_too_short_to_mask_withholds_an_answer_quoting_it(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, value: str
) -> None:
    rsps.add_callback(responses.POST, f"{base_url}/secrets", callback=echoing(value))
    with pytest.raises(BasetenAPIError) as caught:
        client.upsert_secret("hf_token", SecretStr(value))
    assert str(caught.value) == "HTTP 400: answer withheld: it may quote the secret value sent"


def test_the_value_is_in_the_request_body_only(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.post(f"{base_url}/secrets", json=SECRET)
    client.upsert_secret("hf_token", SecretStr(VALUE))
    request = rsps.calls[0].request
    assert VALUE not in str(request.url) and VALUE not in repr(dict(request.headers))
    assert json.loads(request.body)["value"] == VALUE
    assert VALUE not in repr(vars(client._transport))
