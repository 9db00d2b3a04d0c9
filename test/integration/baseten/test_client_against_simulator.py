"""The Baseten client end to end against the Baseten simulator: every operation, over HTTP."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.deployment_metrics import (
    INFERENCE_REQUESTS,
    REPLICAS_ACTIVE,
    RESPONSE_TIME,
    total,
)
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import EnvironmentV1
from baseten_operator.runtime.metrics import REGISTRY
from baseten_operator.sim.baseten import BasetenSimulator
from testsupport.polling import wait_for

pytestmark = pytest.mark.integration

SIM_KEY = "sim-api-key"
# Simulated seconds run 100x faster than real ones, so asynchronous changes land quickly.
TIME_SCALE = 0.01


@pytest.fixture(scope="module")
def running_sim() -> Iterator[Any]:
    simulator = BasetenSimulator(api_key=SIM_KEY, time_scale=TIME_SCALE)
    simulator.start()
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture
def sim(running_sim: Any) -> Any:
    """One server for the module (stopping one is slow), emptied before each test."""
    running_sim.reset()
    return running_sim


@pytest.fixture
def client(sim: Any) -> BasetenClient:
    return BasetenClient(SIM_KEY, sim.api_url, timeout=5, backoff_base=0.01, backoff_cap=0.05)


def eventually(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Poll a real condition until it holds or the deadline passes."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_models_and_deployments(sim: Any, client: BasetenClient) -> None:
    model_id = sim.seed_model("llama")["id"]
    sim.seed_model("llama-2")
    dep = sim.seed_deployment(model_id, "depl-a", status="ACTIVE")
    sim.seed_deployment(model_id, "depl-b", status="INACTIVE")

    assert {m.name for m in client.list_models()} >= {"llama", "llama-2"}
    assert [m.id for m in client.list_models("llama")] == [model_id]
    found = client.find_model("llama")
    assert found is not None and found.id == model_id
    assert client.find_model("no-such-model") is None

    assert {d.name for d in client.list_deployments(model_id)} == {"depl-a", "depl-b"}
    assert [d.name for d in client.list_deployments(model_id, "depl-a")] == ["depl-a"]
    by_name = client.find_deployment(model_id, "depl-b")
    assert by_name is not None and by_name.status == "INACTIVE"
    assert client.find_deployment(model_id, "depl-zzz") is None

    got = client.get_deployment(model_id, dep["id"])
    assert got.id == dep["id"] and got.model_id == model_id and got.status == "ACTIVE"


def test_activate_deactivate_retry_and_autoscaling(sim: Any, client: BasetenClient) -> None:
    model_id = sim.seed_model("m")["id"]
    dep_id = sim.seed_deployment(model_id, "depl-a", status="ACTIVE")["id"]

    client.deactivate_deployment(model_id, dep_id)
    eventually(lambda: client.get_deployment(model_id, dep_id).status == "INACTIVE", "deactivation")
    client.activate_deployment(model_id, dep_id)
    eventually(
        lambda: client.get_deployment(model_id, dep_id).status in {"ACTIVE", "SCALED_TO_ZERO"},
        "activation",
    )

    declined = client.retry_deployment(model_id, dep_id)
    assert not declined.retried and declined.reason
    sim.fail_deployment(dep_id, "DEPLOY_FAILED")
    retried = client.retry_deployment(model_id, dep_id)
    assert retried.retried
    assert retried.deployment is not None and retried.deployment.id == dep_id
    sim.complete_deployment(dep_id)

    client.update_deployment_autoscaling(model_id, dep_id, {"min_replica": 1, "max_replica": 4})

    def applied() -> bool:
        settings = client.get_deployment(model_id, dep_id).autoscaling_settings
        return settings is not None and (settings.min_replica, settings.max_replica) == (1, 4)

    eventually(applied, "deployment autoscaling update")


def test_environments_and_promotion(sim: Any, client: BasetenClient) -> None:
    model_id = sim.seed_model("m")["id"]
    dep_id = sim.seed_deployment(model_id, "depl-a", status="ACTIVE")["id"]

    created = client.create_environment(
        model_id,
        "staging",
        {"min_replica": 0, "max_replica": 2},
        {"rolling_deploy": False, "promotion_cleanup_strategy": "KEEP"},
    )
    assert isinstance(created, EnvironmentV1) and created.name == "staging"
    assert "staging" in {e.name for e in client.list_environments(model_id)}

    env = client.get_environment(model_id, "staging")
    assert env.current_deployment is None
    assert env.autoscaling_settings is not None and env.autoscaling_settings.max_replica == 2
    assert env.promotion_settings is not None
    assert env.promotion_settings.promotion_cleanup_strategy == "KEEP"

    client.update_environment(
        model_id, "staging", {"max_replica": 3}, {"promotion_cleanup_strategy": "SCALE_TO_ZERO"}
    )

    def settings_applied() -> bool:
        current = client.get_environment(model_id, "staging")
        return (
            current.autoscaling_settings is not None
            and current.autoscaling_settings.max_replica == 3
            and current.promotion_settings is not None
            and current.promotion_settings.promotion_cleanup_strategy == "SCALE_TO_ZERO"
        )

    eventually(settings_applied, "environment settings update")

    promoted = client.promote(model_id, "staging", dep_id)
    assert promoted.name == "depl-a" or promoted.name.startswith("depl-a.")
    during = client.get_environment(model_id, "staging")
    assert during.candidate_deployment is not None or (
        during.current_deployment is not None and during.current_deployment.id == promoted.id
    )
    if during.candidate_deployment is not None:
        sim.complete_promotion(model_id, "staging")
    eventually(
        lambda: (current := client.get_environment(model_id, "staging").current_deployment)
        is not None
        and current.id == promoted.id,
        "promotion to finish",
    )


def test_not_found_bad_key_and_deletes(sim: Any, client: BasetenClient) -> None:
    model_id = sim.seed_model("m")["id"]
    dep_id = sim.seed_deployment(model_id, "depl-a", status="INACTIVE")["id"]

    with pytest.raises(BasetenAPIError) as missing_env:
        client.get_environment(model_id, "nope")
    assert missing_env.value.is_not_found
    with pytest.raises(BasetenAPIError) as missing_model:
        client.list_environments("no-such-model")
    assert missing_model.value.is_not_found

    wrong_key = BasetenClient("not-the-key", sim.api_url, timeout=5)
    with pytest.raises(BasetenAPIError) as denied:
        wrong_key.list_models()
    assert denied.value.status_code == 401
    assert "not-the-key" not in str(denied.value)

    client.delete_deployment(model_id, dep_id)
    with pytest.raises(BasetenAPIError) as gone:
        client.get_deployment(model_id, dep_id)
    assert gone.value.is_not_found

    client.delete_model(model_id)
    assert client.find_model("m") is None


def requests_seen(code: str, endpoint: str = "/v1/models", method: str = "GET") -> float:
    labels = {"endpoint": endpoint, "method": method, "code": code}
    return REGISTRY.get_sample_value("baseten_api_requests_total", labels) or 0.0


def test_retries_through_injected_faults(sim: Any, client: BasetenClient) -> None:
    sim.seed_model("m")
    failures_before = requests_seen("503")
    sim.inject_fault("list_models", "5xx", 2)
    assert [m.name for m in client.list_models()] == ["m"]
    assert requests_seen("503") - failures_before == 2

    limited_before = requests_seen("429")
    sim.inject_fault("list_models", "429", 1, retry_after=1)
    assert [m.name for m in client.list_models()] == ["m"]
    assert requests_seen("429") - limited_before == 1

    model_id = client.list_models()[0].id
    sim.inject_fault("promote", "5xx", 1)
    dep_id = sim.seed_deployment(model_id, "depl-a", status="ACTIVE")["id"]
    sim.seed_environment(model_id, "production")
    promote = "/v1/models/{model_id}/environments/{env_name}/promote"
    promote_failures_before = requests_seen("503", promote, "POST")
    with pytest.raises(BasetenAPIError) as not_retried:
        client.promote(model_id, "production", dep_id)
    assert not_retried.value.status_code == 503
    assert requests_seen("503", promote, "POST") - promote_failures_before == 1


def test_dropped_connections(sim: Any, client: BasetenClient) -> None:
    model_id = sim.seed_model("m")["id"]
    dep_id = sim.seed_deployment(model_id, "depl-a", status="ACTIVE")["id"]
    sim.seed_environment(model_id, "production")

    # A GET whose connection drops is simply sent again, at once on a fresh connection by
    # urllib3 (runtime/pools.py SAFE_RETRY): the call never sees a failed request.
    get_env = "/v1/models/{model_id}/environments/{env_name}"
    drops_before = requests_seen("0", get_env)
    sim.inject_fault("get_environment", "drop", 1)
    assert client.get_environment(model_id, "production").name == "production"
    assert requests_seen("0", get_env) - drops_before == 0

    # A promote whose connection drops after sending may have happened: never repeated.
    promote = "/v1/models/{model_id}/environments/{env_name}/promote"
    dropped_before = requests_seen("0", promote, "POST")
    sim.inject_fault("promote", "drop", 1)
    with pytest.raises(BasetenAPIError) as dropped:
        client.promote(model_id, "production", dep_id)
    assert dropped.value.status_code == 0
    assert requests_seen("0", promote, "POST") - dropped_before == 1


# ----------------------------------------------------------------- rolling promotions


def rolling_production(sim: Any, *, stabilization: int) -> tuple[str, str, str]:
    """A model whose production serves `good`, with rolling deploys in two steps of
    `stabilization` simulated seconds; returns (model id, good, bad)."""
    model_id = sim.seed_model("m")["id"]
    good = sim.seed_deployment(model_id, "good", autoscaling_settings={"min_replica": 1})["id"]
    bad = sim.seed_deployment(model_id, "bad", autoscaling_settings={"min_replica": 1})["id"]
    rolling = {"max_surge_percent": 50, "stabilization_time_seconds": stabilization}
    sim.seed_environment(
        model_id,
        "production",
        current_deployment_id=good,
        promotion_settings={"rolling_deploy": True, "rolling_deploy_config": rolling},
    )
    return model_id, good, bad


def test_pause_resume_and_roll_forward_a_rolling_promotion(sim: Any, client: BasetenClient) -> None:
    # A step lasts 20 real seconds: long enough to see it paused, never waited out.
    model_id, _, bad = rolling_production(sim, stabilization=2000)
    client.promote(model_id, "production", bad)

    def phase() -> tuple[str, int | None] | None:
        promotion = client.get_environment(model_id, "production").in_progress_promotion
        return (promotion.status, promotion.percent_traffic_to_new_version) if promotion else None

    assert phase() == ("RAMPING_UP", 50)
    assert client.pause_promotion(model_id, "production").success is True
    assert phase() == ("RAMPING_UP", 50)  # paused only once the step ends
    assert client.resume_promotion(model_id, "production").success is True
    assert client.force_roll_forward_promotion(model_id, "production").success is True
    current = client.get_environment(model_id, "production").current_deployment
    assert current is not None and current.id == bad


def test_force_cancel_and_the_refusals(sim: Any, client: BasetenClient) -> None:
    model_id, good, bad = rolling_production(sim, stabilization=2000)
    with pytest.raises(BasetenAPIError) as refused:
        client.pause_promotion(model_id, "production")
    assert refused.value.status_code == 400
    assert "No promotion in progress" in refused.value.message
    client.promote(model_id, "production", bad)
    client.force_cancel_promotion(model_id, "production")
    env = client.get_environment(model_id, "production")
    assert env.in_progress_promotion is None and env.candidate_deployment is None
    assert env.current_deployment is not None and env.current_deployment.id == good
    client.promote(model_id, "production", bad)
    with pytest.raises(BasetenAPIError, match="not paused"):
        client.resume_promotion(model_id, "production")


# ----------------------------------------------------------------- metrics, audit, logs


def test_metrics_follow_the_traffic_profile(sim: Any, client: BasetenClient) -> None:
    model_id, good, _ = rolling_production(sim, stabilization=2000)
    sim.set_traffic_profile(good, 1, share_5xx=0.2)  # 100 a real second at this time scale
    since = int(time.time() * 1000)

    def counted() -> dict | None:
        # A window from `since` to now, never empty (Baseten refuses start >= end): the
        # first read can come within the same millisecond.
        until = max(int(time.time() * 1000), since + 1)
        answer = client.get_deployment_metrics(
            model_id,
            good,
            mode="SUMMARY",
            start_ms=since,
            end_ms=until,
            metrics=[INFERENCE_REQUESTS],
        )
        counts = answer.summary(INFERENCE_REQUESTS)
        everything = total(counts) or 0
        return counts if everything >= 200 else None

    counts = wait_for(counted, timeout=10, describe=lambda: "200 requests counted")
    share = (total(counts, lambda labels: labels["status_code"].startswith("5")) or 0) / (
        total(counts) or 1
    )
    assert share == pytest.approx(0.2, abs=0.02)
    assert {dict(labels)["rollout_phase"] for labels in counts} == {"stable"}
    current = client.get_deployment_metrics(model_id, good, mode="CURRENT")
    assert current.summary(REPLICAS_ACTIVE) == {frozenset(): 1.0}
    latency = current.summary(RESPONSE_TIME)
    assert latency[frozenset({("quantile", "0.5")})] == pytest.approx(0.1)


def test_the_audit_log_names_the_clients_key_and_the_ui_user(
    sim: Any, client: BasetenClient
) -> None:
    model_id, _, _ = rolling_production(sim, stabilization=2000)
    client.update_environment(model_id, "production", {"max_replica": 3}, None)
    sim.ui_update_environment(model_id, "production", {"max_replica": 4}, email="sre@example.com")

    def both() -> list | None:
        items = client.list_audit_logs(model_id, event_type_groups=["ENVIRONMENT_SETTINGS"]).items
        return items if len(items) == 2 else None

    items = wait_for(both, timeout=10, describe=lambda: "two environment updates audited")
    by_source = {entry.source: entry for entry in items}
    assert by_source["API"].actor.api_key_prefix == SIM_KEY[:8]
    assert by_source["API"].actor.api_key_name == "org"
    assert by_source["UI"].actor.email == "sre@example.com"
    first = client.list_audit_logs(model_id, limit=1)
    assert first.next_cursor is not None
    rest = client.list_audit_logs(model_id, limit=200, cursor=first.next_cursor)
    assert rest.next_cursor is None
    whole = client.list_audit_logs(model_id, limit=200)
    assert [e.id for e in first.items + rest.items] == [e.id for e in whole.items]


def test_a_failed_builds_logs_say_why(sim: Any, client: BasetenClient) -> None:
    model_id = sim.seed_model("m")["id"]
    dep = sim.seed_deployment(model_id, "v1", status="BUILDING")["id"]
    sim.fail_deployment(dep, "BUILD_FAILED", reason="pip: no matching distribution for torch==9")
    sim.inject_log(dep, "HF_TOKEN=hf_abc123 rejected by the hub")
    errors = client.get_deployment_logs(model_id, dep, min_level="ERROR")
    assert [line.message for line in errors] == [
        "pip: no matching distribution for torch==9",
        "HF_TOKEN=hf_abc123 rejected by the hub",
    ]
    everything = client.get_deployment_logs(model_id, dep, direction="desc", limit=2)
    assert [line.level for line in everything] == ["ERROR", "ERROR"]
    assert all(line.timestamp_ns for line in everything)
