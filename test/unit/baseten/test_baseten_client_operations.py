"""Every operation: the request it sends (method, quoted path, query, body, auth) and the parse."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import responses
from responses import matchers

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.connections import Connections
from baseten_operator.baseten.errors import (
    AmbiguousDeploymentName,
    AmbiguousModelName,
    BasetenAPIError,
    ConfigError,
)

# Ids with characters that must be quoted, to prove every path parameter is.
MODEL = "m/1 ?x"
MODEL_Q = "m%2F1%20%3Fx"
DEP = "d#2"
DEP_Q = "d%232"
ENV = "prod/eu"
ENV_Q = "prod%2Feu"


def sent(rsps: responses.RequestsMock, index: int = 0) -> Any:
    return rsps.calls[index].request


def sent_json(rsps: responses.RequestsMock, index: int = 0) -> Any:
    body = sent(rsps, index).body
    return json.loads(body) if body else None


def test_every_request_carries_bearer_auth(
    client: BasetenClient, rsps: responses.RequestsMock, api_key: str, base_url: str
) -> None:
    rsps.get(
        f"{base_url}/models",
        json={"models": []},
        match=[matchers.header_matcher({"Authorization": f"Bearer {api_key}"})],
    )
    assert client.list_models() == []
    # (connect, read) timeouts on every request, read bounded by the call's deadline.
    assert sent(rsps).req_kwargs["timeout"] == (10.0, 60.0)


def test_list_models_parses_and_ignores_unknown_fields(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    rsps.get(
        f"{base_url}/models",
        json={"models": [api_json.model(extra_field={"x": 1})], "pagination": None},
    )
    (model,) = client.list_models()
    assert model.id == "m1"
    assert model.name == "llama"
    assert model.created_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert model.deployments_count == 2
    assert model.production_deployment_id == "dep1"
    assert model.team_name == "ml"
    assert sent(rsps).url == f"{base_url}/models"


def test_list_models_by_name_sends_name_query(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    rsps.get(
        f"{base_url}/models",
        json={"models": [api_json.model(name="a b&c")]},
        match=[matchers.query_param_matcher({"name": "a b&c"})],
    )
    assert [m.name for m in client.list_models("a b&c")] == ["a b&c"]


def test_find_model_matches_name_exactly(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    # A server that ignores ?name= (or matches loosely) must not fool the client.
    rsps.get(
        f"{base_url}/models",
        json={"models": [api_json.model(id="m0", name="llama-2"), api_json.model()]},
        match=[matchers.query_param_matcher({"name": "llama"})],
    )
    model = client.find_model("llama")
    assert model is not None and model.id == "m1"


def test_find_model_none_when_absent(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    rsps.get(f"{base_url}/models", json={"models": [api_json.model(name="LLAMA")]})
    assert client.find_model("llama") is None


def test_find_model_ambiguous_lists_ids(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    rsps.get(
        f"{base_url}/models",
        json={"models": [api_json.model(id="ma"), api_json.model(id="mb")]},
    )
    with pytest.raises(AmbiguousModelName) as caught:
        client.find_model("llama")
    assert caught.value.name == "llama"
    assert caught.value.ids == ["ma", "mb"]
    assert (
        str(caught.value)
        == "model name 'llama' is ambiguous: 2 models have that name (ids: ma, mb)"
    )
    # Code that handles any lookup failure handles this one too.
    assert isinstance(caught.value, BasetenAPIError)
    assert not caught.value.is_not_found


def test_delete_model(client: BasetenClient, rsps: responses.RequestsMock, base_url: str) -> None:
    rsps.delete(f"{base_url}/models/{MODEL_Q}", json={"id": MODEL, "deleted": True})
    client.delete_model(MODEL)
    assert sent(rsps).method == "DELETE"
    assert sent(rsps).path_url == f"/v1/models/{MODEL_Q}"


def test_list_deployments_with_and_without_name(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    url = f"{base_url}/models/{MODEL_Q}/deployments"
    rsps.get(url, json={"deployments": [api_json.deployment(), api_json.deployment(id="d2")]})
    rsps.get(
        url,
        json={"deployments": [api_json.deployment()]},
        match=[matchers.query_param_matcher({"name": "depl-a"})],
    )
    assert [d.id for d in client.list_deployments(MODEL)] == ["dep1", "d2"]
    assert [d.id for d in client.list_deployments(MODEL, "depl-a")] == ["dep1"]


def test_deployment_parse_keeps_unknown_status_and_defaults(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(
        f"{base_url}/models/m1/deployments/{DEP_Q}",
        json={"id": DEP, "name": "n", "status": "HIBERNATING", "created_at": "not a date"},
    )
    deployment = client.get_deployment("m1", DEP)
    assert deployment.status == "HIBERNATING"
    assert deployment.created_at is None
    # Absent is unknown, not zero (the fail-closed decisions refuse to act on it).
    assert deployment.active_replica_count is None
    assert deployment.autoscaling_settings is None
    assert deployment.environment is None


def test_get_deployment_full(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    rsps.get(f"{base_url}/models/{MODEL_Q}/deployments/{DEP_Q}", json=api_json.deployment())
    deployment = client.get_deployment(MODEL, DEP)
    assert deployment.name == "depl-a"
    assert deployment.status == "ACTIVE"
    assert deployment.active_replica_count == 2
    assert deployment.is_production and not deployment.is_development
    assert deployment.environment == "production"
    assert deployment.autoscaling_settings is not None
    assert deployment.autoscaling_settings.max_replica == 3
    assert deployment.instance_type_name == "H100"


def test_find_deployment(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    url = f"{base_url}/models/m1/deployments"
    only_name = [matchers.query_param_matcher({"name": "depl-a"})]
    rsps.get(
        url,
        json={
            "deployments": [api_json.deployment(name="depl-a.1700000000"), api_json.deployment()]
        },
        match=only_name,
    )
    rsps.get(url, json={"deployments": []}, match=only_name)
    rsps.get(
        url,
        json={"deployments": [api_json.deployment(id="x"), api_json.deployment(id="y")]},
        match=only_name,
    )
    found = client.find_deployment("m1", "depl-a")
    assert found is not None and found.id == "dep1"
    assert client.find_deployment("m1", "depl-a") is None
    with pytest.raises(AmbiguousDeploymentName, match=r"ids: x, y"):
        client.find_deployment("m1", "depl-a")


def test_delete_deployment(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.delete(
        f"{base_url}/models/{MODEL_Q}/deployments/{DEP_Q}",
        json={"id": DEP, "deleted": True, "model_id": MODEL},
    )
    client.delete_deployment(MODEL, DEP)


@pytest.mark.parametrize("action", ["activate", "deactivate"])
def test_activate_and_deactivate_post_without_body(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, action: str
) -> None:
    rsps.post(f"{base_url}/models/{MODEL_Q}/deployments/{DEP_Q}/{action}", json={"success": True})
    getattr(client, f"{action}_deployment")(MODEL, DEP)
    assert sent(rsps).body is None


def test_retry_deployment(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    url = f"{base_url}/models/{MODEL_Q}/deployments/{DEP_Q}/retry"
    rsps.post(url, json={"retried": True, "deployment": api_json.deployment(status="BUILDING")})
    rsps.post(url, json={"retried": False, "reason": "not failed", "deployment": None})
    result = client.retry_deployment(MODEL, DEP)
    assert result.retried and result.reason is None
    assert result.deployment is not None and result.deployment.status == "BUILDING"
    declined = client.retry_deployment(MODEL, DEP)
    assert not declined.retried and declined.reason == "not failed"
    assert sent(rsps).body is None


def test_update_deployment_autoscaling(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.patch(
        f"{base_url}/models/{MODEL_Q}/deployments/{DEP_Q}/autoscaling_settings",
        json={"status": "QUEUED", "message": "queued"},
        match=[matchers.json_params_matcher({"min_replica": 0})],
    )
    client.update_deployment_autoscaling(MODEL, DEP, {"min_replica": 0})


def test_list_environments(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    rsps.get(
        f"{base_url}/models/{MODEL_Q}/environments",
        json={"environments": [api_json.environment(), api_json.environment(name="staging")]},
    )
    assert [e.name for e in client.list_environments(MODEL)] == ["production", "staging"]


def test_get_environment_parses_every_field(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    body = api_json.environment(
        candidate_deployment=api_json.deployment(id="d9", name="depl-b", status="BUILDING"),
        in_progress_promotion={
            "status": "RAMPING_UP",
            "percent_traffic_to_new_version": 30,
            "error_message": None,
            "rolling_deploy": None,
        },
        promotion_settings={
            "rolling_deploy": True,
            "rolling_deploy_config": {
                "rolling_deploy_strategy": "REPLICA",
                "max_surge_percent": 25,
                "max_unavailable_percent": 0,
                "stabilization_time_seconds": 30,
                "replica_overhead_percent": 0,
            },
        },
    )
    rsps.get(f"{base_url}/models/{MODEL_Q}/environments/{ENV_Q}", json=body)
    env = client.get_environment(MODEL, ENV)
    assert sent(rsps).path_url == f"/v1/models/{MODEL_Q}/environments/{ENV_Q}"
    assert env.name == "production" and env.model_id == "m1"
    assert env.current_deployment is not None and env.current_deployment.id == "dep1"
    assert env.candidate_deployment is not None and env.candidate_deployment.name == "depl-b"
    assert env.in_progress_promotion is not None
    assert env.in_progress_promotion.status == "RAMPING_UP"
    assert env.in_progress_promotion.percent_traffic_to_new_version == 30
    assert env.autoscaling_settings is not None
    assert env.autoscaling_settings.scale_down_delay == 900
    assert env.autoscaling_settings.target_utilization_percentage == 70
    promotion = env.promotion_settings
    assert promotion is not None and promotion.rolling_deploy is True
    assert promotion.redeploy_on_promotion is None  # absent stays absent (drift counts it false)
    assert promotion.rolling_deploy_config is not None
    assert promotion.rolling_deploy_config.stabilization_time_seconds == 30
    assert env.instance_type is not None and env.instance_type.name == "H100 80GB"


def test_get_environment_missing_is_not_found(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(
        f"{base_url}/models/m1/environments/staging",
        status=404,
        json={"code": "NOT_FOUND", "message": "Environment not found", "details": None},
    )
    with pytest.raises(BasetenAPIError) as caught:
        client.get_environment("m1", "staging")
    assert caught.value.is_not_found
    assert str(caught.value) == "HTTP 404: Environment not found"


def test_create_environment_sends_only_given_settings(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    url = f"{base_url}/models/{MODEL_Q}/environments"
    rsps.post(url, json=api_json.environment(name="staging", current_deployment=None))
    rsps.post(url, json=api_json.environment(name="qa", current_deployment=None))
    env = client.create_environment(MODEL, "staging", {"min_replica": 1}, {"rolling_deploy": True})
    assert env.name == "staging" and env.current_deployment is None
    assert sent_json(rsps, 0) == {
        "name": "staging",
        "autoscaling_settings": {"min_replica": 1},
        "promotion_settings": {"rolling_deploy": True},
    }
    client.create_environment(MODEL, "qa", None, None)
    assert sent_json(rsps, 1) == {"name": "qa"}


def test_update_environment(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    rsps.patch(
        f"{base_url}/models/{MODEL_Q}/environments/{ENV_Q}",
        json={"environment": api_json.environment(), "status": "ACCEPTED", "message": "ok"},
        match=[matchers.json_params_matcher({"autoscaling_settings": {"max_replica": 4}})],
    )
    client.update_environment(MODEL, ENV, {"max_replica": 4}, None)


def test_update_environment_sends_every_group_in_one_patch(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    schedules = {"timezone": "UTC", "delete_schedules": ["s-1"]}
    rsps.patch(
        f"{base_url}/models/{MODEL_Q}/environments/{ENV_Q}",
        json={"environment": api_json.environment(), "status": "ACCEPTED", "message": "ok"},
        match=[
            matchers.json_params_matcher(
                {
                    "autoscaling_settings": {"max_replica": 4},
                    "promotion_settings": {"rolling_deploy": True},
                    "autoscaling_schedule_settings": schedules,
                }
            )
        ],
    )
    client.update_environment(MODEL, ENV, {"max_replica": 4}, {"rolling_deploy": True}, schedules)
    assert len(rsps.calls) == 1


def test_update_environment_with_nothing_sends_nothing(
    client: BasetenClient, rsps: responses.RequestsMock
) -> None:
    client.update_environment("m1", "production", None, None)
    assert len(rsps.calls) == 0


def test_promote_sends_flags_and_returns_promoted_deployment(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    url = f"{base_url}/models/{MODEL_Q}/environments/{ENV_Q}/promote"
    copy = api_json.deployment(id="d-new", name="depl-a.1767225600", status="BUILDING")
    rsps.post(url, json=copy)
    rsps.post(url, json=copy)
    promoted = client.promote(MODEL, ENV, DEP)
    assert promoted.id == "d-new" and promoted.status == "BUILDING"
    assert sent_json(rsps, 0) == {
        "deployment_id": DEP,
        "scale_down_previous_deployment": True,
        "preserve_env_instance_type": True,
    }
    client.promote(
        MODEL, ENV, DEP, scale_down_previous_deployment=False, preserve_env_instance_type=False
    )
    assert sent_json(rsps, 1) == {
        "deployment_id": DEP,
        "scale_down_previous_deployment": False,
        "preserve_env_instance_type": False,
    }


def test_from_env_reads_key_and_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BASETEN_API_KEY", "k1")
    monkeypatch.setenv("BASETEN_API_BASE_URL", "http://127.0.0.1:9/v1/")
    assert BasetenClient.from_env().base_url == "http://127.0.0.1:9/v1"
    monkeypatch.delenv("BASETEN_API_BASE_URL")
    assert BasetenClient.from_env().base_url == "https://api.baseten.co/v1"


@pytest.mark.parametrize("value", [None, "", "   "])
def test_from_env_without_key_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("BASETEN_API_KEY", raising=False)
    else:
        monkeypatch.setenv("BASETEN_API_KEY", value)
    with pytest.raises(ConfigError, match="BASETEN_API_KEY"):
        BasetenClient.from_env()


def test_the_pool_keeps_enough_connections_for_all_workers() -> None:
    connections = BasetenClient("k")._transport._http
    assert isinstance(connections, Connections)
    assert connections._adapter._pool_maxsize >= 20
