"""Baseten's Prometheus export as the simulator writes it, read back with prometheus_client's
own parser: cumulative counters with Baseten's labels, a histogram consistent with them, the
replicas gauge, a team key's view."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten.engine import SimEngine

ENV = "production"


def samples(engine: SimEngine, team_id: str | None = None) -> list:
    text = engine.metrics_export(team_id).decode()
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def value(found: list, name: str, **labels: str) -> float:
    matching = [
        s.value
        for s in found
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(matching) == 1, (name, labels, matching)
    return float(matching[0])


def serving(engine: SimEngine, name: str, team_id: str | None = None) -> tuple[str, str]:
    model_id = (
        engine.controls.seed_model(name)["id"]
        if team_id is None
        else engine.controls.seed_model(name, team_id)["id"]
    )
    dep = engine.controls.seed_deployment(
        model_id, "v1", autoscaling_settings={"min_replica": 3, "max_replica": 3}
    )
    engine.controls.seed_environment(model_id, ENV, current_deployment_id=dep["id"])
    return model_id, dep["id"]


def test_the_export_counts_requests_since_the_start_with_baseten_labels(
    engine: SimEngine, clock: FakeClock
) -> None:
    model_id, dep = serving(engine, "llama")
    engine.controls.set_traffic_profile(dep, 4, share_5xx=0.25, share_4xx=0.25)
    clock.advance(100)
    found = samples(engine)
    labels = {
        "model_id": model_id,
        "model_name": "llama",
        "deployment_id": dep,
        "is_async": "false",
        "environment": ENV,
        "rollout_phase": "stable",
    }
    counted = {
        code: value(found, "baseten_inference_requests_total", status_code=code, **labels)
        for code in ("200", "400", "500")
    }
    assert counted == {"200": 200, "400": 100, "500": 100}
    clock.advance(100)
    later = samples(engine)
    assert value(later, "baseten_inference_requests_total", status_code="500", **labels) == 200


def test_the_histogram_counts_every_request_once_and_its_buckets_grow(
    engine: SimEngine, clock: FakeClock
) -> None:
    _, dep = serving(engine, "llama")
    engine.controls.set_traffic_profile(
        dep, 5, latency_ms={"p50": 40, "p90": 80, "p95": 90, "p99": 200}
    )
    clock.advance(60)
    found = samples(engine)
    name = "baseten_end_to_end_response_time_seconds"
    buckets = [
        (float(s.labels["le"]), s.value)
        for s in found
        if s.name == name + "_bucket" and s.labels["deployment_id"] == dep
    ]
    counts = [count for _, count in sorted(buckets)]
    assert counts == sorted(counts)
    assert counts[-1] == value(found, name + "_count", deployment_id=dep) == 300
    # Half the requests are faster than the median (40 ms): all of them within 50 ms.
    assert dict(buckets)[0.025] < 150 <= dict(buckets)[0.05]
    assert dict(buckets)[0.5] == 300
    assert value(found, name + "_sum", deployment_id=dep) > 300 * 0.04 * 0.5


def test_the_gauge_shows_every_deployment_and_its_environment(
    engine: SimEngine, clock: FakeClock
) -> None:
    model_id, dep = serving(engine, "llama")
    spare = engine.controls.seed_deployment(model_id, "spare", status="INACTIVE")["id"]
    found = samples(engine)
    assert value(found, "baseten_replicas_active", deployment_id=dep, environment=ENV) == 3
    assert value(found, "baseten_replicas_active", deployment_id=spare, environment="") == 0


def test_a_team_key_sees_only_its_teams_deployments(engine: SimEngine, clock: FakeClock) -> None:
    team = engine.create_team("vision")["id"]
    _, ours = serving(engine, "ours", team)
    _, theirs = serving(engine, "theirs")
    seen = {s.labels["deployment_id"] for s in samples(engine, team)}
    assert seen == {ours}
    assert {ours, theirs} <= {s.labels["deployment_id"] for s in samples(engine)}
