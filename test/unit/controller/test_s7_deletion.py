"""Section 7: deletion per deletionPolicy."""

from __future__ import annotations

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import AutoscalingSettingsV1


def deleting(h, *, policy: str = "Delete", mode: str = "Reconcile", model_id: str | None = "m1"):
    h.create(
        deletionPolicy=policy,
        mode=mode,
        status={"modelID": model_id} if model_id else None,
    )
    h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))


def gone(h) -> bool:
    return ("default", "my-model") not in h.kube.objects


@pytest.mark.parametrize(
    ("policy", "mode", "model_id"),
    [
        ("Retain", "Reconcile", "m1"),
        ("Delete", "Observe", "m1"),
        ("Delete", "Pause", "m1"),
        ("DeleteWithGuardrails", "Pause", "m1"),
        ("Delete", "Reconcile", None),
    ],
)
def test_retained_models_are_left_alone(h, policy, mode, model_id) -> None:
    h.baseten.add_model()
    deleting(h, policy=policy, mode=mode, model_id=model_id)
    h.run()
    assert h.baseten.calls == []
    assert gone(h)


def test_paused_field_retains(h) -> None:
    h.baseten.add_model()
    deleting(h)
    h.edit(lambda o: o["spec"].__setitem__("paused", True))
    h.run()
    assert h.baseten.calls == []
    assert gone(h)


def test_no_finalizer_nothing_to_do(h) -> None:
    h.create(finalizer=False, deletionPolicy="Delete", status={"modelID": "m1"})
    h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))
    h.run()
    assert h.baseten.calls == []
    assert h.kube.patches == []


def test_delete(h) -> None:
    h.baseten.add_model()
    deleting(h)
    h.run()
    assert h.baseten.called("delete_model") == [("m1",)]
    assert h.event("ModelDeleted") == ("Normal", "Deleted Baseten model m1")
    assert h.kube.status_writes[-1]["deploymentStatus"] == "DELETING"
    assert h.kube.status_writes[-1]["message"] == "deleting Baseten model m1"
    assert gone(h)


def test_delete_404_is_success(h) -> None:
    deleting(h)
    h.run()
    assert h.event("ModelDeleted") == ("Normal", "Baseten model m1 already deleted (404)")
    assert gone(h)


def test_delete_failure(h) -> None:
    h.baseten.add_model()
    deleting(h)
    h.baseten.fail("delete_model", BasetenAPIError(500, "boom"))
    assert h.run().requeue_after == 30
    assert h.word() == "DELETE_FAILED"
    assert h.message() == "failed to delete Baseten model m1: HTTP 500: boom"
    assert h.event("ModelDeleteFailed") == (
        "Warning",
        "Failed to delete Baseten model m1: HTTP 500: boom",
    )
    assert not gone(h)


def test_guardrails_block_while_any_environment_serves(h) -> None:
    h.baseten.add_model()
    serving = h.baseten.add_deployment(name="a", active_replica_count=4)
    idle = h.baseten.add_deployment(name="b", active_replica_count=0)
    h.baseten.add_environment(name="prod", current=serving, autoscaling={"min_replica": 2})
    h.baseten.add_environment(name="staging", current=idle, autoscaling={"min_replica": 0})
    h.baseten.add_environment(
        name="dev",
        candidate=serving.model_copy(update={"active_replica_count": 1}),
        autoscaling={"min_replica": 0},
    )
    deleting(h, policy="DeleteWithGuardrails")
    assert h.run().requeue_after == 30
    message = (
        "deletion blocked: dev (min=0, active=1), prod (min=2, active=4) must be scaled to "
        "min_replicas: 0 and idle before model can be deleted"
    )
    assert h.word() == "DELETE_BLOCKED"
    assert h.message() == message
    assert h.event("ModelDeleteBlocked") == ("Warning", message)
    assert h.baseten.called("delete_model") == []
    h.run()
    assert h.events == []  # only when entering
    assert h.writes == 0
    for env in h.baseten.environments.values():
        env.current_deployment = env.candidate_deployment = None
        env.autoscaling_settings = AutoscalingSettingsV1(min_replica=0)
    h.run()
    assert h.baseten.called("delete_model") == [("m1",)]
    assert gone(h)


def test_guardrails_list_failure(h) -> None:
    h.baseten.add_model()
    deleting(h, policy="DeleteWithGuardrails")
    h.baseten.fail("list_environments", BasetenAPIError(503, "down"))
    assert h.run().requeue_after == 30
    assert h.word() == "DELETE_BLOCKED"
    assert h.message() == (
        "deletion blocked: failed to list environments for model m1: HTTP 503: down"
    )


def test_guardrails_model_already_gone(h) -> None:
    deleting(h, policy="DeleteWithGuardrails")
    h.run()
    assert h.event("ModelDeleted")[1] == "Baseten model m1 already deleted (404)"
    assert gone(h)


def test_finalizer_removal_on_vanished_object_is_success(h) -> None:
    from baseten_operator.controller.basetenmodel.deletion import set_finalizer

    obj = h.create()
    h.kube.objects.clear()
    set_finalizer(h.kube, obj, present=False)  # no exception
