"""Section 3 step 8, its last part: the spec no longer asks for the candidate this CR is
promoting (a revert, a forward fix), so the pass cancels that promotion first."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import EnvironmentV1
from baseten_operator.runtime.controller import Result
from baseten_operator.runtime.metrics import REGISTRY

AP = "active: good (3 replicas) | "
RAMPING = {"status": "RAMPING_UP", "percent_traffic_to_new_version": 30}
CANCELLED = "Cancelled promotion of bad to production: the spec now asks for {source}"


def ramping_bad(h, *, ours: bool = True, in_progress: dict[str, Any] | None = None, **status):
    """Production serves `good` and ramps `bad` up; the CR's spec asks for `good` again.

    `ours`: the CR recorded `bad` as its candidate (it promoted it)."""
    h.baseten.add_model()
    good = h.baseten.add_deployment(name="good", active_replica_count=3, environment="production")
    bad = h.baseten.add_deployment(name="bad", id="bad-id", active_replica_count=1)
    h.baseten.add_environment(
        current=good,
        candidate=bad,
        in_progress=RAMPING if in_progress is None else in_progress,
        autoscaling={"min_replica": 1, "max_replica": 5},
    )
    recorded = {"candidateDeploymentID": "bad-id", "candidateDeploymentName": "bad"} if ours else {}
    h.create(sourceDeploymentName="good", status={"modelID": "m1", **recorded, **status})
    return good, bad


def end_ramp_down(h) -> None:
    """Baseten finished moving the traffic back: the environment promotes nothing."""
    env = h.baseten.environments[("m1", "production")]
    h.baseten.environments[("m1", "production")] = env.model_copy(
        update={"candidate_deployment": None, "in_progress_promotion": None}
    )


def set_phase(h, phase: str) -> None:
    """Baseten's promotion moves to `phase`, the candidate and its traffic unchanged."""
    env = h.baseten.environments[("m1", "production")]
    progress = env.in_progress_promotion.model_copy(update={"status": phase})
    h.baseten.environments[("m1", "production")] = env.model_copy(
        update={"in_progress_promotion": progress}
    )


def cancellations(result: str) -> float:
    return REGISTRY.get_sample_value("baseten_promotions_cancelled_total", {"result": result}) or 0


def test_a_revert_cancels_the_promotion_and_stays_on_the_deployment_serving(h) -> None:
    ramping_bad(h)
    before = cancellations("CANCELED")
    assert h.run().requeue_after == h.steady_period()
    assert h.baseten.called("cancel_promotion") == [("m1", "production")]
    assert h.baseten.called("promote") == []
    assert h.word() == "ACTIVE"
    assert h.message() == "active: good (3 replicas, min:1 max:5) in production environment"
    assert h.event("PromotionCancelled") == ("Normal", CANCELLED.format(source="good"))
    # `good` served all along: no DeploymentActive, and `bad` was never reported active.
    assert "DeploymentActive" not in h.reasons()
    assert h.status()["activeDeploymentName"] == "good"
    for key in ("candidateDeploymentID", "candidateDeploymentName", "cancellingDeploymentID"):
        assert key not in h.status()
    assert "promotion" not in h.status()
    assert cancellations("CANCELED") == before + 1


def test_the_intent_is_on_record_before_the_cancel(h) -> None:
    ramping_bad(h)
    h.run()
    intent = h.kube.status_writes[0]
    assert intent["deploymentStatus"] == "PROMOTING"
    assert intent["message"] == (
        f"{AP}cancelling promotion of bad to production: the spec now asks for good"
    )
    assert intent["cancellingDeploymentID"] == "bad-id"


def test_a_forward_fix_cancels_then_promotes_the_fix_in_the_same_pass(h) -> None:
    ramping_bad(h)
    fix = h.baseten.add_deployment(name="fix")
    h.edit(lambda o: o["spec"].__setitem__("sourceDeploymentName", "fix"))
    h.run()
    assert [name for name, _ in h.baseten.writes] == ["cancel_promotion", "promote"]
    assert h.baseten.called("promote")[0][2] == fix.id
    assert h.reasons() == ["PromotionCancelled", "DeploymentPromoted"]
    assert h.event("PromotionCancelled")[1] == CANCELLED.format(source="fix")
    assert h.word() == "PROMOTING"
    assert h.status()["candidateDeploymentName"] == "fix"


def test_a_ramp_down_holds_everything_else_until_the_traffic_is_back(h) -> None:
    ramping_bad(h)
    h.baseten.add_deployment(name="fix")
    h.edit(lambda o: o["spec"].__setitem__("sourceDeploymentName", "fix"))
    h.baseten.cancel_answer = "RAMPING_DOWN"
    before = cancellations("RAMPING_DOWN")
    assert h.run().requeue_after == 30
    ramping_down = (
        f"{AP}promotion of bad to production cancelled, ramping down (30% traffic); "
        "the spec now asks for fix"
    )
    assert h.word() == "PROMOTING"
    assert h.message() == ramping_down
    assert h.event("PromotionCancelled")[1] == CANCELLED.format(source="fix")
    assert h.status()["cancellingDeploymentID"] == "bad-id"
    # The phase Baseten answered, not the one read before the call.
    assert h.status()["promotion"] == {"phase": "RAMPING_DOWN", "trafficPercent": 30}
    assert cancellations("RAMPING_DOWN") == before + 1

    # The next passes see Baseten ramping down: no second cancel, nothing promoted.
    assert h.run().requeue_after == 30
    assert h.status()["promotion"] == {"phase": "RAMPING_DOWN", "trafficPercent": 30}
    assert h.message() == ramping_down
    assert h.events == []
    assert len(h.baseten.called("cancel_promotion")) == 1
    assert h.baseten.called("promote") == []

    end_ramp_down(h)
    h.run()
    assert len(h.baseten.called("cancel_promotion")) == 1
    assert len(h.baseten.called("promote")) == 1
    assert "cancellingDeploymentID" not in h.status()
    assert h.status()["candidateDeploymentName"] == "fix"


def test_a_revert_after_a_ramp_down_is_steady_without_claiming_a_new_active(h) -> None:
    ramping_bad(h)
    h.baseten.cancel_answer = "RAMPING_DOWN"
    h.run()
    end_ramp_down(h)
    h.run()
    assert h.word() == "ACTIVE"
    assert h.reasons() == []
    for key in ("candidateDeploymentID", "cancellingDeploymentID", "promotion"):
        assert key not in h.status()


def test_a_promotion_the_cr_did_not_start_is_never_cancelled(h) -> None:
    # Started in the UI, by CI or by another CR: not recorded as this CR's candidate.
    ramping_bad(h, ours=False)
    h.run()
    assert h.baseten.writes == []
    assert h.word() == "ACTIVE"
    h.baseten.add_deployment(name="fix")
    h.edit(lambda o: o["spec"].__setitem__("sourceDeploymentName", "fix"))
    h.run()
    assert h.baseten.writes == []
    assert h.reasons() == ["PromotionBlocked"]


def test_a_candidate_the_spec_still_asks_for_is_not_cancelled(h) -> None:
    ramping_bad(h)
    h.edit(lambda o: o["spec"].__setitem__("sourceDeploymentName", "bad"))
    h.run()
    assert h.baseten.writes == []
    assert h.message() == f"{AP}promoting: bad (ACTIVE, 1 replicas, 30% traffic)"


def test_a_failed_cancel_is_an_error_retried_like_any_failed_write(h) -> None:
    ramping_bad(h)
    h.baseten.fail("cancel_promotion", BasetenAPIError(503, "try later"))
    with pytest.raises(Exception, match="failed to cancel promotion of bad"):
        h.run()
    assert h.word() == "FAILED"
    assert (
        h.message() == f"{AP}failed to cancel promotion of bad to production: HTTP 503: try later"
    )
    assert h.event("PromotionCancelFailed") == (
        "Warning",
        "Failed to cancel promotion of bad to production: HTTP 503: try later",
    )
    assert h.baseten.called("promote") == []
    # The intent stays; the retry cancels, once.
    assert h.status()["cancellingDeploymentID"] == "bad-id"
    h.run()
    assert len(h.baseten.called("cancel_promotion")) == 2
    assert h.word() == "ACTIVE"


def test_a_cancel_intent_that_conflicts_stops_before_the_cancel(h) -> None:
    ramping_bad(h)
    # The spec changed again since this pass read it (to `bad`, perhaps): no cancel on
    # stale data.
    h.kube.conflicts = 1
    assert h.run() == Result(requeue=True)
    assert h.baseten.writes == []


def test_a_new_leader_inheriting_an_intent_that_never_reached_baseten_cancels_once(h) -> None:
    ramping_bad(h, cancellingDeploymentID="bad-id")
    h.run()
    assert len(h.baseten.called("cancel_promotion")) == 1
    assert h.word() == "ACTIVE"


def test_a_new_leader_inheriting_a_cancel_that_is_ramping_down_does_not_cancel_again(h) -> None:
    ramping_bad(
        h,
        in_progress={"status": "RAMPING_DOWN", "percent_traffic_to_new_version": 20},
        cancellingDeploymentID="bad-id",
    )
    assert h.run().requeue_after == 30
    assert h.baseten.writes == []
    assert h.message() == (
        f"{AP}promotion of bad to production cancelled, ramping down (20% traffic); "
        "the spec now asks for good"
    )


def test_a_promotion_completed_before_the_cancel_landed_is_said_and_the_source_promoted(h) -> None:
    h.baseten.add_model()
    h.baseten.add_deployment(name="good")
    bad = h.baseten.add_deployment(name="bad", id="bad-id", active_replica_count=1)
    h.baseten.add_environment(current=bad)
    h.create(
        sourceDeploymentName="good",
        status={
            "modelID": "m1",
            "candidateDeploymentID": "bad-id",
            "candidateDeploymentName": "bad",
            "cancellingDeploymentID": "bad-id",
        },
    )
    h.run()
    assert h.event("PromotionCancelFailed") == (
        "Warning",
        "Promotion of bad to production completed before its cancellation landed; "
        "promoting good",
    )
    assert h.baseten.called("cancel_promotion") == []
    assert len(h.baseten.called("promote")) == 1
    assert "cancellingDeploymentID" not in h.status()


def test_an_answer_without_the_current_deployment_concludes_nothing_about_the_cancel(h) -> None:
    # The promotion completed before the cancel landed, but Baseten's answer leaves out
    # current_deployment: the cancellation stays on record until a full answer says so.
    h.baseten.add_model()
    h.baseten.add_deployment(name="good")
    bad = h.baseten.add_deployment(name="bad", id="bad-id", active_replica_count=1)
    h.baseten.environments[("m1", "production")] = EnvironmentV1.model_validate(
        {"name": "production", "model_id": "m1"}
    )
    recorded = {"candidateDeploymentID": "bad-id", "candidateDeploymentName": "bad"}
    h.create(
        sourceDeploymentName="good",
        status={"modelID": "m1", **recorded, "cancellingDeploymentID": "bad-id"},
    )
    h.run()
    assert h.word() == "PENDING"
    assert h.baseten.writes == []
    assert h.status()["cancellingDeploymentID"] == "bad-id"
    assert h.status()["candidateDeploymentID"] == "bad-id"
    h.baseten.add_environment(current=bad)
    h.run()
    landed = "Promotion of bad to production completed before its cancellation landed"
    assert h.event("PromotionCancelFailed")[1] == f"{landed}; promoting good"
    assert len(h.baseten.called("promote")) == 1


def test_a_completed_promotion_the_spec_asks_for_again_is_simply_steady(h) -> None:
    h.baseten.add_model()
    bad = h.baseten.add_deployment(name="bad", id="bad-id", active_replica_count=1)
    h.baseten.add_environment(current=bad)
    h.create(
        sourceDeploymentName="bad", status={"modelID": "m1", "cancellingDeploymentID": "bad-id"}
    )
    h.run()
    assert h.word() == "ACTIVE"
    assert "PromotionCancelFailed" not in h.reasons()
    assert h.baseten.writes == []
    assert "cancellingDeploymentID" not in h.status()


def test_the_spec_asking_for_the_candidate_again_forgets_the_cancellation(h) -> None:
    ramping_bad(h, cancellingDeploymentID="bad-id")
    h.edit(lambda o: o["spec"].__setitem__("sourceDeploymentName", "bad"))
    h.run()
    assert h.baseten.writes == []
    assert "cancellingDeploymentID" not in h.status()
    assert h.status()["candidateDeploymentID"] == "bad-id"


def test_observe_says_it_would_cancel_and_writes_nothing(h) -> None:
    ramping_bad(h)
    h.edit(lambda o: o["spec"].__setitem__("mode", "Observe"))
    h.run()
    assert h.baseten.writes == []
    assert h.message() == (
        "active: good (3 replicas, min:1 max:5) in production environment | drift: "
        "would cancel the promotion of bad; awaiting reconciliation"
    )
    # Still known as this CR's promotion when the CR goes back to Reconcile.
    assert h.status()["candidateDeploymentID"] == "bad-id"
    h.edit(lambda o: o["spec"].__setitem__("mode", "Reconcile"))
    h.run()
    assert h.baseten.called("cancel_promotion") == [("m1", "production")]


def test_pause_makes_no_call(h) -> None:
    ramping_bad(h)
    h.edit(lambda o: o["spec"].__setitem__("mode", "Pause"))
    h.run()
    assert h.baseten.calls == []
    assert h.word() == "PAUSED"


# --- each promotion phase, decided (docs/contract.md 3.8) ---------------------------------


@pytest.mark.parametrize("phase", ["CANCELED", "FAILED"])
@pytest.mark.parametrize("intent", [{}, {"cancellingDeploymentID": "bad-id"}])
def test_a_promotion_baseten_ended_is_not_cancelled_and_the_pass_goes_on(h, phase, intent) -> None:
    """CANCELED and FAILED: the candidate will not become current; nothing to cancel."""
    ramping_bad(h, in_progress={"status": phase, "percent_traffic_to_new_version": 0}, **intent)
    assert h.run().requeue_after == h.steady_period()
    assert h.baseten.writes == []
    assert h.word() == "ACTIVE"
    for key in ("candidateDeploymentID", "cancellingDeploymentID", "cancelAcknowledgedTime"):
        assert key not in h.status()


def test_a_paused_promotion_the_spec_no_longer_wants_is_cancelled_once(h) -> None:
    ramping_bad(h, in_progress={"status": "PAUSED", "percent_traffic_to_new_version": 30})
    h.baseten.cancel_answer = "RAMPING_DOWN"
    assert h.run().requeue_after == 30
    assert len(h.baseten.called("cancel_promotion")) == 1
    assert h.status()["cancelAcknowledgedTime"] == "2026-01-01T00:00:00Z"
    set_phase(h, "PAUSED")  # Baseten has not begun moving the traffic back yet
    for _ in range(3):
        assert h.run().requeue_after == 30
    assert len(h.baseten.called("cancel_promotion")) == 1
    assert h.message() == (
        f"{AP}promotion of bad to production cancelled, waiting for Baseten to stop it "
        "(phase PAUSED); the spec now asks for good"
    )


@pytest.mark.parametrize("phase", ["RAMPING_UP", "PAUSED", "RELEASING"])
def test_an_acknowledged_cancel_is_never_sent_again_whatever_the_phase(h, phase) -> None:
    """A new leader inheriting a cancel Baseten took waits for it, in any phase."""
    ramping_bad(
        h,
        in_progress={"status": phase, "percent_traffic_to_new_version": 10},
        cancellingDeploymentID="bad-id",
        cancelAcknowledgedTime="2026-01-01T00:00:00Z",
    )
    assert h.run().requeue_after == 30
    assert h.baseten.writes == []
    assert h.word() == "PROMOTING"


def test_a_refused_cancel_is_retried_and_an_acknowledged_one_is_not(h) -> None:
    ramping_bad(h)
    h.baseten.cancel_answer = "RAMPING_DOWN"
    h.baseten.fail("cancel_promotion", BasetenAPIError(409, "busy"))
    with pytest.raises(Exception, match="failed to cancel promotion of bad"):
        h.run()
    assert "cancelAcknowledgedTime" not in h.status()
    assert h.run().requeue_after == 30  # retried: Baseten takes it this time
    assert h.status()["cancelAcknowledgedTime"] == "2026-01-01T00:00:00Z"
    h.run()
    assert len(h.baseten.called("cancel_promotion")) == 2
