"""A real truss push (child process, real truss) against the Baseten simulator."""

from __future__ import annotations

import copy
import queue
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import yaml

from baseten_operator.sim.baseten import BasetenSimulator
from baseten_operator.truss.config import render_config_yaml
from baseten_operator.truss.naming import config_hash, deployment_name
from baseten_operator.truss.pusher import PushOutcome, PushRequest, TrussPusher
from testsupport.paths import REPO

pytestmark = pytest.mark.integration

API_KEY = "sim-api-key"
SAMPLES = REPO / "config" / "samples"


def shipped_sample() -> tuple[str, dict[str, Any], str]:
    """The complete sample CR as shipped (README.md's complete example) and its setup script."""
    cr = yaml.safe_load((SAMPLES / "models_v1alpha1_basetenmodel_complete.yaml").read_text())
    configmap = yaml.safe_load((SAMPLES / "setup_configmap.yaml").read_text())
    config = cr["spec"]["trussConfig"]
    ref = config["setupScript"]["configMapRef"]
    assert ref["name"] == configmap["metadata"]["name"]
    return cr["spec"]["modelName"], config, configmap["data"][ref["key"]]


MODEL_NAME, COMPLETE_CONFIG, SETUP_SCRIPT = shipped_sample()


@pytest.fixture
def simulator() -> Iterator[Any]:
    sim = BasetenSimulator(api_key=API_KEY)
    sim.start()
    yield sim
    sim.stop()


def push(sim: Any, req: PushRequest) -> PushOutcome:
    outcomes: queue.Queue[PushOutcome] = queue.Queue()
    pusher = TrussPusher(API_KEY, sim.remote_url, on_done=outcomes.put, timeout=120)
    try:
        assert pusher.launch(req)
        return outcomes.get(timeout=120)
    finally:
        pusher.stop(10)


def deployments_named(sim: Any, model_id: str, name: str) -> list[dict[str, Any]]:
    response = requests.get(
        f"{sim.api_url}/models/{model_id}/deployments",
        params={"name": name},
        headers={"Authorization": f"Bearer {API_KEY}"},
        timeout=10,
    )
    response.raise_for_status()
    found: list[dict[str, Any]] = response.json()["deployments"]
    return found


def test_push_complete_example_creates_model_and_named_deployment(simulator: Any) -> None:
    name = deployment_name(COMPLETE_CONFIG, SETUP_SCRIPT)
    assert name == f"depl-vllm-0.16.0-{config_hash(COMPLETE_CONFIG, SETUP_SCRIPT)}"

    outcome = push(
        simulator,
        PushRequest(
            key="default/my-model-production",
            model_name=MODEL_NAME,
            deployment_name=name,
            truss_config=copy.deepcopy(COMPLETE_CONFIG),
            setup_script=SETUP_SCRIPT,
            model_id=None,
        ),
    )

    assert outcome.succeeded, outcome.error
    assert outcome.model_id and outcome.deployment_id
    files = simulator.uploaded_files(outcome.deployment_id)
    assert files["config.yaml"] == render_config_yaml(MODEL_NAME, COMPLETE_CONFIG)
    assert files["data/setup.sh"] == SETUP_SCRIPT
    [deployment] = deployments_named(simulator, outcome.model_id, name)
    assert deployment["id"] == outcome.deployment_id


def test_second_push_adds_a_deployment_to_the_existing_model(simulator: Any) -> None:
    model = simulator.seed_model(MODEL_NAME)
    config = copy.deepcopy(COMPLETE_CONFIG)
    del config["setupScript"]
    name = deployment_name(config, "")

    outcome = push(
        simulator,
        PushRequest("default/m", MODEL_NAME, name, config, "", model_id=model["id"]),
    )

    assert outcome.succeeded, outcome.error
    assert outcome.model_id == model["id"]
    assert "data/setup.sh" not in simulator.uploaded_files(outcome.deployment_id)
    assert [d["id"] for d in deployments_named(simulator, model["id"], name)] == [
        outcome.deployment_id
    ]


def test_a_push_with_a_team_key_creates_the_model_in_that_team(simulator: Any) -> None:
    team = simulator.create_team("search")
    simulator.add_api_key("search-key", "search", team="search")
    simulator.seed_model(MODEL_NAME)  # the same name in the default team is not the model
    config = copy.deepcopy(COMPLETE_CONFIG)
    del config["setupScript"]
    request = PushRequest(
        "search/m",
        MODEL_NAME,
        deployment_name(config, ""),
        config,
        "",
        model_id=None,
        api_key="search-key",
        team_id=team["id"],
    )

    outcome = push(simulator, request)

    assert outcome.succeeded, outcome.error
    assert simulator.engine.team_of_model(outcome.model_id) == team["id"]
    pushes = [e for e in simulator.audit_log() if e["endpoint"].startswith("graphql:")]
    assert {e["key"] for e in pushes} == {"search"}
    assert "search-key" not in str(simulator.audit_log())
