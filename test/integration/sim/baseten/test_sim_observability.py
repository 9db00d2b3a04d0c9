"""The simulator's observability over HTTP: who the audit log names for a REST call, the
control API's traffic, log and UI calls, the metrics endpoint's and the Prometheus export's
auth and faults."""

from __future__ import annotations

import pytest
import requests

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten import BasetenSimulator

pytestmark = pytest.mark.integration

ENV = "production"


def control(sim: BasetenSimulator, operation: str, **kwargs: object) -> requests.Response:
    return requests.post(f"{sim.url}/_sim/{operation}", json=kwargs, timeout=5)


@pytest.fixture
def serving(sim: BasetenSimulator) -> tuple[str, str]:
    model_id = sim.seed_model("llama")["id"]
    dep = sim.seed_deployment(model_id, "v1", autoscaling_settings={"min_replica": 1})["id"]
    sim.seed_environment(model_id, ENV, current_deployment_id=dep)
    return model_id, dep


def test_a_rest_change_is_audited_with_the_calling_keys_prefix_and_name(
    sim: BasetenSimulator, clock: FakeClock, serving: tuple[str, str]
) -> None:
    model_id, _ = serving
    sim.add_api_key("Xy12ab34.deployer-secret", "ci-deployer")
    url = f"{sim.api_url}/models/{model_id}/environments/{ENV}"
    headers = {"Authorization": "Bearer Xy12ab34.deployer-secret"}
    assert requests.patch(url, json={"autoscaling_settings": {"max_replica": 3}},
                          headers=headers, timeout=5).status_code == 200  # fmt: skip
    clock.advance(5)
    audit = requests.get(f"{sim.api_url}/models/{model_id}/audit_logs", headers=headers, timeout=5)
    [entry] = audit.json()["items"]
    assert entry["source"] == "API"
    assert entry["actor"] == {
        "type": "API_KEY",
        "email": None,
        "api_key_prefix": "Xy12ab34",
        "api_key_name": "ci-deployer",
    }
    assert "deployer-secret" not in audit.text


def test_the_control_api_drives_traffic_logs_and_ui_actions(
    sim: BasetenSimulator, http: requests.Session, clock: FakeClock, serving: tuple[str, str]
) -> None:
    model_id, dep = serving
    profile = control(sim, "set_traffic_profile", deployment_id=dep, requests_per_second=2,
                      share_5xx=0.5, latency_ms={"p50": 50})  # fmt: skip
    assert profile.status_code == 200
    assert profile.json()["latency_ms"]["p50"] == 50
    assert (
        control(sim, "set_traffic_profile", deployment_id=dep, requests_per_second=-1).json()[
            "message"
        ]
        == "requests_per_second must be at least 0"
    )
    assert control(sim, "inject_log", deployment_id=dep, message="OOM in forward()").ok
    ui = control(sim, "ui_update_environment", model_id=model_id, env=ENV,
                 autoscaling_settings={"max_replica": 2}, email="sre@example.com")  # fmt: skip
    assert ui.status_code == 200
    clock.advance(60)

    dep_url = f"{sim.api_url}/models/{model_id}/deployments/{dep}"
    summary = http.get(
        f"{dep_url}/metrics",
        params={"mode": "SUMMARY", "start_epoch_millis": int(clock.now() * 1000) - 60_000,
                "metrics": ["baseten_inference_requests_total", "baseten_replicas_active"]},
    ).json()  # fmt: skip
    assert [d["name"] for d in summary["metric_descriptors"]] == [
        "baseten_inference_requests_total",
        "baseten_replicas_active",
    ]
    assert summary["metric_values"][0]["values"] == [[60.0, 60.0], [1.0]]
    errors = http.get(f"{dep_url}/logs", params={"min_level": "ERROR"}).json()["logs"]
    assert [line["message"] for line in errors] == ["OOM in forward()"]
    audit = http.get(f"{sim.api_url}/models/{model_id}/audit_logs").json()["items"]
    assert [(e["source"], e["actor"]["email"]) for e in audit] == [("UI", "sre@example.com")]


def test_the_metrics_endpoint_fails_as_the_fault_injector_says(
    sim: BasetenSimulator, http: requests.Session, serving: tuple[str, str]
) -> None:
    model_id, dep = serving
    url = f"{sim.api_url}/models/{model_id}/deployments/{dep}/metrics"
    assert control(sim, "inject_fault", endpoint="get_deployment_metrics", kind="5xx",
                   count=2, status=502).ok  # fmt: skip
    assert [http.get(url).status_code for _ in range(3)] == [502, 502, 200]


def test_the_prometheus_export_wants_the_api_key_and_takes_faults(
    sim: BasetenSimulator, serving: tuple[str, str]
) -> None:
    url = f"{sim.url}/metrics"
    assert requests.get(url, timeout=5).status_code == 401
    assert (
        requests.get(url, headers={"Authorization": "Api-Key wrong"}, timeout=5).status_code == 401
    )
    answer = requests.get(url, headers={"Authorization": "Api-Key sim-test-key"}, timeout=5)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/plain")
    assert "baseten_replicas_active{" in answer.text
    sim.inject_fault("metrics_export", "5xx")
    assert requests.get(url, headers={"Authorization": "Api-Key sim-test-key"},
                        timeout=5).status_code == 503  # fmt: skip
