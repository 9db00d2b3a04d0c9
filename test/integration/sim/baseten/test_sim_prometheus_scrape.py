"""A real Prometheus scrapes the simulator's export of Baseten's metrics and answers the
PromQL an operator would ask: the share of a deployment's requests answered 5xx, the
traffic of a rolling promotion's candidate by rollout phase."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from baseten_operator.sim.baseten import BasetenSimulator
from testsupport.prometheus import Prometheus, PrometheusMissing, ScrapeTarget

pytestmark = pytest.mark.integration

KEY = "PrOm1234.export-key"
ENV = "production"


@pytest.fixture
def live_sim() -> Iterator[BasetenSimulator]:
    """On real time: Prometheus stamps its samples with the wall clock."""
    simulator = BasetenSimulator(KEY)
    simulator.start()
    try:
        yield simulator
    finally:
        simulator.stop()


def error_share(deployment_id: str) -> str:
    return (
        f'sum(rate(baseten_inference_requests_total{{deployment_id="{deployment_id}",'
        f'status_code=~"5.."}}[1m])) / '
        f'sum(rate(baseten_inference_requests_total{{deployment_id="{deployment_id}"}}[1m]))'
    )


def test_prometheus_reads_each_deployments_error_share_and_rollout_phase(
    live_sim: BasetenSimulator, tmp_path: Path
) -> None:
    sim = live_sim
    model_id = sim.seed_model("llama")["id"]
    good = sim.seed_deployment(model_id, "good", autoscaling_settings={"min_replica": 1})["id"]
    bad = sim.seed_deployment(model_id, "bad", autoscaling_settings={"min_replica": 1})["id"]
    # A rolling deploy whose first step (half the traffic) lasts longer than the test.
    rolling = {"max_surge_percent": 50, "stabilization_time_seconds": 3600}
    sim.seed_environment(
        model_id,
        ENV,
        current_deployment_id=good,
        promotion_settings={"rolling_deploy": True, "rolling_deploy_config": rolling},
    )
    sim.set_traffic_profile(good, 200, share_5xx=0.02)
    sim.set_traffic_profile(bad, 200, share_5xx=0.3, share_4xx=0.1)
    sim.engine.promote(model_id, ENV, bad)

    target = ScrapeTarget(f"{sim.url}/metrics", ("Api-Key", KEY))
    with Prometheus([target], tmp_path / "prometheus", scrape_interval=0.5) as prometheus:

        def settled(expected: float) -> float:
            return prometheus.wait_for_value(
                error_share(bad), until=lambda share: abs(share - expected) < 0.03
            )

        assert settled(0.3) == pytest.approx(0.3, abs=0.03)
        assert prometheus.wait_for_value(error_share(good), until=lambda s: s > 0) == (
            pytest.approx(0.02, abs=0.01)
        )
        # The candidate's requests are all "promoting", at half the environment's 200/s.
        # (irate: a rate over [1m] divides by the minute, which a young series has not
        # filled; its last two samples give the rate now.)
        by_phase = prometheus.query(
            f"sum by (rollout_phase, environment) (irate(baseten_inference_requests_total"
            f'{{deployment_id="{bad}"}}[10s]))'
        )
        assert [(s["metric"]["rollout_phase"], s["metric"]["environment"]) for s in by_phase] == [
            ("promoting", ENV)
        ]
        assert float(by_phase[0]["value"][1]) == pytest.approx(100, rel=0.2)
        replicas = prometheus.value(f'baseten_replicas_active{{deployment_id="{good}"}}')
        assert replicas == 1


def test_without_a_prometheus_binary_starting_fails_saying_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PROMETHEUS_BIN", str(tmp_path / "no-such-prometheus"))
    with pytest.raises(PrometheusMissing, match="run `make prometheus`"):
        Prometheus([], tmp_path).start()
