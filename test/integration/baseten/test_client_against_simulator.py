"""The Baseten client end to end against the Baseten simulator: every operation, over HTTP."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import EnvironmentV1
from baseten_operator.runtime.metrics import REGISTRY
from baseten_operator.sim.baseten import BasetenSimulator

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
