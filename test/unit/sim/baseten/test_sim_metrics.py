"""A deployment's metrics on a fake clock: the requests it gets follow its share of its
environment's traffic over time (stable, promoting, none), counted from the timeline; the
metrics endpoint's modes, windows and refusals."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten.deployment_metrics import MetricsQuery
from baseten_operator.sim.baseten.engine import SimEngine
from baseten_operator.sim.baseten.errors import SimError

ENV = "production"
REQUESTS = "baseten_inference_requests_total"
LATENCY = "baseten_end_to_end_response_time_seconds"
REPLICAS = "baseten_replicas_active"
STABILIZE = 60
SLOW_MS = {"p50": 200, "p90": 400, "p95": 500, "p99": 900}


def metrics(engine: SimEngine, model_id: str, dep_id: str, **params: Any) -> dict:
    query = {k: v if isinstance(v, list) else [str(v)] for k, v in params.items()}
    return engine.deployment_metrics(model_id, dep_id, MetricsQuery.parse(query))


def now_ms(clock: FakeClock) -> int:
    return int(clock.now() * 1000)


def series(answer: dict, name: str, value_set: int = 0) -> dict[tuple, float | None]:
    """{label items: value} of one metric in one value set."""
    index = [d["name"] for d in answer["metric_descriptors"]].index(name)
    labels = answer["metric_descriptors"][index]["label_sets"]
    values = answer["metric_values"][value_set]["values"][index]
    return {tuple(sorted(ls.items())): v for ls, v in zip(labels, values, strict=True)}


def requests(answer: dict, value_set: int = 0) -> dict[tuple[str, str], float | None]:
    """{(status_code, rollout_phase): count}."""
    return {
        (dict(k)["status_code"], dict(k)["rollout_phase"]): v
        for k, v in series(answer, REQUESTS, value_set).items()
    }


def last_minute(engine: SimEngine, clock: FakeClock, model_id: str, dep_id: str) -> dict:
    return metrics(
        engine, model_id, dep_id, mode="SUMMARY", start_epoch_millis=now_ms(clock) - 60_000
    )


class World:
    """Production serves `good`; `bad` is ready to be promoted with a rolling deploy."""

    def __init__(self, engine: SimEngine, model_id: str) -> None:
        self.engine = engine
        self.model_id = model_id
        seed = engine.controls.seed_deployment
        self.good = seed(model_id, "good", autoscaling_settings={"min_replica": 2})["id"]
        self.bad = seed(model_id, "bad", autoscaling_settings={"min_replica": 1})["id"]
        self.idle = seed(model_id, "idle", autoscaling_settings={"min_replica": 1})["id"]
        rolling = {"max_surge_percent": 25, "stabilization_time_seconds": STABILIZE}
        engine.controls.seed_environment(
            model_id,
            ENV,
            current_deployment_id=self.good,
            autoscaling_settings={"min_replica": 2, "max_replica": 4},
            promotion_settings={"rolling_deploy": True, "rolling_deploy_config": rolling},
        )
        for dep in (self.good, self.bad, self.idle):
            engine.controls.set_traffic_profile(dep, 10, share_5xx=0.1)

    def promote_bad(self) -> None:
        self.engine.promote(self.model_id, ENV, self.bad)


@pytest.fixture
def world(engine: SimEngine, model_id: str) -> World:
    return World(engine, model_id)


def test_the_current_deployment_gets_all_its_environment_traffic(
    engine: SimEngine, clock: FakeClock, model_id: str, world: World
) -> None:
    clock.advance(60)
    answer = last_minute(engine, clock, model_id, world.good)
    # 10 requests a second for 60 s, a tenth of them answered 500.
    assert requests(answer) == {("200", "stable"): 540, ("500", "stable"): 60}
    assert answer["mode"] == "SUMMARY" and answer["step_seconds"] is None
    assert len(answer["metric_values"]) == 1


def test_a_deployment_serving_no_environment_gets_no_traffic(
    engine: SimEngine, clock: FakeClock, model_id: str, world: World
) -> None:
    clock.advance(60)
    answer = last_minute(engine, clock, model_id, world.idle)
    assert series(answer, REQUESTS) == {}
    assert set(series(answer, LATENCY).values()) == {None}
    assert series(answer, REPLICAS) == {(): 1.0}  # it still runs its replica


def test_a_rolling_candidate_gets_its_promotion_share_as_promoting_and_the_rest_stays(
    engine: SimEngine, clock: FakeClock, model_id: str, world: World
) -> None:
    world.promote_bad()
    clock.advance(STABILIZE)  # the first step: 25% to the candidate
    assert requests(last_minute(engine, clock, model_id, world.bad)) == {
        ("200", "promoting"): 135,
        ("500", "promoting"): 15,
    }
    assert requests(last_minute(engine, clock, model_id, world.good)) == {
        ("200", "stable"): 405,
        ("500", "stable"): 45,
    }
    clock.advance(STABILIZE)  # the second step: 50%
    assert requests(last_minute(engine, clock, model_id, world.bad))[("200", "promoting")] == 270


def test_the_promoted_deployment_is_stable_once_the_promotion_completes(
    engine: SimEngine, clock: FakeClock, model_id: str, world: World
) -> None:
    world.promote_bad()
    engine.promotion_signals.force_roll_forward(model_id, ENV)
    clock.advance(60)
    assert requests(last_minute(engine, clock, model_id, world.bad)) == {
        ("200", "stable"): 540,
        ("500", "stable"): 60,
    }
    assert series(last_minute(engine, clock, model_id, world.good), REQUESTS) == {}


def test_a_force_cancelled_candidate_gets_no_more_requests(
    engine: SimEngine, clock: FakeClock, model_id: str, world: World
) -> None:
    world.promote_bad()
    clock.advance(30)
    engine.promotion_signals.force_cancel(model_id, ENV)
    clock.advance(60)
    assert series(last_minute(engine, clock, model_id, world.bad), REQUESTS) == {}
    got = requests(last_minute(engine, clock, model_id, world.good))
    assert got[("200", "stable")] + got[("500", "stable")] == 600


def test_the_counts_of_a_series_add_up_to_the_summary_of_its_window(
    engine: SimEngine, clock: FakeClock, model_id: str, world: World
) -> None:
    """Fractional traffic (25% of 10 a second, 7 s steps) still adds up exactly: a step
    counts the whole requests completed in it."""
    world.promote_bad()
    clock.advance(4 * STABILIZE)
    start = now_ms(clock) - 7 * 60_000
    summary = metrics(engine, model_id, world.bad, mode="SUMMARY", start_epoch_millis=start)
    steps = metrics(engine, model_id, world.bad, mode="SERIES", start_epoch_millis=start)
    assert steps["step_seconds"] == 7  # 420 s over 60 steps
    assert len(steps["metric_values"]) == 60
    for key, total in requests(summary).items():
        counted = [requests(steps, i).get(key) for i in range(60)]
        assert sum(c for c in counted if c is not None) == total


def test_a_series_has_no_data_before_the_deployment_existed_nor_after_now(
    engine: SimEngine, clock: FakeClock, model_id: str, world: World
) -> None:
    clock.advance(60)
    start, end = now_ms(clock) - 120_000, now_ms(clock) + 60_000
    answer = metrics(
        engine,
        model_id,
        world.good,
        mode="SERIES",
        start_epoch_millis=start,
        end_epoch_millis=end,
        metrics=[REPLICAS, REQUESTS],
    )
    assert answer["step_seconds"] == 3
    firsts = [v["start_epoch_millis"] for v in answer["metric_values"]]
    assert firsts == list(range(start, end, 3000))
    replicas = [series(answer, REPLICAS, i)[()] for i in range(60)]
    assert replicas == [None] * 20 + [2.0] * 20 + [None] * 20
    assert requests(answer, 19) == {("200", "stable"): None, ("500", "stable"): None}
    assert sum(requests(answer, 20).values()) == 30
    assert set(requests(answer, 59).values()) == {None}


def test_latency_quantiles_are_the_profiles_and_mix_over_a_change(
    engine: SimEngine, clock: FakeClock, model_id: str, world: World
) -> None:
    clock.advance(60)
    fast = series(last_minute(engine, clock, model_id, world.good), LATENCY)
    assert [fast[(("quantile", q),)] for q in ("0.5", "0.9", "0.95", "0.99")] == [
        0.1,
        0.2,
        0.3,
        0.5,
    ]
    assert 0.1 < fast[(("stat", "avg"),)] < 0.2
    engine.controls.set_traffic_profile(world.good, 10, latency_ms=SLOW_MS)
    clock.advance(30)
    mixed = series(last_minute(engine, clock, model_id, world.good), LATENCY)
    # Half the minute fast, half slow: the median lies between the two medians.
    assert 0.1 < mixed[(("quantile", "0.5"),)] < 0.2
    assert fast[(("stat", "avg"),)] < mixed[(("stat", "avg"),)]


def test_requests_are_per_simulated_second(clock: FakeClock) -> None:
    """At time scale 0.5 a clock minute is two simulated minutes: twice the requests."""
    engine = SimEngine(clock=clock, time_scale=0.5)
    model_id = engine.controls.seed_model("m")["id"]
    dep = engine.controls.seed_deployment(model_id, "v1")["id"]
    engine.controls.seed_environment(model_id, ENV, current_deployment_id=dep)
    engine.controls.set_traffic_profile(dep, 2)
    clock.advance(60)
    assert requests(last_minute(engine, clock, model_id, dep)) == {("200", "stable"): 240}


def test_current_mode_is_the_trailing_minute_at_now(
    engine: SimEngine, clock: FakeClock, model_id: str, world: World
) -> None:
    clock.advance(600)
    answer = metrics(engine, model_id, world.good)
    assert (answer["mode"], answer["start_epoch_millis"], answer["end_epoch_millis"]) == (
        "CURRENT",
        now_ms(clock),
        now_ms(clock),
    )
    assert requests(answer) == {("200", "stable"): 540, ("500", "stable"): 60}
    assert series(answer, REPLICAS) == {(): 2.0}


def test_the_default_window_is_the_hour_before_now_and_the_default_metrics_are_three(
    engine: SimEngine, clock: FakeClock, model_id: str, world: World
) -> None:
    clock.advance(7200)
    answer = metrics(engine, model_id, world.good, mode="SUMMARY")
    assert answer["end_epoch_millis"] - answer["start_epoch_millis"] == 3600_000
    assert [(d["name"], d["kind"], d["unit_hint"]) for d in answer["metric_descriptors"]] == [
        (REPLICAS, "GAUGE", "COUNT"),
        (REQUESTS, "COUNTER", "COUNT"),
        (LATENCY, "HISTOGRAM", "SECONDS"),
    ]
    assert sum(requests(answer).values()) == 36_000


@pytest.mark.parametrize(
    ("params", "refusal"),
    [
        ({"mode": "CURRENT", "start_epoch_millis": 1}, "must be omitted in CURRENT mode"),
        ({"mode": "LIVE"}, "mode must be one of CURRENT, SUMMARY, SERIES"),
        ({"metrics": [REQUESTS, "baseten_gpu_magic"]}, "Unknown metric 'baseten_gpu_magic'"),
        ({"mode": "SUMMARY", "start_epoch_millis": "yesterday"}, "must be an integer"),
        (
            {"mode": "SERIES", "start_epoch_millis": 0, "end_epoch_millis": 8 * 86400_000},
            "must not exceed 7 days",
        ),
        (
            {"mode": "SUMMARY", "start_epoch_millis": 5000, "end_epoch_millis": 5000},
            "must be before end_epoch_millis",
        ),
    ],
)
def test_a_query_outside_the_spec_is_a_bad_request(
    engine: SimEngine, model_id: str, world: World, params: dict, refusal: str
) -> None:
    with pytest.raises(SimError, match=refusal) as refused:
        metrics(engine, model_id, world.good, **params)
    assert refused.value.status == 400


def test_another_models_deployment_is_not_found(
    engine: SimEngine, model_id: str, world: World
) -> None:
    other = engine.controls.seed_model("other")["id"]
    with pytest.raises(SimError) as missing:
        metrics(engine, other, world.good)
    assert missing.value.status == 404
