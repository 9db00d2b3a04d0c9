"""Progressive delivery end to end (docs/contract.md section 14): kubectl, the operator
process, the Baseten simulator stepping a rolling promotion and serving each deployment's
metrics from a traffic profile; and a real Prometheus scraping the simulator.

- A candidate answering 5xx to 30% of its requests is rolled back after `failureLimit`
  checks with one force_cancel_promotion; the old deployment serves throughout; the CR is
  ROLLED_BACK and not promoted again over three periods; a new source then promotes.
- A healthy candidate passes every step of a Gate (one pause and one resume per step) and
  becomes current.
- Too little traffic is inconclusive: a Gate holds, a Guard goes on; never a pass.
- `hold` pauses and resumes.
- A leader killed between the last failed check and the rollback: exactly one rollback.
- A metrics endpoint answering 5xx never lets a Gate step pass.
- A Prometheus check fails a candidate through a real Prometheus.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from testsupport.e2e.harness import TIME_SCALE, Stack, basetenmodel, status_of, unique_name
from testsupport.e2e.local import KeyStack
from testsupport.polling import wait_for
from testsupport.prometheus import Prometheus, ScrapeTarget

pytestmark = pytest.mark.e2e

ENV = "production"
# Each rolling step is held this long (simulated): 2 s of real time at the e2e scale.
STABILIZATION = 100
STEPS = 4  # of 25%
# Requests per simulated second at all of the environment's traffic: 25% of it over a
# 30 s window is about 35 requests, above MIN_REQUESTS.
RATE = 5.0
MIN_REQUESTS = 10
STEADY_PERIOD = 300 * TIME_SCALE  # real seconds


def analysis(mode: str = "Guard", **fields: Any) -> dict[str, Any]:
    return {
        "mode": mode,
        "interval": "30s",
        "failureLimit": 2,
        "minRequests": MIN_REQUESTS,
        "metrics": [
            {"name": "errors", "errorRatio": {"maxPercent": 2}},
            {"name": "p99", "latency": {"quantile": "p99", "maxMilliseconds": 2500}},
        ],
        **fields,
    }


class Rollout:
    """A model serving `good`; the CR asks for a candidate whose promotion Baseten steps
    (four steps of 25%), noting every deployment seen serving meanwhile."""

    def __init__(self, stack: Stack, prefix: str, stabilization: int = STABILIZATION) -> None:
        self.stack = stack
        self.stabilization = stabilization
        self.namespace = stack.new_namespace(prefix)
        self.name = unique_name(prefix)
        sim = stack.sim
        replicas = {"autoscaling_settings": {"min_replica": 1}}
        self.model_id, good = sim.seed_model_with_deployment(self.name, "good", **replicas)
        self.ids = {"good": good}
        for name in ("bad", "fix", "quiet"):
            seeded = sim.control("seed_deployment", model_id=self.model_id, name=name, **replicas)
            self.ids[name] = seeded["id"]
        self.settings = {
            "rolling_deploy": True,
            "rolling_deploy_config": {
                "max_surge_percent": 100 // STEPS,
                "stabilization_time_seconds": stabilization,
            },
        }
        sim.control(
            "seed_environment",
            model_id=self.model_id,
            name=ENV,
            current_deployment_id=good,
            promotion_settings=self.settings,
        )
        self.traffic("good", share_5xx=0.0)
        self.serving: set[str] = set()

    def traffic(self, deployment: str, share_5xx: float, rate: float = RATE) -> None:
        self.stack.sim.control(
            "set_traffic_profile",
            deployment_id=self.ids[deployment],
            requests_per_second=rate,
            share_5xx=share_5xx,
            latency_ms={"p50": 100, "p90": 200, "p95": 300, "p99": 400},
        )

    def ask_for(self, source: str, promotion: dict[str, Any], **annotations: str) -> None:
        spec = {
            "modelName": self.name,
            "sourceDeploymentName": source,
            "environment": {
                "name": ENV,
                "promotionSettings": {
                    "rollingDeploy": True,
                    "rollingDeployConfig": {
                        "maxSurgePercent": 100 // STEPS,
                        "stabilizationTimeSeconds": self.stabilization,
                    },
                },
            },
            "promotion": promotion,
        }
        obj = basetenmodel(self.name, self.namespace, spec)
        obj["metadata"]["annotations"] = annotations
        self.stack.kubectl.apply(obj)

    def wait(
        self, what: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = 90
    ) -> dict[str, Any]:
        def seen(status: dict[str, Any]) -> bool:
            env = self.stack.sim.environment(self.model_id, ENV)
            self.serving.add(env["current_deployment"]["name"])
            return bool(predicate(status))

        found = self.stack.wait_status(self.namespace, self.name, seen, what=what, timeout=timeout)
        return status_of(found)

    def analysis(self, status: dict[str, Any]) -> dict[str, Any]:
        return dict((status.get("promotion") or {}).get("analysis") or {})

    def signals(self) -> list[tuple[str, str]]:
        """The promotion writes Baseten answered for the model: (endpoint, deployment)."""
        names = {"promote", "pause_promotion", "resume_promotion", "force_cancel_promotion"}
        return [
            (entry["endpoint"], (entry["body"] or {}).get("deployment_id", ""))
            for entry in self.stack.sim.writes_for_model(self.model_id)
            if entry["endpoint"] in names and entry["status"] < 300
        ]

    def endpoints(self) -> list[str]:
        return [endpoint for endpoint, _ in self.signals()]

    def events(self) -> dict[str, str]:
        return {
            e["reason"]: e["message"] for e in self.stack.kubectl.events(self.namespace, self.name)
        }

    def current(self) -> str:
        return str(self.stack.sim.environment(self.model_id, ENV)["current_deployment"]["name"])


def test_a_bad_candidate_is_rolled_back_and_not_promoted_again(stack: Stack) -> None:
    rollout = Rollout(stack, "e2e-rollback")
    rollout.traffic("bad", share_5xx=0.3)
    rollout.ask_for("bad", {"analysis": analysis()})
    rolled = rollout.wait("rolled back", lambda s: s.get("deploymentStatus") == "ROLLED_BACK")
    assert rolled["message"].startswith("rolled back bad")
    assert rolled["message"].endswith(" in 2 consecutive checks")
    # About 30% of the window's requests (the window's edges make it a little less or more).
    assert re.search(r"errors (2[5-9]|3[0-5])(\.\d+)?% above 2%", rolled["message"])
    assert rolled["rolledBackDeploymentID"] == rollout.ids["bad"]
    assert rollout.endpoints() == ["promote", "force_cancel_promotion"]
    events = rollout.events()
    assert events["PromotionRolledBack"].startswith("Rolled back promotion of bad to production")
    assert "AnalysisCheckFailed" in events
    assert rollout.current() == "good"

    # Three steady periods: the candidate is never promoted again, the old one serves.
    def quiet_periods() -> bool:
        rollout.serving.add(rollout.current())
        return False

    with pytest.raises(AssertionError):
        wait_for(quiet_periods, timeout=3 * STEADY_PERIOD, describe=lambda: "three periods")
    assert rollout.endpoints() == ["promote", "force_cancel_promotion"]
    assert status_of(stack.get_bm(rollout.namespace, rollout.name))["deploymentStatus"] == (
        "ROLLED_BACK"
    )
    assert rollout.serving == {"good"}

    # A new source promotes normally, and is judged as it goes.
    rollout.traffic("fix", share_5xx=0.0)
    rollout.ask_for("fix", {"analysis": analysis()})
    done = rollout.wait("fix current", lambda s: s.get("activeDeploymentName") == "fix", 120)
    assert done["deploymentStatus"] == "ACTIVE"
    assert "rolledBackDeploymentID" not in done
    assert rollout.endpoints()[2:] == ["promote"]


def test_a_healthy_candidate_passes_every_gate_step(stack: Stack) -> None:
    rollout = Rollout(stack, "e2e-gate")
    rollout.traffic("fix", share_5xx=0.0)
    rollout.ask_for("fix", {"analysis": analysis("Gate")})
    done = rollout.wait("fix current", lambda s: s.get("activeDeploymentName") == "fix", 150)
    assert done["deploymentStatus"] == "ACTIVE"
    assert rollout.analysis(done)["phase"] == "Passed"
    assert rollout.endpoints() == ["promote"] + ["pause_promotion", "resume_promotion"] * STEPS
    assert "AnalysisPassed" in rollout.events()
    assert rollout.serving <= {"good", "fix"}


def test_low_traffic_holds_a_gate_and_never_passes(stack: Stack) -> None:
    rollout = Rollout(stack, "e2e-quiet")
    rollout.traffic("quiet", share_5xx=0.0, rate=0.1)
    rollout.ask_for("quiet", {"analysis": analysis("Gate")})
    held = rollout.wait(
        "holding after inconclusive checks",
        lambda s: rollout.analysis(s).get("checks", 0) >= 3
        and "until a check passes" in (s.get("message") or ""),
    )
    assert rollout.analysis(held)["phase"] == "Inconclusive"
    assert "fewer than minRequests 10" in held["message"]
    assert rollout.endpoints() == ["promote", "pause_promotion"]  # never resumed
    assert rollout.current() == "good"


def test_low_traffic_lets_a_guard_go_on_without_calling_it_a_pass(stack: Stack) -> None:
    rollout = Rollout(stack, "e2e-quiet-guard")
    rollout.traffic("quiet", share_5xx=0.0, rate=0.1)
    rollout.ask_for("quiet", {"analysis": analysis("Guard")})
    done = rollout.wait("quiet current", lambda s: s.get("activeDeploymentName") == "quiet", 120)
    state = rollout.analysis(done)
    assert state["checks"] >= 1
    assert state["phase"] == "Inconclusive"
    assert all(r["verdict"] == "Inconclusive" for r in state["results"])
    assert "AnalysisPassed" not in rollout.events()
    assert rollout.endpoints() == ["promote"]


def test_hold_pauses_and_resumes(stack: Stack) -> None:
    rollout = Rollout(stack, "e2e-hold")
    rollout.traffic("fix", share_5xx=0.0)
    rollout.ask_for("fix", {"hold": True})
    held = rollout.wait(
        "held", lambda s: "held at" in (s.get("message") or "") and s.get("promotion")
    )
    assert "(spec.promotion.hold)" in held["message"]
    wait_for(
        lambda: (stack.sim.environment(rollout.model_id, ENV)["in_progress_promotion"] or {}).get(
            "status"
        )
        == "PAUSED",
        timeout=30,
        describe=lambda: "Baseten pausing the promotion",
    )
    assert rollout.endpoints() == ["promote", "pause_promotion"]
    rollout.ask_for("fix", {"hold": False})
    rollout.wait("fix current", lambda s: s.get("activeDeploymentName") == "fix", 120)
    assert rollout.endpoints() == ["promote", "pause_promotion", "resume_promotion"]
    events = rollout.events()
    assert "PromotionHeld" in events and "PromotionResumed" in events


def test_a_metrics_endpoint_answering_5xx_never_lets_a_gate_step_pass(stack: Stack) -> None:
    rollout = Rollout(stack, "e2e-no-metrics")
    rollout.traffic("fix", share_5xx=0.0)
    stack.sim.control("inject_fault", endpoint="get_deployment_metrics", kind="5xx", count=100000)
    try:
        rollout.ask_for("fix", {"analysis": analysis("Gate")})
        held = rollout.wait(
            "holding on unreadable metrics",
            lambda s: rollout.analysis(s).get("checks", 0) >= 3
            and "until a check passes" in (s.get("message") or ""),
        )
        assert "the candidate's metrics could not be read: HTTP 5" in held["message"]
        assert rollout.endpoints() == ["promote", "pause_promotion"]
    finally:
        stack.sim.control("clear_faults")


def test_a_leader_killed_before_the_rollback_leads_to_exactly_one(key_stack: KeyStack) -> None:
    stack, kubectl = key_stack.stack, key_stack.cluster.kubectl
    leader = key_stack.start_operator("operator-a")
    first_holder = wait_for(kubectl.lease_holder, timeout=30)
    key_stack.start_operator("operator-b")
    # Steps of 50 s: the promotion still runs when the next leader takes over.
    rollout = Rollout(stack, "e2e-failover", stabilization=2500)
    rollout.traffic("bad", share_5xx=0.3)
    # The leader's rollbacks never reach Baseten: each connection is dropped unanswered.
    stack.sim.control("inject_fault", endpoint="force_cancel_promotion", kind="drop", count=1000)
    rollout.ask_for("bad", {"analysis": analysis()})
    rollout.wait(
        "the rollback decided, on record",
        lambda s: ((s.get("promotion") or {}).get("control") or {}).get("action") == "Rollback",
    )
    key_stack.processes.remove(leader.process)
    leader.process.kill()
    stack.sim.control("clear_faults")
    wait_for(lambda: kubectl.lease_holder() not in ("", first_holder), timeout=60)
    rollout.wait("rolled back", lambda s: s.get("deploymentStatus") == "ROLLED_BACK", 90)
    assert rollout.endpoints() == ["promote", "force_cancel_promotion"]
    assert rollout.current() == "good"


def test_a_prometheus_check_fails_a_candidate_through_a_real_prometheus(
    stack: Stack, tmp_path: Path
) -> None:
    rollout = Rollout(stack, "e2e-prometheus")
    rollout.traffic("bad", share_5xx=0.3)
    target = ScrapeTarget(f"{stack.sim.url}/metrics", ("Api-Key", stack.sim.api_key))
    with Prometheus([target], tmp_path, scrape_interval=0.5) as prometheus:
        series = 'baseten_inference_requests_total{{deployment_id="{{{{deploymentID}}}}"{}}}'
        errors = series.format(',status_code=~"5.."')
        every = series.format("")
        query = f"sum(irate({errors}[5s])) / sum(irate({every}[5s]))"
        metric = {
            "name": "server-errors",
            "prometheus": {"address": prometheus.url, "query": query, "max": 0.05},
        }
        rollout.ask_for("bad", {"analysis": analysis(metrics=[metric])})
        rolled = rollout.wait(
            "rolled back by Prometheus", lambda s: s.get("deploymentStatus") == "ROLLED_BACK"
        )
    # Prometheus' irate of the simulator's counters: the profile's 30% of 5xx, give or take
    # the scrape's rounding.
    found = re.search(
        r"server-errors ([0-9.]+) above 0.05 in 2 consecutive checks$", rolled["message"]
    )
    assert found is not None, rolled["message"]
    assert abs(float(found.group(1)) - 0.3) < 0.02, rolled["message"]
    assert rollout.endpoints() == ["promote", "force_cancel_promotion"]
    assert rollout.current() == "good"
