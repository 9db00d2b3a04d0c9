"""A deployment's logs in the simulator, on a fake clock: the lines its lifecycle writes, an
ERROR line saying why it failed, injected lines, and the endpoint's window and filters."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten.deployment_logs import LogsQuery
from baseten_operator.sim.baseten.engine import LifecycleDurations, SimEngine
from baseten_operator.sim.baseten.errors import SimError

D = LifecycleDurations()
PUSH = D.build + D.deploy + D.load_model


def logs(engine: SimEngine, model_id: str, dep_id: str, **params: Any) -> list[dict]:
    query = {k: v if isinstance(v, list) else [str(v)] for k, v in params.items()}
    return engine.deployment_logs(model_id, dep_id, LogsQuery.parse(query))["logs"]


def push(engine: SimEngine, model_id: str, **truss_config: Any) -> str:
    dep = engine.create_pushed_deployment(
        model_id, "v1", files={"config.yaml": "x"}, truss_config=truss_config
    )
    return str(dep["id"])


def test_a_push_logs_each_step_of_its_build_and_deploy(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = push(engine, model_id)
    clock.advance(PUSH)
    lines = logs(engine, model_id, dep)
    assert [line["level"] for line in lines] == ["INFO"] * 4
    assert [line["message"] for line in lines] == [
        "Building the model image",
        "Image built; deploying the model server",
        "Model server started; loading the model",
        "Model loaded; the deployment is ACTIVE",
    ]
    start = clock.now() - PUSH
    expected_ns = [round((start + t) * 1e9) for t in (0, D.build, D.build + D.deploy, PUSH)]
    assert [int(line["timestamp"]) for line in lines] == expected_ns
    # The builder's lines come from no replica; the model server's from its replica.
    assert [line["replica"] is None for line in lines] == [True, True, False, False]


def test_a_failure_the_control_api_forces_logs_an_error_saying_why(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = push(engine, model_id)
    clock.advance(5)
    engine.controls.fail_deployment(dep, "BUILD_FAILED", reason="pip: no matching torch==9.9")
    [error] = logs(engine, model_id, dep, min_level="ERROR")
    assert error["message"] == "pip: no matching torch==9.9"
    assert engine.get_deployment(model_id, dep)["status"] == "BUILD_FAILED"
    engine.controls.fail_deployment(dep, "DEPLOY_FAILED")
    assert "Deploy failed" in logs(engine, model_id, dep, min_level="ERROR")[-1]["message"]


def test_a_missing_secret_fails_the_load_with_an_error_naming_it(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = push(engine, model_id, secrets={"hf_access_token": None})
    clock.advance(PUSH)
    [error] = logs(engine, model_id, dep, min_level="WARNING")
    assert "hf_access_token" in error["message"]


def test_injected_lines_and_the_level_filter(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = engine.controls.seed_deployment(model_id, "v1")["id"]
    engine.controls.inject_log(dep, "token=hf_s3cr3t rejected", "ERROR", replica="abcde")
    engine.controls.inject_log(dep, "retrying download", "WARNING")
    engine.controls.inject_log(dep, "raw stdout line", None)
    assert [line["message"] for line in logs(engine, model_id, dep, min_level="WARNING")] == [
        "token=hf_s3cr3t rejected",
        "retrying download",
    ]
    everything = logs(engine, model_id, dep)
    assert everything[-1] == {
        "timestamp": str(round(clock.now() * 1e9)),
        "message": "raw stdout line",
        "replica": None,
        "request_id": None,
        "level": None,
    }
    assert [line["message"] for line in logs(engine, model_id, dep, replica="abcde")] == [
        "token=hf_s3cr3t rejected"
    ]
    with pytest.raises(SimError, match="level must be one of"):
        engine.controls.inject_log(dep, "x", "FATAL")


def test_the_window_is_the_last_30_minutes_unless_widened(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = push(engine, model_id)  # ACTIVE after 40 s, scaled to zero 900 s later
    clock.advance(31 * 60)
    assert [line["message"] for line in logs(engine, model_id, dep)] == [
        "No traffic: scaled to zero replicas"
    ]
    widened = logs(engine, model_id, dep, start_epoch_millis=int(clock.now() * 1000) - 3600_000)
    assert len(widened) == 5


def test_direction_limit_and_substring_filters(
    engine: SimEngine, clock: FakeClock, model_id: str
) -> None:
    dep = push(engine, model_id)
    clock.advance(PUSH)
    newest = logs(engine, model_id, dep, direction="desc", limit=1)
    assert [line["message"] for line in newest] == ["Model loaded; the deployment is ACTIVE"]
    oldest = logs(engine, model_id, dep, limit=1)
    assert [line["message"] for line in oldest] == ["Building the model image"]
    chosen = logs(engine, model_id, dep, includes=["model"], excludes=["image"])
    assert [line["message"] for line in chosen] == [
        "Image built; deploying the model server",
        "Model server started; loading the model",
    ]
    assert len(logs(engine, model_id, dep, search_pattern="^Model (loaded|server)")) == 2
    assert logs(engine, model_id, dep, request_id="r-1") == []


@pytest.mark.parametrize(
    ("params", "refusal"),
    [
        ({"limit": 0}, "limit must be between 1 and 1000"),
        ({"limit": 1001}, "limit must be between 1 and 1000"),
        ({"min_level": "FATAL"}, "level must be one of"),
        ({"direction": "up"}, "direction must be asc or desc"),
        ({"search_pattern": "("}, "not a valid regular expression"),
        ({"includes": [str(i) for i in range(9)]}, "at most 8"),
        ({"start_epoch_millis": 0}, "must not exceed 7 days"),
        ({"end_epoch_millis": 0, "start_epoch_millis": 1}, "must not be after"),
    ],
)
def test_a_query_outside_the_spec_is_a_bad_request(
    engine: SimEngine, model_id: str, params: dict, refusal: str
) -> None:
    dep = engine.controls.seed_deployment(model_id, "v1")["id"]
    with pytest.raises(SimError, match=refusal) as refused:
        logs(engine, model_id, dep, **params)
    assert refused.value.status == 400
