"""The recording world: writes recorded and never sent; the HTTP path refuses non-GETs."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import responses
from pydantic import SecretStr

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.errors import AmbiguousModelName, BasetenAPIError, RateLimited
from baseten_operator.baseten.models import DeploymentV1, EnvironmentV1, ModelV1, TeamV1
from baseten_operator.plan.actions import (
    Activate,
    CreateEnvironment,
    Deactivate,
    DeleteModel,
    DeleteOrphan,
    DeleteSecret,
    Promote,
    Retry,
    ScaleInOrphan,
    UpdateEnvironment,
    UpsertSecret,
)
from baseten_operator.plan.world import (
    Ledger,
    MemoryKube,
    RecordingBaseten,
    WriteRefused,
    read_only_connections,
)

# Nothing listens here: a request that left the process would fail to connect.
CLOSED = "http://127.0.0.1:9/v1"


def read_only_client() -> BasetenClient:
    return BasetenClient(
        "read-only-key", CLOSED, connect=read_only_connections, timeout=2.0, max_attempts=1
    )


@pytest.mark.parametrize(
    "write",
    [
        lambda c: c.delete_model("m1"),
        lambda c: c.delete_deployment("m1", "d1"),
        lambda c: c.activate_deployment("m1", "d1"),
        lambda c: c.retry_deployment("m1", "d1"),
        lambda c: c.update_deployment_autoscaling("m1", "d1", {"min_replica": 0}),
        lambda c: c.create_environment("m1", "prod", None, None),
        lambda c: c.update_environment("m1", "prod", {"min_replica": 1}, None),
        lambda c: c.promote("m1", "prod", "d1"),
        lambda c: c.upsert_secret("hf_token", SecretStr("value")),
        lambda c: c.delete_secret("hf_token"),
        lambda c: c.upsert_team_secret("t1", "hf_token", SecretStr("value")),
        lambda c: c.delete_team_secret("t1", "hf_token"),
    ],
)
def test_the_session_refuses_every_write_before_sending(write: Any) -> None:
    with pytest.raises(WriteRefused):
        write(read_only_client())


def test_the_session_lets_reads_out() -> None:
    with pytest.raises(BasetenAPIError) as raised:
        read_only_client().list_models()
    assert raised.value.status_code == 0  # a connection error: the GET was really sent


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
def test_nothing_but_a_get_leaves_the_connections(method: str) -> None:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add(method, f"{CLOSED}/models", status=200)
        with pytest.raises(WriteRefused):
            read_only_connections(CLOSED).send(
                method, "/v1/models", body=None, headers={}, connect_timeout=1, read_timeout=1
            )
        assert len(mock.calls) == 0


# Methods of the client a plan has no use for: building it, and the leadership fence of
# its writes (a plan sends none).
NOT_PLANNED = {"from_env", "fence_writes"}


def test_the_recording_client_has_every_call_of_the_real_client_with_its_signature() -> None:
    """A call the client gains and the wrapper lacks would reach the real client unrecorded
    (a write refused by the session fails the plan; a read would be missed)."""
    for name, member in inspect.getmembers(BasetenClient):
        if name.startswith("_") or name in NOT_PLANNED:
            continue
        wrapper = getattr(RecordingBaseten, name, None)
        assert wrapper is not None, f"RecordingBaseten lacks {name}"
        if callable(member):
            assert inspect.signature(wrapper) == inspect.signature(member), name


class Failing:
    """A Baseten whose reads fail with `error`."""

    base_url = CLOSED

    def __init__(self, error: Exception) -> None:
        self.error = error

    def find_model(self, name: str) -> ModelV1 | None:
        raise self.error

    list_teams = list_deployments = find_model


@pytest.mark.parametrize(
    "error",
    [
        BasetenAPIError(0, "connection refused"),
        BasetenAPIError(401, "invalid API key"),
        BasetenAPIError(503, "unavailable"),
        BasetenAPIError(200, "GET /models not acknowledged: Baseten answered {}"),
        RateLimited("GET /models", 40.0, "Retry-After 40"),
    ],
)
def test_a_read_that_got_no_answer_is_on_record(error: Exception) -> None:
    baseten = RecordingBaseten(Failing(error))  # type: ignore[arg-type]
    with pytest.raises(type(error)):
        baseten.find_model("llama")
    assert baseten.recording.failed_reads == [str(error)]


@pytest.mark.parametrize(
    "error", [BasetenAPIError(404, "not found"), AmbiguousModelName("llama", ["m1", "m2"])]
)
def test_a_read_answered_not_found_or_ambiguous_is_an_answer(error: Exception) -> None:
    baseten = RecordingBaseten(Failing(error))  # type: ignore[arg-type]
    with pytest.raises(BasetenAPIError):
        baseten.find_model("llama")
    assert baseten.recording.failed_reads == []


def test_clients_of_one_ledger_share_what_they_saw_and_record() -> None:
    ledger = Ledger()
    operator, namespace = (RecordingBaseten(ReadsOnly(), ledger) for _ in range(2))  # type: ignore[arg-type]
    namespace.get_environment("m1", "prod")
    operator.activate_deployment("m1", "d1")
    assert ledger.recording.actions == [Activate("v1", "d1", reactivate=True)]
    assert operator.recording is namespace.recording
    ledger.start_pass()
    assert operator.recording.actions == []
    assert ledger.environment_seen("m1", "prod") is not None


class ReadsOnly:
    """A Baseten with reads only: any write reaching it is an AttributeError."""

    def __init__(self) -> None:
        self.v1 = DeploymentV1(id="d1", name="v1", status="INACTIVE")
        self.v2 = DeploymentV1(id="d2", name="v2", status="ACTIVE")
        self.base_url = CLOSED

    def find_model(self, name: str) -> ModelV1:
        return ModelV1(id="m1", name=name)

    def get_environment(self, model_id: str, env_name: str) -> EnvironmentV1:
        return EnvironmentV1(name=env_name, current_deployment=self.v1)

    def list_deployments(self, model_id: str, name: str | None = None) -> list[DeploymentV1]:
        return [self.v1, self.v2]


def test_every_write_is_recorded_with_names_from_the_reads() -> None:
    baseten = RecordingBaseten(ReadsOnly())  # type: ignore[arg-type]
    baseten.find_model("llama")
    baseten.get_environment("m1", "prod")
    baseten.list_deployments("m1")
    baseten.activate_deployment("m1", "d1")
    baseten.activate_deployment("m1", "d2")
    baseten.deactivate_deployment("m1", "d2")
    assert baseten.retry_deployment("m1", "d2").retried
    baseten.update_deployment_autoscaling("m1", "d2", {"min_replica": 0})
    baseten.delete_deployment("m1", "d2")
    assert baseten.create_environment("m1", "stg", {"min_replica": 1}, None).name == "stg"
    baseten.update_environment("m1", "prod", None, {"redeploy_on_promotion": True})
    baseten.update_environment("m1", "prod", None, None, {"delete_schedules": ["s-1"]})
    promoted = baseten.promote(
        "m1", "prod", "d2", scale_down_previous_deployment=False, preserve_env_instance_type=True
    )
    baseten.delete_model("m1")
    assert promoted.id == "d2"
    assert baseten.recording.actions == [
        Activate("v1", "d1", reactivate=True),
        Activate("v2", "d2", reactivate=False),
        Deactivate("v2", "d2"),
        Retry("v2", "d2"),
        ScaleInOrphan("v2", "d2", {"min_replica": 0}),
        DeleteOrphan("v2", "d2"),
        CreateEnvironment("stg", {"min_replica": 1}, None),
        UpdateEnvironment("prod", [], None, {"redeploy_on_promotion": True}),
        UpdateEnvironment(
            "prod", [], None, None, autoscaling_schedule_settings={"delete_schedules": ["s-1"]}
        ),
        Promote("prod", "v1", "v2", "d2", False, True),
        DeleteModel("llama", "m1", "", ""),
    ]


def test_memory_kube_keeps_status_and_finalizer_writes() -> None:
    kube = MemoryKube()
    obj = {"metadata": {"name": "m", "namespace": "ns", "resourceVersion": "4"}}
    kube.put(obj)
    written = kube.update_status(None, {**obj, "status": {"deploymentStatus": "ACTIVE"}})
    assert written["metadata"]["resourceVersion"] == "5"
    kube.patch(None, "m", {"metadata": {"finalizers": ["f"]}}, "ns")
    stored = kube.stored("ns", "m")
    assert stored is not None
    assert stored["status"] == {"deploymentStatus": "ACTIVE"}
    assert stored["metadata"]["finalizers"] == ["f"]
    assert obj.get("status") is None  # the caller's copy is left alone


class Teams(ReadsOnly):
    def list_teams(self, name: str | None = None) -> list[TeamV1]:
        return [TeamV1(id="t1", name="search")]


def test_secret_writes_are_recorded_by_name_never_with_the_value() -> None:
    baseten = RecordingBaseten(Teams())  # type: ignore[arg-type]
    baseten.list_teams("search")
    value = "hf_the-value-a-plan-never-shows"
    assert baseten.upsert_secret("hf_token", SecretStr(value)).name == "hf_token"
    assert baseten.upsert_team_secret("t1", "hf_token", SecretStr(value)).team_name == "search"
    assert baseten.delete_secret("old") is True
    assert baseten.delete_team_secret("t9", "old") is True  # a team never read: its id
    actions = baseten.recording.actions
    assert actions == [
        UpsertSecret("hf_token", None),
        UpsertSecret("hf_token", "search"),
        DeleteSecret("old", None),
        DeleteSecret("old", "t9"),
    ]
    assert value not in repr(actions) and value not in repr([a.to_json() for a in actions])
