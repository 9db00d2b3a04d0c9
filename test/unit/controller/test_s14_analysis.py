"""Section 14: promotions that watch the candidate. On the fake clock: the analysis' checks,
rollback and pause on failure, the Gate's pause and resume at every step, the hold, and
what a new leader does with what a crashed one left on record."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.controller.shared.endings import ReconcileError
from baseten_operator.runtime.errors import Forbidden
from baseten_operator.runtime.metrics import REGISTRY
from testsupport.argocd import argo_health

INTERVAL = 60.0
ROLLED_BACK = "rolled back bad: errors 30% above 2% in 2 consecutive checks"


def analysis(**fields: Any) -> dict[str, Any]:
    return {
        "interval": "1m",
        "failureLimit": 2,
        "minRequests": 50,
        "metrics": [{"name": "errors", "errorRatio": {"maxPercent": 2}}],
        **fields,
    }


def spec(source: str = "bad", **promotion: Any) -> dict[str, Any]:
    return {
        "modelName": "my-llm",
        "sourceDeploymentName": source,
        "environment": {"name": "production", "promotionSettings": {"rollingDeploy": True}},
        "promotion": promotion or {"analysis": analysis()},
    }


class World:
    """Production serves `good`; the CR asks for `bad` and has promoted it: Baseten steps
    traffic to it."""

    def __init__(self, h: Any, **promotion: Any) -> None:
        self.h = h
        h.baseten.add_model()
        self.good = h.baseten.add_deployment(
            name="good", active_replica_count=3, environment="production"
        )
        self.bad = h.baseten.add_deployment(name="bad", id="bad-id", active_replica_count=1)
        self.fix = h.baseten.add_deployment(name="fix", id="fix-id", active_replica_count=1)
        h.baseten.add_environment(current=self.good, promotion={"rolling_deploy": True})
        h.create(spec(**promotion), status={"modelID": "m1"})
        h.run()
        assert h.baseten.called("promote")[0][2] == "bad-id"
        self.ramping(25)

    def ramping(self, percent: int, status: str = "RAMPING_UP") -> None:
        env = self.h.baseten.environments[("m1", "production")]
        self.h.baseten.environments[("m1", "production")] = env.model_copy(
            update={"candidate_deployment": self.bad}
        )
        self.h.baseten.set_phase(status, percent)

    def completes(self) -> None:
        """Baseten completes the promotion: the candidate is current."""
        env = self.h.baseten.environments[("m1", "production")]
        self.h.baseten.environments[("m1", "production")] = env.model_copy(
            update={
                "current_deployment": self.bad,
                "candidate_deployment": None,
                "in_progress_promotion": None,
            }
        )

    def serves(self, requests: float, errors: float = 0.0, p99: float | None = 0.2) -> None:
        self.h.baseten.traffic["bad-id"] = (requests, errors, p99)

    def after(self, seconds: float = INTERVAL) -> Any:
        self.h.clock.advance(seconds)
        return self.h.run()

    def analysis(self) -> dict[str, Any]:
        return dict(self.h.status()["promotion"]["analysis"])

    def signals(self) -> list[str]:
        names = ("pause_promotion", "resume_promotion", "force_cancel_promotion")
        return [name for name, _ in self.h.baseten.calls if name in names]


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_bad_candidate_is_rolled_back_after_failure_limit_checks(h) -> None:
    w = World(h)
    w.serves(1000, errors=300)
    before = sample("baseten_promotion_rollbacks_total", trigger="errorRatio")
    w.after()
    assert w.signals() == []  # one failed check: not yet
    assert w.analysis()["consecutiveFailures"] == 1
    assert h.event("AnalysisCheckFailed") == (
        "Warning",
        "Analysis check 1 of bad failed (1 of 2 in a row): errors 30% above 2%",
    )
    # Looked at again at the promotion poll, or when the next check is due if sooner.
    assert h.run().requeue_after == h.timing.poll
    h.clock.advance(45)
    assert h.run().requeue_after == pytest.approx(INTERVAL - 45)
    w.after(INTERVAL - 45)
    assert w.signals() == ["force_cancel_promotion"]
    assert h.word() == "ROLLED_BACK"
    assert h.message() == ROLLED_BACK
    status = h.status()
    assert status["rolledBackDeploymentID"] == "bad-id"
    assert "candidateDeploymentID" not in status
    assert w.analysis()["phase"] == "Failed"
    assert h.event("PromotionRolledBack") == (
        "Warning",
        "Rolled back promotion of bad to production: errors 30% above 2% in 2 consecutive "
        "checks",
    )
    assert sample("baseten_promotion_rollbacks_total", trigger="errorRatio") == before + 1
    # Baseten rolled it back at once (the fake as the real one): three periods later the
    # candidate has not been promoted again.
    for _ in range(3):
        result = w.after(h.steady_period())
        assert result.requeue_after == h.steady_period()
    assert len(h.baseten.called("promote")) == 1
    assert w.signals() == ["force_cancel_promotion"]
    assert h.word() == "ROLLED_BACK" and h.message() == ROLLED_BACK
    assert argo_health(h.obj()) == ("Degraded", ROLLED_BACK)


def test_a_new_source_is_promoted_normally_after_a_rollback(h) -> None:
    w = World(h)
    w.serves(1000, errors=300)
    w.after()
    w.after()
    assert h.word() == "ROLLED_BACK"
    h.edit(lambda o: o["spec"].__setitem__("sourceDeploymentName", "fix"))
    h.run()
    assert h.baseten.called("promote")[-1][2] == "fix-id"
    assert "rolledBackDeploymentID" not in h.status()


def test_a_new_reanalyze_value_promotes_the_candidate_again(h) -> None:
    w = World(h)
    w.serves(1000, errors=300)
    w.after()
    w.after()
    h.run()
    assert len(h.baseten.called("promote")) == 1
    h.edit(lambda o: o["metadata"].setdefault("annotations", {}).update(
        {"models.baseten.com/reanalyze": "1"}))  # fmt: skip
    h.run()
    assert len(h.baseten.called("promote")) == 2


def test_the_decision_and_the_count_are_on_record_before_the_rollback(h) -> None:
    w = World(h)
    w.serves(1000, errors=300)
    w.after()
    writes = len(h.kube.status_writes)
    w.after()
    intent = h.kube.status_writes[writes]
    assert intent["promotion"]["control"]["action"] == "Rollback"
    assert "acknowledgedTime" not in intent["promotion"]["control"]
    assert intent["promotion"]["analysis"]["consecutiveFailures"] == 2
    assert intent["promotion"]["analysis"]["phase"] == "Failed"


def test_a_new_leader_rolls_back_once_what_a_crashed_one_decided(h) -> None:
    """The leader wrote the decision and died before the call: the next one sends it."""
    w = World(h)
    w.serves(1000, errors=300)
    w.after()
    h.baseten.fail("force_cancel_promotion", BasetenAPIError(0, "connection reset"))
    with pytest.raises(ReconcileError):
        w.after()
    assert h.status()["promotion"]["control"]["action"] == "Rollback"
    h.run()  # the new leader, with the decision on record and no new check due
    assert w.signals() == ["force_cancel_promotion", "force_cancel_promotion"]
    assert h.word() == "ROLLED_BACK"
    h.run()
    assert len(w.signals()) == 2  # acknowledged: never again


def test_a_rollback_whose_answer_was_lost_is_not_promoted_again(h) -> None:
    """Baseten rolled back, but the pass died before saying so: what is on record (the
    decision) and what Baseten shows (no candidate) say it was rolled back."""
    w = World(h)
    w.serves(1000, errors=300)
    w.after()
    status = dict(h.status())
    w.after()
    lost = dict(h.kube.status_writes[-2])  # the intent, before the call
    h.edit(lambda o: o.__setitem__("status", {**status, **lost}))
    h.run()
    assert len(h.baseten.called("promote")) == 1
    assert h.word() == "ROLLED_BACK"
    assert h.status()["rolledBackDeploymentID"] == "bad-id"


def test_a_refused_rollback_is_an_error_retried_never_assumed_done(h) -> None:
    w = World(h)
    w.serves(1000, errors=300)
    w.after()
    h.baseten.fail("force_cancel_promotion", BasetenAPIError(400, "not a rolling promotion"))
    with pytest.raises(ReconcileError):
        w.after()
    assert h.message() == (
        "active: good (3 replicas) | failed to roll back promotion of bad to production: "
        "HTTP 400: not a rolling promotion"
    )
    assert "rolledBackDeploymentID" not in h.status()
    h.run()
    assert h.word() == "ROLLED_BACK"


def test_on_failure_pause_pauses_once_and_stalls(h) -> None:
    w = World(h, analysis=analysis(onFailure="Pause"))
    w.serves(1000, errors=300)
    w.after()
    result = w.after()
    assert w.signals() == ["pause_promotion"]
    assert result.requeue_after == h.steady_period()
    assert h.message() == (
        "active: good (3 replicas) | analysis failed, promotion of bad paused at 25% "
        "traffic: errors 30% above 2% in 2 consecutive checks"
    )
    assert h.status()["conditions"][3] == {**h.status()["conditions"][3], "status": "True"}
    w.after()
    assert w.signals() == ["pause_promotion"]


def test_low_traffic_is_inconclusive_in_guard_never_a_pass(h) -> None:
    w = World(h)
    w.serves(12)
    before = sample("baseten_analysis_checks_total", result="inconclusive")
    for _ in range(3):
        w.after()
    assert w.signals() == []
    state = w.analysis()
    assert state["phase"] == "Inconclusive" and state["checks"] == 3
    assert state["results"][0]["verdict"] == "Inconclusive"
    assert h.message().endswith(
        "; analysis: check 3: errors inconclusive: 12 requests in the window, fewer than "
        "minRequests 50"
    )
    assert sample("baseten_analysis_checks_total", result="inconclusive") == before + 3
    w.ramping(100, "RAMPING_DOWN")
    h.run()  # Guard goes on: Baseten steps on
    w.completes()
    h.run()
    assert h.word() == "ACTIVE"
    assert w.analysis()["phase"] == "Inconclusive"  # completed without evidence: no pass
    assert "AnalysisPassed" not in h.reasons()


def test_an_inconclusive_check_neither_counts_nor_resets_failures(h) -> None:
    w = World(h)
    w.serves(1000, errors=300)
    w.after()
    w.serves(5)
    w.after()
    assert w.analysis()["consecutiveFailures"] == 1
    w.serves(1000, errors=300)
    w.after()
    assert w.signals() == ["force_cancel_promotion"]


def test_a_healthy_candidate_passes_and_becomes_current(h) -> None:
    w = World(h)
    w.serves(1000, errors=1)
    w.after()
    assert w.analysis()["consecutiveFailures"] == 0
    assert h.message() == (
        "active: good (3 replicas) | promoting: bad (ACTIVE, 1 replicas, 25% traffic); "
        "analysis: check 1 passed"
    )
    w.completes()
    h.run()
    assert h.word() == "ACTIVE"
    assert w.analysis()["phase"] == "Passed"
    assert h.event("AnalysisPassed") == (
        "Normal",
        "Analysis of bad passed: promoted to production after 1 checks",
    )
    assert w.signals() == []


def test_gate_pauses_and_resumes_once_per_step(h) -> None:
    w = World(h, analysis=analysis(mode="Gate"))
    w.serves(1000, errors=1)
    for step in (25, 50, 75, 100):
        w.ramping(step)
        h.run()  # the step started: paused at its end
        w.ramping(step, "PAUSED")
        w.after()  # a check passes: resumed
    assert w.signals() == ["pause_promotion", "resume_promotion"] * 4


def test_gate_holds_while_checks_are_inconclusive(h) -> None:
    w = World(h, analysis=analysis(mode="Gate"))
    w.serves(10)
    h.run()
    w.ramping(25, "PAUSED")
    for _ in range(3):
        w.after()
    assert w.signals() == ["pause_promotion"]
    assert h.message() == (
        "active: good (3 replicas) | holding bad at 25% traffic until a check passes; "
        "analysis: check 3: errors inconclusive: 10 requests in the window, fewer than "
        "minRequests 50"
    )


def test_gate_never_passes_a_step_while_the_metrics_answer_errors(h) -> None:
    w = World(h, analysis=analysis(mode="Gate"))
    w.serves(1000)
    h.run()
    w.ramping(25, "PAUSED")
    h.baseten.fail("get_deployment_metrics", BasetenAPIError(503, "unavailable"), times=5)
    for _ in range(5):
        w.after()
    assert w.signals() == ["pause_promotion"]
    assert "the candidate's metrics could not be read: HTTP 503: unavailable" in h.message()
    w.after()  # the metrics answer again, and the check passes
    assert w.signals() == ["pause_promotion", "resume_promotion"]


def test_hold_pauses_and_false_resumes(h) -> None:
    w = World(h, hold=True)
    assert w.signals() == []  # RELEASING when promoted; now ramping: the hold pauses it
    result = h.run()
    assert w.signals() == ["pause_promotion"]
    assert result.requeue_after == h.timing.poll
    assert h.message() == (
        "active: good (3 replicas) | promotion of bad held at 25% traffic " "(spec.promotion.hold)"
    )
    assert h.event("PromotionHeld") == (
        "Normal",
        "Held promotion of bad to production at 25% traffic: spec.promotion.hold",
    )
    h.run()
    assert w.signals() == ["pause_promotion"]
    h.edit(lambda o: o["spec"]["promotion"].__setitem__("hold", False))
    h.run()
    assert w.signals() == ["pause_promotion", "resume_promotion"]
    assert h.event("PromotionResumed") == (
        "Normal",
        "Resumed promotion of bad to production at 25% traffic",
    )


def test_a_promotion_this_cr_did_not_start_is_not_touched(h) -> None:
    """Started in the UI: the CR records the candidate, but holds and judges nothing."""
    h.baseten.add_model()
    good = h.baseten.add_deployment(name="good", environment="production")
    bad = h.baseten.add_deployment(name="bad", id="bad-id")
    h.baseten.add_environment(
        current=good, candidate=bad, promotion={"rolling_deploy": True},
        in_progress={"status": "RAMPING_UP", "percent_traffic_to_new_version": 25},
    )  # fmt: skip
    h.baseten.traffic["bad-id"] = (1000, 300, 0.2)
    h.create(spec(hold=True, analysis=analysis()), status={"modelID": "m1"})
    for _ in range(4):
        h.clock.advance(INTERVAL)
        h.run()
    assert h.baseten.writes == []
    assert h.baseten.called("get_deployment_metrics") == []


def test_observe_reports_what_it_would_do_and_signals_nothing(h) -> None:
    w = World(h)
    h.edit(lambda o: o["spec"].__setitem__("mode", "Observe"))
    w.serves(1000, errors=300)
    w.after()
    w.after()
    assert w.signals() == []
    assert h.message().endswith(
        "; would roll back bad: errors 30% above 2% in 2 consecutive checks"
    )


def test_pause_mode_does_nothing(h) -> None:
    w = World(h)
    h.edit(lambda o: o["spec"].__setitem__("mode", "Pause"))
    w.serves(1000, errors=300)
    w.after()
    w.after()
    assert w.signals() == []
    assert h.baseten.called("get_deployment_metrics") == []


class FakePrometheus:
    def __init__(self, value: float | None) -> None:
        self.value = value
        self.asked: list[tuple[str, str, str | None]] = []

    def query(
        self, address: str, query: str, /, *, token: str | None, ca_pem: str | None
    ) -> float | None:
        self.asked.append((address, query, token))
        return self.value


PROMETHEUS = {
    "name": "business",
    "prometheus": {
        "address": "http://prometheus.monitoring:9090",
        "query": 'sum(rate(x{deployment="{{deploymentID}}",env="{{environment}}"}[5m]))',
        "max": 0.05,
        "bearerTokenSecretRef": {"name": "prom-token", "key": "token"},
    },
}


class Secrets:
    def __init__(self, data: dict[str, str] | None, forbidden: bool = False) -> None:
        self.data = data
        self.forbidden = forbidden

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        if self.forbidden:
            raise Forbidden(403, "Forbidden", "secrets is forbidden")
        return {"data": self.data} if self.data is not None else None


def prometheus_world(h, value: float | None, secrets: Secrets) -> tuple[World, FakePrometheus]:
    prometheus = FakePrometheus(value)
    h.prometheus, h.secrets_source = prometheus, secrets
    h.reconciler = h.make_reconciler()
    return World(h, analysis=analysis(metrics=[PROMETHEUS])), prometheus


def test_a_prometheus_check_fails_the_candidate_with_the_query_templated(h) -> None:
    w, prometheus = prometheus_world(h, 0.3, Secrets({"token": "dG9rZW4="}))
    w.serves(1000)
    w.after()
    w.after()
    assert w.signals() == ["force_cancel_promotion"]
    assert h.message() == "rolled back bad: business 0.3 above 0.05 in 2 consecutive checks"
    address, query, token = prometheus.asked[0]
    assert query == 'sum(rate(x{deployment="bad-id",env="production"}[5m]))'
    assert token == "token"


@pytest.mark.parametrize(
    ("value", "secrets", "why"),
    [
        (None, Secrets({"token": "dG9rZW4="}), "the query has no result"),
        (0.01, Secrets(None), "Secret default/prom-token not found"),
        (0.01, Secrets({"other": "eA=="}), "Secret default/prom-token has no non-empty key"),
        (0.01, Secrets({}, forbidden=True), "cannot read Secret default/prom-token"),
    ],
)
def test_a_prometheus_check_that_cannot_be_made_is_inconclusive(h, value, secrets, why) -> None:
    w, _ = prometheus_world(h, value, secrets)
    w.serves(1000)
    w.after()
    result = w.analysis()["results"][0]
    assert result["verdict"] == "Inconclusive"
    assert why in result["message"]
    assert w.signals() == []
