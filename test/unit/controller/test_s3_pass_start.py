"""Section 3 steps 1 to 6 and 15: gone objects, pause, finalizer, model ID."""

from __future__ import annotations

import pytest

from baseten_operator.api.constants import FINALIZER
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.runtime.controller import Result

STEADY = "active: src (3 replicas, min:1 max:5) in production environment"


def test_object_gone_is_done(h) -> None:
    assert h.run("missing") == Result()
    assert h.baseten.calls == []


# --- step 3: pause ---------------------------------------------------------------------


def test_pause_from_scratch(h) -> None:
    h.create(mode="Pause")
    assert h.run() == Result()
    assert h.word() == "PAUSED"
    assert h.message() == "reconciliation paused"
    assert h.event("ReconciliationPaused") == ("Normal", "Reconciliation paused for my-llm")
    assert h.baseten.calls == []


def test_pause_keeps_last_status_once(h) -> None:
    h.steady_world()
    h.create()
    h.run()
    h.edit(lambda o: o["spec"].__setitem__("mode", "Pause"))
    h.run()
    assert h.message() == f"reconciliation paused | last status: {STEADY}"
    assert h.status()["modelID"] == "m1"
    calls = len(h.baseten.calls)
    h.run()
    assert h.message() == f"reconciliation paused | last status: {STEADY}"
    assert h.writes == 0
    assert h.events == []
    assert len(h.baseten.calls) == calls


def test_deprecated_paused_field_pauses(h) -> None:
    h.create(mode="Observe", paused=True)
    h.run()
    assert h.word() == "PAUSED"
    assert h.baseten.calls == []


def test_pause_happens_before_the_finalizer(h) -> None:
    h.create(mode="Pause", finalizer=False)
    h.run()
    assert h.kube.patches == []


def test_unpause_acts_normally(h) -> None:
    h.steady_world()
    h.create(mode="Pause")
    h.run()
    h.edit(lambda o: o["spec"].__setitem__("mode", "Reconcile"))
    h.run()
    assert h.word() == "ACTIVE"
    assert h.message() == STEADY


# --- step 4: finalizer ------------------------------------------------------------------


def test_missing_finalizer_is_added_and_the_pass_ends(h) -> None:
    h.steady_world()
    h.create(finalizer=False)
    assert h.run() == Result()
    assert h.obj()["metadata"]["finalizers"] == [FINALIZER]
    assert h.baseten.calls == []
    assert h.writes == 0


def test_finalizer_added_beside_others(h) -> None:
    h.create(finalizer=False)
    h.edit(lambda o: o["metadata"].__setitem__("finalizers", ["other/x"]))
    h.run()
    assert h.obj()["metadata"]["finalizers"] == ["other/x", FINALIZER]


# --- step 6: model ID -------------------------------------------------------------------


def test_lookup_error(h) -> None:
    h.create()
    h.baseten.fail("find_model", BasetenAPIError(500, "boom"))
    with pytest.raises(Exception, match="unable to check model my-llm: HTTP 500: boom"):
        h.run()
    assert h.word() == "FAILED"
    assert h.message() == "unable to check model my-llm: HTTP 500: boom"
    assert h.events == []  # no ModelNotFound: a failed lookup proves no absence


def test_ambiguous_name_lists_ids_and_does_not_guess(h) -> None:
    h.create()
    h.baseten.ambiguous = ["m1", "m2"]
    result = h.run()
    assert result.requeue_after == h.steady_period()
    assert h.word() == "FAILED"
    assert h.message() == "model name 'my-llm' is ambiguous: 2 models have that name (ids: m1, m2)"
    assert [c[0] for c in h.baseten.calls] == ["find_model"]


def test_model_missing_with_source_deployment(h) -> None:
    h.create()
    with pytest.raises(Exception, match="model 'my-llm' not found"):
        h.run()
    assert h.word() == "FAILED"
    assert h.message() == "model 'my-llm' not found"
    assert h.event("ModelNotFound")[0] == "Warning"


@pytest.mark.parametrize("policy", ["Delete", "DeleteWithGuardrails"])
def test_model_that_existed_is_not_recreated_under_delete_policies(h, policy: str) -> None:
    h.create(
        deletionPolicy=policy,
        status={"modelIDResolvedTime": "2025-12-01T00:00:00Z"},
        trussConfig={"resources": {"accelerator": "L4"}, "baseImage": {"image": "vllm:1"}},
        sourceDeploymentName=None,
    )
    h.edit(lambda o: o["spec"].pop("sourceDeploymentName"))
    result = h.run()
    assert result.requeue_after == 300
    assert h.word() == "FAILED"
    assert (
        h.message() == f'Baseten model "my-llm" missing; deletionPolicy: {policy} blocks recreation'
    )
    assert h.event("ModelNotFound") == (
        "Warning",
        f'Baseten model "my-llm" missing; deletionPolicy: {policy} blocks recreation. '
        "Recreate the model in Baseten or set deletionPolicy: Retain to recover.",
    )
    assert h.pusher.launched == []


def test_resolved_id_is_stored_with_its_time(h) -> None:
    h.steady_world()
    h.create()
    h.run()
    assert h.status()["modelID"] == "m1"
    assert h.status()["modelIDResolvedTime"] == "2026-01-01T00:00:00Z"
    h.clock.advance(600)
    h.run()
    assert h.status()["modelIDResolvedTime"] == "2026-01-01T00:00:00Z"
    assert len(h.baseten.called("find_model")) == 1  # cached afterwards


# --- step 15: invalidation ----------------------------------------------------------------


@pytest.mark.parametrize(
    "method", ["create_environment", "list_deployments", "find_deployment", "promote"]
)
def test_404_with_cached_model_id_invalidates(h, method: str) -> None:
    h.baseten.add_model()
    h.baseten.add_deployment(name="src")
    if method != "create_environment":
        h.baseten.add_environment()
    h.create(status={"modelID": "m1", "modelIDResolvedTime": "2025-12-01T00:00:00Z"})
    h.baseten.fail(method, BasetenAPIError(404, "model not found"))
    if method == "list_deployments":
        h.baseten.fail("find_deployment", BasetenAPIError(404, "model not found"))
    result = h.run()
    assert result.requeue_after == 1
    assert "modelID" not in h.status()
    assert h.status()["modelIDResolvedTime"] == "2025-12-01T00:00:00Z"
    assert h.event("ModelNotFound") == (
        "Warning",
        "Invalidating cached model ID m1, will re-resolve",
    )


def test_invalidated_model_re_resolves(h) -> None:
    h.steady_world()
    h.create(status={"modelID": "gone"})
    h.run()
    assert "modelID" not in h.status()
    h.run()
    assert h.status()["modelID"] == "m1"
    assert h.word() == "ACTIVE"
