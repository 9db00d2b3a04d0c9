"""Section 2: status words, conditions, retry bookkeeping, no-op passes."""

from __future__ import annotations

import pytest

STEADY = "active: src (3 replicas, min:1 max:5) in production environment"


def conditions(h) -> dict[str, dict]:
    return {c["type"]: c for c in h.status()["conditions"]}


def test_active_is_ready_not_progressing(h) -> None:
    h.steady_world()
    h.create()
    h.run()
    ready, progressing = conditions(h)["Ready"], conditions(h)["Progressing"]
    assert ready == {
        "type": "Ready",
        "status": "True",
        "observedGeneration": 1,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "ACTIVE",
        "message": STEADY,
    }
    assert progressing["status"] == "False"
    assert progressing["reason"] == "ACTIVE"
    assert h.status()["observedGeneration"] == 1


@pytest.mark.parametrize(
    ("word", "ready", "progressing"),
    [
        ("ACTIVE", "True", "False"),
        ("SCALED_TO_ZERO", "True", "False"),
        *[
            (w, "False", "True")
            for w in (
                "PROMOTING",
                "PROMOTING_DEPLOYMENT",
                "PENDING",
                "DELETING",
                "ACTIVATING",
                "BUILDING",
                "DEPLOYING",
                "LOADING_MODEL",
                "WAKING_UP",
                "UPDATING",
            )
        ],  # fmt: skip
        *[
            (w, "False", "False")
            for w in (
                "FAILED",
                "PAUSED",
                "DELETE_FAILED",
                "DELETE_BLOCKED",
                "BUILD_STOPPED",
                "UNHEALTHY",
                "INACTIVE",
                "DEPLOY_FAILED",
                "BUILD_FAILED",
            )
        ],  # fmt: skip
    ],
)
def test_condition_table(h, word: str, ready: str, progressing: str) -> None:
    from baseten_operator.api.types import BasetenModelStatus
    from baseten_operator.controller.basetenmodel.status import with_conditions

    status = BasetenModelStatus(deployment_status=word, message="m")
    rendered = with_conditions(status, 7, "2026-01-01T00:00:00Z", stalled=False)
    by_type = {c.type: c for c in rendered.conditions or []}
    assert by_type["Ready"].status == ready
    assert by_type["Progressing"].status == progressing
    # Not stalled: whatever is not Ready goes on by itself.
    reconciling = "True" if ready == "False" else "False"
    assert (by_type["Reconciling"].status, by_type["Stalled"].status) == (reconciling, "False")
    for condition in by_type.values():
        assert (condition.reason, condition.message) == (word, "m")
        assert condition.observed_generation == 7


@pytest.mark.parametrize("word", ["FAILED", "CONFLICT", "BUILD_STOPPED", "PAUSED", "ACTIVE"])
def test_a_stalled_pass_is_stalled_and_not_reconciling(word: str) -> None:
    from baseten_operator.api.types import BasetenModelStatus
    from baseten_operator.controller.basetenmodel.status import with_conditions

    status = BasetenModelStatus(deployment_status=word, message="m")
    rendered = with_conditions(status, 7, "2026-01-01T00:00:00Z", stalled=True)
    by_type = {c.type: (c.status, c.reason, c.message) for c in rendered.conditions or []}
    assert by_type["Stalled"] == ("True", word, "m")
    assert by_type["Reconciling"] == ("False", word, "m")


@pytest.mark.parametrize("word", [None, "", "BUILD-FAILED", "failed: 500"])
def test_a_word_that_is_no_condition_reason_is_unknown(word: str | None) -> None:
    # metav1.Condition's reason pattern: the API server would refuse the whole status.
    from baseten_operator.api.types import BasetenModelStatus
    from baseten_operator.controller.basetenmodel.status import with_conditions

    status = BasetenModelStatus(deployment_status=word)
    rendered = with_conditions(status, 1, "2026-01-01T00:00:00Z", stalled=False)
    assert {c.reason for c in rendered.conditions or []} == {"Unknown"}
    assert {c.message for c in rendered.conditions or []} == {""}


def test_second_identical_pass_writes_nothing_and_emits_nothing(h) -> None:
    h.steady_world()
    h.create()
    h.run()
    assert h.writes == 1
    h.clock.advance(300)
    h.run()
    assert h.writes == 0
    assert h.events == []


def test_last_transition_time_changes_only_on_flip(h) -> None:
    current = h.steady_world()
    h.create()
    h.run()
    first = conditions(h)["Ready"]["lastTransitionTime"]
    h.clock.advance(60)
    h.baseten.environments[("m1", "production")].current_deployment = current.model_copy(
        update={"active_replica_count": 4}
    )
    h.run()
    assert h.writes == 1
    assert conditions(h)["Ready"]["lastTransitionTime"] == first
    assert conditions(h)["Ready"]["message"].startswith("active: src (4 replicas")
    h.clock.advance(60)
    h.baseten.environments[("m1", "production")].current_deployment = current.model_copy(
        update={"status": "UNHEALTHY"}
    )
    h.run()
    assert conditions(h)["Ready"]["status"] == "False"
    assert conditions(h)["Ready"]["lastTransitionTime"] == "2026-01-01T00:02:00Z"
    assert conditions(h)["Progressing"]["lastTransitionTime"] == first


def test_active_clears_retry_bookkeeping(h) -> None:
    h.steady_world()
    h.create(
        status={
            "modelID": "m1",
            "firstDeploymentFailureTime": "2025-12-31T23:00:00Z",
            "deploymentRetryCount": 3,
            "nextRetryTime": "2026-01-01T00:10:00Z",
        }
    )
    h.run()
    status = h.status()
    for key in ("firstDeploymentFailureTime", "deploymentRetryCount", "nextRetryTime"):
        assert key not in status


def test_generation_change_alone_is_written(h) -> None:
    h.steady_world()
    h.create()
    h.run()
    h.edit(lambda o: o["metadata"].__setitem__("generation", 2))
    h.run()
    assert h.writes == 1
    assert h.status()["observedGeneration"] == 2
    assert conditions(h)["Ready"]["observedGeneration"] == 2


def test_conflict_on_status_write_rereads_and_reapplies(h) -> None:
    h.steady_world()
    h.create()
    h.kube.conflicts = 1
    h.run()
    assert h.writes == 1
    assert h.word() == "ACTIVE"
    assert h.message() == STEADY


def test_conflict_keeps_fields_this_pass_did_not_change(h) -> None:
    h.steady_world()
    h.create(status={"modelID": "m1"})
    # Someone else (an old leader) wrote a field meanwhile: our cached copy is stale.
    stored = h.kube.objects[("default", "my-model")]
    h.reconciler._deps.models = type(  # a cache that still serves the old version
        "Stale", (), {"get": staticmethod(lambda ns, name, old=dict(stored): old)}
    )()
    h.kube.put({**stored, "status": {"modelID": "m1", "lastCleanupTime": "2026-01-01T00:00:00Z"}})
    h.run()
    assert h.status()["lastCleanupTime"] == "2026-01-01T00:00:00Z"
    assert h.word() == "ACTIVE"
