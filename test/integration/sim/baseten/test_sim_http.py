"""The simulator over HTTP: auth, error shapes, rate limits, injected faults, control API."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten import BasetenSimulator

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic c2ltLXRlc3Qta2V5", "sim-test-key"])
def test_requests_without_the_key_get_401(sim: BasetenSimulator, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    response = requests.get(f"{sim.api_url}/models", headers=headers)
    assert response.status_code == 401
    assert set(response.json()) == {"code", "message", "details"}
    graphql = requests.post(
        f"{sim.url}/graphql/", json={"query": "{ teams { id } }"}, headers=headers
    )
    assert graphql.status_code == 401


@pytest.mark.parametrize("scheme", ["Bearer", "Api-Key"])
def test_both_auth_schemes_are_accepted(sim: BasetenSimulator, scheme: str) -> None:
    response = requests.get(
        f"{sim.api_url}/models", headers={"Authorization": f"{scheme} sim-test-key"}
    )
    assert response.status_code == 200


def test_errors_in_basetens_shape(sim: BasetenSimulator, http: requests.Session) -> None:
    mid = sim.seed_model("m")["id"]
    dep = sim.seed_deployment(mid, "v1")
    sim.seed_environment(mid, "production")
    v1 = sim.api_url
    cases = [
        (http.get(f"{v1}/models/nope/deployments"), 404),
        (http.get(f"{v1}/models/{mid}/environments/staging"), 404),
        (http.get(f"{v1}/models/{mid}/deployments/missing"), 404),
        (http.get(f"{v1}/nothing"), 404),
        (http.put(f"{v1}/models/{mid}"), 405),
        (http.post(f"{v1}/models/{mid}/environments", data=b"{not json"), 400),
        (http.post(f"{v1}/models/{mid}/environments", json={"name": "production"}), 400),
        (
            http.post(
                f"{v1}/models/{mid}/environments",
                json={"name": "x", "autoscaling_settings": {"min_replica": -1}},
            ),
            400,
        ),
        (http.patch(f"{v1}/models/{mid}/environments/production", json={"bogus": 1}), 400),
        (
            http.patch(
                f"{v1}/models/{mid}/deployments/{dep['id']}/autoscaling_settings",
                json={"max_replica": 0},
            ),
            400,
        ),
        (http.post(f"{v1}/models/{mid}/environments/production/promote", json={}), 400),
    ]
    for response, expected in cases:
        assert response.status_code == expected, (response.request.url, response.text)
        assert set(response.json()) == {"code", "message", "details"}


def test_second_promotion_rejected_over_http(sim: BasetenSimulator, http: requests.Session) -> None:
    mid = sim.seed_model("m")["id"]
    a = sim.seed_deployment(mid, "a", status="BUILDING")
    b = sim.seed_deployment(mid, "b")
    sim.seed_environment(mid, "production")
    url = f"{sim.api_url}/models/{mid}/environments/production/promote"
    assert http.post(url, json={"deployment_id": a["id"]}).status_code == 200
    second = http.post(url, json={"deployment_id": b["id"]})
    assert second.status_code == 409
    assert second.json()["code"] == "CONFLICT"


def test_rate_limit_answers_429_with_retry_after(
    sim: BasetenSimulator, http: requests.Session, clock: FakeClock
) -> None:
    mid = sim.seed_model("m")["id"]
    dep = sim.seed_deployment(mid, "v1", status="BUILD_FAILED")
    url = f"{sim.api_url}/models/{mid}/deployments/{dep['id']}/retry"
    assert [http.post(url).status_code for _ in range(10)] == [200] * 10
    clock.advance(15)
    limited = http.post(url)
    assert limited.status_code == 429
    assert limited.json() == {
        "error": "Rate limit exceeded. Please try again later.",
        "retry_after": 45,
    }
    # Another endpoint and another key are counted apart.
    assert http.get(f"{sim.api_url}/models/{mid}/deployments/{dep['id']}").status_code == 200
    clock.advance(45)
    assert http.post(url).status_code == 200
    sim.configure_rate_limits(enabled=False)
    assert all(http.post(url).status_code == 200 for _ in range(15))


def test_default_limit_is_100_per_second(sim: BasetenSimulator, http: requests.Session) -> None:
    sim.configure_rate_limits(limits={"list_models": [3, 1.0]})
    codes = [http.get(f"{sim.api_url}/models").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]


def test_injected_faults(sim: BasetenSimulator, http: requests.Session) -> None:
    url = f"{sim.api_url}/models"
    sim.inject_fault("list_models", "5xx", 2, status=502)
    sim.inject_fault("get_model", "429", 1, retry_after=7)
    sim.inject_fault("list_deployments", "drop", 1)
    sim.inject_fault("list_environments", "latency", 1, seconds=0.01)
    assert [http.get(url).status_code for _ in range(3)] == [502, 502, 200]
    limited = http.get(f"{url}/any")
    assert (limited.status_code, limited.json()["retry_after"]) == (429, 7)
    with pytest.raises(requests.ConnectionError):
        http.get(f"{url}/any/deployments")
    mid = sim.seed_model("m")["id"]
    assert http.get(f"{url}/{mid}/environments").json() == {"environments": []}


def test_partial_and_unacknowledging_answers(sim: BasetenSimulator, http: requests.Session) -> None:
    mid = sim.seed_model("m")["id"]
    dep = sim.seed_deployment(mid, "build-1")
    sim.seed_environment(mid, "production", current_deployment_id=dep["id"])
    url = f"{sim.api_url}/models/{mid}"
    sim.inject_fault(
        "list_environments",
        "omit",
        1,
        fields=["environments.*.autoscaling_settings", "environments.*.current_deployment.status"],
    )
    [env] = http.get(f"{url}/environments").json()["environments"]
    assert "autoscaling_settings" not in env
    assert "status" not in env["current_deployment"]
    assert env["current_deployment"]["name"] == "build-1"
    assert "autoscaling_settings" in http.get(f"{url}/environments").json()["environments"][0]

    sim.inject_fault("delete_model", "body", 2, body={"error": "model is locked"})
    refused = http.delete(url)
    assert (refused.status_code, refused.json()) == (200, {"error": "model is locked"})
    sim.clear_faults()
    assert http.get(url).status_code == 200  # the operation did not happen
    assert http.delete(url).json() == {"id": mid, "deleted": True}


def test_faults_on_the_push_path(sim: BasetenSimulator, http: requests.Session) -> None:
    sim.inject_fault("graphql:create_model_from_truss", "5xx", 1)
    teams = http.post(f"{sim.url}/graphql", json={"query": "query Teams { teams { id } }"})
    assert teams.json()["data"]["teams"][0]["default"] is True
    failed = http.post(
        f"{sim.url}/graphql/", json={"query": '{ create_model_from_truss(name: "x") { id } }'}
    )
    assert failed.status_code == 503
    unknown = http.post(f"{sim.url}/graphql/", json={"query": "{ organization { id } }"})
    assert unknown.status_code == 200
    assert unknown.json()["errors"][0]["message"] == "Cannot query field 'organization'"


def test_control_api_over_http(
    sim: BasetenSimulator, http: requests.Session, clock: FakeClock
) -> None:
    control = requests.Session()

    def call(op: str, **kwargs: object) -> object:
        response = control.post(f"{sim.url}/_sim/{op}", json=kwargs)
        assert response.status_code == 200, response.text
        return response.json()

    model = call("seed_model", name="m")
    mid = model["id"]
    dep = call(
        "seed_deployment", model_id=mid, name="v1", status="BUILDING", files={"config.yaml": "a: 1"}
    )
    assert dep["status"] == "BUILDING"
    call(
        "seed_environment", model_id=mid, name="production", autoscaling_settings={"max_replica": 2}
    )
    http.post(
        f"{sim.api_url}/models/{mid}/environments/production/promote",
        json={"deployment_id": dep["id"]},
    )
    env = call("complete_promotion", model_id=mid, env="production")
    assert env["current_deployment"]["id"] == dep["id"]
    assert (
        call("fail_deployment", deployment_id=dep["id"], status="UNHEALTHY")["status"]
        == "UNHEALTHY"
    )
    assert call("complete_deployment", deployment_id=dep["id"])["status"] == "ACTIVE"
    assert call("deactivate", deployment_id=dep["id"])["status"] == "DEACTIVATING"
    env = call(
        "ui_update_environment",
        model_id=mid,
        env="production",
        autoscaling_settings={"max_replica": 9},
    )
    assert env["autoscaling_settings"]["max_replica"] == 9
    call("inject_fault", endpoint="get_model", kind="5xx", count=1)
    assert http.get(f"{sim.api_url}/models/{mid}").status_code == 503
    files = control.get(f"{sim.url}/_sim/uploaded_files", params={"deployment_id": dep["id"]})
    assert files.json() == {"config.yaml": "a: 1"}
    audit = control.get(f"{sim.url}/_sim/audit_log").json()
    assert [(e["method"], e["endpoint"], e["status"]) for e in audit] == [("POST", "promote", 200)]
    assert audit[0]["body"] == {"deployment_id": dep["id"]}
    assert audit[0]["time"] == clock.now()
    bad = control.post(
        f"{sim.url}/_sim/fail_deployment", json={"deployment_id": dep["id"], "status": "NOPE"}
    )
    assert bad.status_code == 400
    assert control.post(f"{sim.url}/_sim/nothing", json={}).status_code == 404
    assert control.post(f"{sim.url}/_sim/seed_model", json={"nme": "x"}).status_code == 400
    call("reset")
    assert http.get(f"{sim.api_url}/models").json() == {"models": []}
    assert control.get(f"{sim.url}/_sim/audit_log").json() == []


def test_audit_log_records_mutations_only(sim: BasetenSimulator, http: requests.Session) -> None:
    mid = sim.seed_model("m")["id"]
    http.get(f"{sim.api_url}/models")
    http.post(f"{sim.api_url}/models/{mid}/environments", json={"name": "staging"})
    http.post(f"{sim.api_url}/models/{mid}/environments", json={"name": "staging"})
    http.delete(f"{sim.api_url}/models/{mid}")
    log = sim.audit_log()
    assert [(e["method"], e["path"], e["status"]) for e in log] == [
        ("POST", f"/v1/models/{mid}/environments", 200),
        ("POST", f"/v1/models/{mid}/environments", 400),
        ("DELETE", f"/v1/models/{mid}", 200),
    ]


def test_concurrent_promotions_admit_exactly_one(sim: BasetenSimulator) -> None:
    mid = sim.seed_model("m")["id"]
    deployments = [sim.seed_deployment(mid, f"v{i}")["id"] for i in range(8)]
    sim.seed_environment(mid, "production")
    url = f"{sim.api_url}/models/{mid}/environments/production/promote"
    barrier = threading.Barrier(len(deployments))

    def promote(dep_id: str) -> int:
        barrier.wait()
        headers = {"Authorization": "Bearer sim-test-key"}
        return requests.post(url, json={"deployment_id": dep_id}, headers=headers).status_code

    with ThreadPoolExecutor(len(deployments)) as pool:
        codes = sorted(pool.map(promote, deployments))
    assert codes == [200] + [409] * 7


def test_logs_keep_the_user_agent_and_every_request(
    sim: BasetenSimulator, http: requests.Session
) -> None:
    """The User-Agent tells operator replicas apart; the request log has reads and faulted calls."""
    mid = sim.seed_model("m")["id"]
    http.headers["User-Agent"] = "baseten-operator/0.1 (host_abc)"
    http.get(f"{sim.api_url}/models/{mid}")
    sim.inject_fault("delete_model", "5xx", 1)
    http.delete(f"{sim.api_url}/models/{mid}")
    http.delete(f"{sim.api_url}/models/{mid}")
    assert [(e["method"], e["user_agent"]) for e in sim.audit_log()] == [
        ("DELETE", "baseten-operator/0.1 (host_abc)")
    ]
    requested = [(e["method"], e["path"], e["fault"]) for e in sim.request_log()]
    assert requested == [
        ("GET", f"/v1/models/{mid}", None),
        ("DELETE", f"/v1/models/{mid}", "5xx"),
        ("DELETE", f"/v1/models/{mid}", None),
    ]
    assert {e["user_agent"] for e in sim.request_log()} == {"baseten-operator/0.1 (host_abc)"}
    later = requests.get(f"{sim.url}/_sim/request_log", params={"since": 2}, timeout=5).json()
    assert [e["method"] for e in later] == ["DELETE"]
    sim.inject_fault("*", "5xx", 5)
    requests.post(f"{sim.url}/_sim/clear_faults", json={}, timeout=5).raise_for_status()
    assert http.get(f"{sim.api_url}/models").status_code == 200
