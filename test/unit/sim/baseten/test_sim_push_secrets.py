"""A pushed deployment loads with the secrets its truss config names: one its model's team
lacks fails the load, naming the secret."""

from __future__ import annotations

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten.engine import LifecycleDurations, SimEngine
from baseten_operator.sim.baseten.records import DEFAULT_TEAM_ID

D = LifecycleDurations()
PUSH = D.build + D.deploy + D.load_model


def push(engine: SimEngine, model_id: str, secrets: dict[str, str]) -> str:
    config = {"secrets": secrets}
    return str(engine.create_pushed_deployment(model_id, "v1", files={}, truss_config=config)["id"])


def test_a_missing_secret_fails_the_load_naming_it(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    engine.secrets.upsert(DEFAULT_TEAM_ID, "present", "value-1")
    dep = push(engine, model_id, {"present": "", "hf_token": "", "a_key": ""})
    clock.advance(PUSH - 0.001)
    assert engine.get_deployment(model_id, dep)["status"] == "LOADING_MODEL"
    clock.advance(0.001)
    assert engine.get_deployment(model_id, dep)["status"] == "FAILED"
    assert engine.controls.deployment_failure(dep) == {
        "id": dep,
        "status": "FAILED",
        "failure": "secrets not found in Baseten: a_key, hf_token",
    }


def test_a_retry_once_the_secrets_exist_loads(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = push(engine, model_id, {"hf_token": ""})
    clock.advance(PUSH)
    engine.secrets.upsert(DEFAULT_TEAM_ID, "hf_token", "value-1")
    assert engine.retry(model_id, dep)["retried"] is True
    clock.advance(PUSH)
    assert engine.get_deployment(model_id, dep)["status"] == "ACTIVE"
    assert engine.controls.deployment_failure(dep)["failure"] is None


def test_the_secret_must_be_in_the_models_team(engine: SimEngine, clock: FakeClock) -> None:
    team = engine.create_team("search")["id"]
    model_id = engine.create_model("llama", team)["id"]
    engine.secrets.upsert(DEFAULT_TEAM_ID, "hf_token", "value-1")  # another team's
    dep = push(engine, model_id, {"hf_token": ""})
    clock.advance(PUSH)
    assert engine.get_deployment(model_id, dep)["status"] == "FAILED"
    engine.secrets.upsert(team, "hf_token", "value-1")
    engine.retry(model_id, dep)
    clock.advance(PUSH)
    assert engine.get_deployment(model_id, dep)["status"] == "ACTIVE"


def test_a_config_without_secrets_loads(engine: SimEngine, clock: FakeClock, model_id: str) -> None:
    dep = str(engine.create_pushed_deployment(model_id, "v1", files={}, truss_config={})["id"])
    clock.advance(PUSH)
    assert engine.get_deployment(model_id, dep)["status"] == "ACTIVE"
