"""Acknowledgements must be positive; response models tell "absent" from zero or false."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import responses

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import DeploymentV1, EnvironmentV1

Call = Callable[[BasetenClient], None]

DELETE_MODEL = ("DELETE", "/models/m1", lambda c: c.delete_model("m1"))
DELETE_DEPLOYMENT = (
    "DELETE",
    "/models/m1/deployments/d1",
    lambda c: c.delete_deployment("m1", "d1"),
)
ACTIVATE = (
    "POST",
    "/models/m1/deployments/d1/activate",
    lambda c: c.activate_deployment("m1", "d1"),
)
DEACTIVATE = (
    "POST",
    "/models/m1/deployments/d1/deactivate",
    lambda c: c.deactivate_deployment("m1", "d1"),
)
SCALE = (
    "PATCH",
    "/models/m1/deployments/d1/autoscaling_settings",
    lambda c: c.update_deployment_autoscaling("m1", "d1", {"min_replica": 0}),
)
PATCH_ENV = (
    "PATCH",
    "/models/m1/environments/production",
    lambda c: c.update_environment("m1", "production", {"min_replica": 1}, None),
)
CANCEL = (
    "POST",
    "/models/m1/environments/production/cancel_promotion",
    lambda c: c.cancel_promotion("m1", "production"),
)

PAUSE = (
    "POST",
    "/models/m1/environments/production/pause_promotion",
    lambda c: c.pause_promotion("m1", "production"),
)
FORCE_ROLL_FORWARD = (
    "POST",
    "/models/m1/environments/production/force_roll_forward_promotion",
    lambda c: c.force_roll_forward_promotion("m1", "production"),
)

REFUSED: list[tuple[tuple[str, str, Call], dict[str, Any]]] = [
    (DELETE_MODEL, {"id": "m1", "deleted": False}),
    (DELETE_MODEL, {"id": "m1"}),
    (DELETE_MODEL, {"error": "model is locked"}),
    (DELETE_MODEL, {"id": "m1", "deleted": True, "error": "partially deleted"}),
    (DELETE_DEPLOYMENT, {"id": "d1", "model_id": "m1", "deleted": False}),
    (DELETE_DEPLOYMENT, {}),
    (ACTIVATE, {"success": False}),
    (ACTIVATE, {}),
    (ACTIVATE, {"error": "quota exceeded"}),
    (DEACTIVATE, {"success": None}),
    (SCALE, {"status": "REJECTED", "message": "no"}),
    (SCALE, {"message": "Autoscaling settings updated"}),
    (PATCH_ENV, {"status": "FAILED", "message": "invalid"}),
    (PATCH_ENV, {"message": "ok"}),
    (PATCH_ENV, {"environment": {"name": "production"}, "status": "ACCEPTED", "error": "x"}),
    # A status Baseten adds tomorrow says nothing about whether the promotion stopped.
    (CANCEL, {"status": "QUEUED", "message": "later"}),
    (CANCEL, {"message": "no promotion in progress"}),
    (CANCEL, {"status": "CANCELED", "message": "x", "error": "partially"}),
    (PAUSE, {"success": False}),
    (PAUSE, {}),
    (FORCE_ROLL_FORWARD, {"success": True, "error": "candidate not ready"}),
]

ACCEPTED: list[tuple[tuple[str, str, Call], dict[str, Any]]] = [
    (DELETE_MODEL, {"id": "m1", "deleted": True}),
    (DELETE_DEPLOYMENT, {"id": "d1", "model_id": "m1", "deleted": True}),
    (ACTIVATE, {"success": True}),
    (DEACTIVATE, {"success": True}),
    (SCALE, {"status": "QUEUED", "message": "queued"}),
    (SCALE, {"status": "UNCHANGED", "message": "unchanged"}),
    (PATCH_ENV, {"environment": {"name": "production"}, "status": "ACCEPTED", "message": "ok"}),
    # `status` is deprecated on the environment PATCH: the environment alone acknowledges.
    (PATCH_ENV, {"environment": {"name": "production"}}),
    (CANCEL, {"status": "CANCELED", "message": "The promotion was canceled"}),
    (CANCEL, {"status": "RAMPING_DOWN", "message": "Traffic is moving back"}),
    (PAUSE, {"success": True}),
    (FORCE_ROLL_FORWARD, {"success": True}),
]


@pytest.mark.parametrize(("endpoint", "answer"), REFUSED)
def test_a_200_without_a_positive_acknowledgement_is_an_error_quoting_the_answer(
    client: BasetenClient,
    rsps: responses.RequestsMock,
    base_url: str,
    endpoint: tuple[str, str, Call],
    answer: dict[str, Any],
) -> None:
    method, path, call = endpoint
    rsps.add(method, base_url + path, json=answer)
    with pytest.raises(BasetenAPIError) as raised:
        call(client)
    assert raised.value.status_code == 200
    assert "not acknowledged: Baseten answered" in str(raised.value)
    for key in answer:
        assert f'"{key}"' in str(raised.value)


@pytest.mark.parametrize(("endpoint", "answer"), ACCEPTED)
def test_a_positive_acknowledgement_passes(
    client: BasetenClient,
    rsps: responses.RequestsMock,
    base_url: str,
    endpoint: tuple[str, str, Call],
    answer: dict[str, Any],
) -> None:
    method, path, call = endpoint
    rsps.add(method, base_url + path, json=answer)
    call(client)


def test_a_cancel_says_how_baseten_stops_the_promotion(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.add("POST", base_url + CANCEL[1], json={"status": "RAMPING_DOWN", "message": "m"})
    assert client.cancel_promotion("m1", "production").status == "RAMPING_DOWN"


def test_the_quoted_answer_never_carries_the_api_key(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_key: str
) -> None:
    rsps.delete(f"{base_url}/models/m1", json={"error": f"bad key {api_key}"})
    with pytest.raises(BasetenAPIError) as raised:
        client.delete_model("m1")
    assert api_key not in str(raised.value)
    assert "[REDACTED]" in str(raised.value)


def test_deployment_fields_missing_read_as_unknown_not_zero() -> None:
    deployment = DeploymentV1.model_validate({"id": "d1", "name": "src"})
    assert deployment.active_replica_count is None
    assert deployment.is_production is None
    assert deployment.is_development is None
    assert not deployment.stated("environment")
    explicit = DeploymentV1.model_validate(
        {"id": "d1", "name": "src", "active_replica_count": 0, "environment": None}
    )
    assert explicit.active_replica_count == 0
    assert explicit.stated("environment") and explicit.environment is None


def test_environment_current_deployment_null_differs_from_missing() -> None:
    assert EnvironmentV1.model_validate({"name": "p", "current_deployment": None}).stated(
        "current_deployment"
    )
    assert not EnvironmentV1.model_validate({"name": "p"}).stated("current_deployment")
