"""Audit of section 2 and 3.6: a status field nobody can read must not cost the others."""

from __future__ import annotations

from typing import Any

from baseten_operator.api.base import to_wire
from baseten_operator.controller.basetenmodel.status import parse_status

TRUSS: dict[str, Any] = {
    "resources": {"accelerator": "L4"},
    "baseImage": {"image": "registry.example.com/team/vllm:0.16.0"},
    "dockerServer": {
        "startCommand": "serve",
        "readinessEndpoint": "/health",
        "livenessEndpoint": "/health",
        "predictEndpoint": "/predict",
        "serverPort": 8000,
    },
}


def test_unreadable_fields_are_dropped_alone() -> None:
    status = parse_status(
        {
            "modelIDResolvedTime": "2025-12-01T00:00:00Z",
            "deploymentRetryCount": "many",
            "trussPushStatus": "SOMETHING_ELSE",
            "message": "hello",
        }
    )
    assert status.model_id_resolved_time == "2025-12-01T00:00:00Z"
    assert status.message == "hello"
    assert status.deployment_retry_count is None
    assert status.truss_push_status is None


def test_a_status_that_is_not_an_object_starts_afresh() -> None:
    assert parse_status(["not", "a", "status"]).model_id_resolved_time is None
    assert parse_status(None).message is None


def test_foreign_status_field_does_not_lift_the_recreation_guard(h) -> None:
    # The model existed (resolved time on record) and is gone; a foreign hand wrote a
    # trussPushStatus we do not know. Recreating the model by pushing would be wrong.
    h.create(
        {"modelName": "my-llm", "trussConfig": TRUSS, "environment": {"name": "production"}},
        deletionPolicy="Delete",
        status={"modelIDResolvedTime": "2025-12-01T00:00:00Z", "trussPushStatus": "UNKNOWN"},
    )
    assert h.run().requeue_after == 300
    assert h.pusher.launched == []
    assert h.word() == "FAILED"
    assert h.message() == (
        'Baseten model "my-llm" missing; deletionPolicy: Delete blocks recreation'
    )
    assert h.status()["modelIDResolvedTime"] == "2025-12-01T00:00:00Z"


def test_every_field_of_a_go_operator_status_survives_a_round_trip() -> None:
    """A status the Go operator wrote (its newest fields included) is read whole and
    written back unchanged, so a migration keeps its push backoff (issue 15 item 4)."""
    go_status = {
        "modelID": "m1",
        "modelIDResolvedTime": "2026-01-01T00:00:00Z",
        "sourceDeploymentID": "d1",
        "sourceDeploymentName": "depl-vllm-0.16.0-1a2b3c4d",
        "activeDeploymentName": "depl-vllm-0.15.0-00000000",
        "activeReplicaCount": 2,
        "deploymentStatus": "FAILED",
        "message": "truss push failed",
        "trussConfigHash": "1a2b3c4d",
        "trussPushStatus": "TRUSS_PUSH_FAILED",
        "trussPushFailureCount": 3,
        "trussPushLastError": "e" * 512 + "...",
        "trussPushNextRetryTime": "2026-01-01T00:08:00Z",
        "lastCleanupTime": "2026-01-01T00:00:00Z",
        "observedGeneration": 4,
    }
    assert to_wire(parse_status(go_status)) == go_status
