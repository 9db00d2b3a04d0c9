"""Section 7, fail closed: DeleteWithGuardrails never deletes on data Baseten left out."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.api.constants import FINALIZER
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import EnvironmentV1

DEPLOYMENT = {
    "id": "d1",
    "name": "src",
    "status": "ACTIVE",
    "active_replica_count": 0,
    "is_production": True,
    "is_development": False,
    "environment": "production",
}
FULL = {
    "name": "production",
    "model_id": "m1",
    "current_deployment": DEPLOYMENT,
    "candidate_deployment": None,
    "autoscaling_settings": {"min_replica": 0, "max_replica": 1},
}


def without(path: str) -> dict[str, Any]:
    """FULL with one member (dotted path) left out, as a partial answer would."""
    env: dict[str, Any] = {**FULL, "current_deployment": dict(DEPLOYMENT)}
    env["autoscaling_settings"] = dict(FULL["autoscaling_settings"])
    *parents, leaf = path.split(".")
    target = env
    for parent in parents:
        target = target[parent]
    del target[leaf]
    return env


def deleting(h, status: dict[str, Any] | None = None) -> None:
    h.create(deletionPolicy="DeleteWithGuardrails", status={"modelID": "m1", **(status or {})})
    h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))


def listing(h, *environments: dict[str, Any]) -> None:
    h.baseten.add_model()
    for env in environments:
        h.baseten.environments[("m1", env["name"])] = EnvironmentV1.model_validate(env)


def still_there(h) -> bool:
    return ("default", "my-model") in h.kube.objects and h.baseten.called("delete_model") == []


@pytest.mark.parametrize(
    "missing",
    [
        "autoscaling_settings",
        "autoscaling_settings.min_replica",
        "current_deployment",
        "current_deployment.active_replica_count",
    ],
)
def test_a_replica_count_baseten_left_out_blocks_deletion(h, missing: str) -> None:
    listing(h, without(missing))
    deleting(h)
    assert h.run().requeue_after == 30
    message = (
        "deletion blocked: replica counts of environment production unknown "
        f"(Baseten answered without {missing})"
    )
    assert (h.word(), h.message()) == ("DELETE_BLOCKED", message)
    assert h.event("ModelDeleteBlocked") == ("Warning", message)
    assert still_there(h)


def test_a_candidate_without_replica_count_blocks_deletion(h) -> None:
    candidate = {k: v for k, v in DEPLOYMENT.items() if k != "active_replica_count"}
    listing(h, {**FULL, "candidate_deployment": {**candidate, "id": "d2"}})
    deleting(h)
    h.run()
    assert h.message().endswith(
        "(Baseten answered without candidate_deployment.active_replica_count)"
    )
    assert still_there(h)


def test_a_complete_idle_answer_deletes(h) -> None:
    listing(h, FULL)
    deleting(h)
    h.run()
    assert h.baseten.called("delete_model") == [("m1",)]


def test_an_environment_list_that_failed_to_parse_blocks(h) -> None:
    listing(h)
    deleting(h)
    malformed = BasetenAPIError(
        200,
        "malformed response from GET /v1/models/{model_id}/environments: "
        "environments.0.name: Field required",
    )
    h.baseten.fail("list_environments", malformed)
    assert h.run().requeue_after == 30
    assert h.word() == "DELETE_BLOCKED"
    assert h.message() == (
        "deletion blocked: failed to list environments for model m1: HTTP 200: malformed "
        "response from GET /v1/models/{model_id}/environments: environments.0.name: Field required"
    )
    assert still_there(h)


def test_an_empty_list_blocks_when_the_status_records_a_deployment(h) -> None:
    listing(h)
    deleting(h, {"activeDeploymentName": "src"})
    assert h.run().requeue_after == 30
    assert (h.word(), h.message()) == (
        "DELETE_BLOCKED",
        "deletion blocked: Baseten listed no environments for model m1, but this BasetenModel "
        "records deployment src in environment production",
    )
    assert still_there(h)


def test_an_empty_list_blocks_when_a_sibling_records_a_deployment(h) -> None:
    listing(h)
    h.siblings.append(
        {
            "metadata": {"namespace": "team-b", "name": "llm-staging"},
            "spec": {"modelName": "my-llm", "environment": {"name": "staging"}},
            "status": {"modelID": "m1", "activeDeploymentName": "src.17"},
        }
    )
    deleting(h)
    h.run()
    assert h.message() == (
        "deletion blocked: Baseten listed no environments for model m1, but BasetenModel "
        "team-b/llm-staging records deployment src.17 in environment staging"
    )
    assert still_there(h)


def test_an_empty_list_deletes_when_nothing_knows_an_environment(h) -> None:
    listing(h)
    h.siblings.append(
        {
            "metadata": {"namespace": "other", "name": "x"},
            "spec": {"modelName": "my-llm", "environment": {"name": "staging"}},
            # Same name, another model (another team): not evidence for this one.
            "status": {"modelID": "m9", "activeDeploymentName": "src"},
        }
    )
    deleting(h)
    h.run()
    assert h.baseten.called("delete_model") == [("m1",)]


def test_the_block_lifts_once_baseten_answers_in_full(h) -> None:
    listing(h, without("autoscaling_settings"))
    deleting(h)
    h.run()
    h.run()
    assert h.events == []  # the Warning only when entering DELETE_BLOCKED
    listing(h, FULL)
    h.run()
    assert h.baseten.called("delete_model") == [("m1",)]


def test_a_delete_baseten_did_not_acknowledge_keeps_the_finalizer(h) -> None:
    listing(h, FULL)
    deleting(h)
    refused = BasetenAPIError(
        200, 'DELETE /v1/models/{model_id} not acknowledged: Baseten answered {"error": "locked"}'
    )
    h.baseten.fail("delete_model", refused)
    assert h.run().requeue_after == 30
    assert h.word() == "DELETE_FAILED"
    assert h.message() == (
        "failed to delete Baseten model m1: HTTP 200: DELETE /v1/models/{model_id} not "
        'acknowledged: Baseten answered {"error": "locked"}'
    )
    assert h.obj()["metadata"]["finalizers"] == [FINALIZER]
