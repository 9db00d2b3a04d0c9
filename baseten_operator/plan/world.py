"""The recording, read-only world a plan's pass runs in.

- Baseten: `RecordingBaseten` wraps a real `BasetenClient` (the operator key's, or a
  namespace key's: every one of them fills the plan's one `Ledger`); reads go through,
  every write is recorded as an action and answered with a plausible stub, never sent.
  Under it, `read_only_connections` refuses anything but a GET before it leaves the
  process: a write the wrapper does not know of fails the plan instead of reaching
  Baseten. A read Baseten fails (no answer, a bad key, 5xx, throttled) is on record
  too: the plan is then incomplete, an error.
- Kubernetes: `MemoryKube` keeps the status and finalizer writes of the pass in memory.
- Events and pushes: recorded (`RecordedEvents`, `RecordingPusher`), nothing emitted or launched.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import requests
from pydantic import SecretStr

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.connections import Connections, HttpSender
from baseten_operator.baseten.deployment_metrics import DeploymentMetrics
from baseten_operator.baseten.errors import AmbiguousName, BasetenAPIError, RateLimited
from baseten_operator.baseten.models import (
    CANCELED,
    AuditLogPage,
    CancelPromotionAck,
    DeploymentV1,
    EnvironmentV1,
    LogV1,
    ModelV1,
    RetryResult,
    SecretV1,
    SignalPromotionAck,
    TeamV1,
)
from baseten_operator.baseten.schedules import TIMEZONE_FIELD, TimezoneChange
from baseten_operator.baseten.settings import Drift
from baseten_operator.plan.actions import (
    Action,
    Activate,
    CancelPromotion,
    CreateEnvironment,
    Deactivate,
    DeleteModel,
    DeleteOrphan,
    DeleteSecret,
    PausePromotion,
    Promote,
    PromotionSignal,
    Push,
    ResumePromotion,
    Retry,
    RollBackPromotion,
    RollForwardPromotion,
    ScaleInOrphan,
    ScheduleChange,
    SettingChange,
    UpdateEnvironment,
    UpsertSecret,
)
from baseten_operator.truss.pusher import PushOutcome, PushRequest

# The only method a plan sends: HEAD and OPTIONS change nothing either, but the client
# never needs them, so nothing but a GET has any business leaving the process.
READ_METHOD = "GET"
PLAN_USER_AGENT = "baseten-operator-plan"

T = TypeVar("T")


class WriteRefused(RuntimeError):
    """A plan tried to send a write to Baseten. Not a connection error: nothing retries it."""


class ReadOnlyConnections:
    """The client's connections, refusing every request but a GET before sending it."""

    def __init__(self, connections: HttpSender) -> None:
        self._connections = connections

    def send(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None,
        headers: Mapping[str, str],
        connect_timeout: float,
        read_timeout: float,
    ) -> requests.Response:
        if method.upper() != READ_METHOD:
            raise WriteRefused(f"plan refused to send {method} {target}")
        return self._connections.send(
            method,
            target,
            body=body,
            headers=headers,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
        )


def read_only_connections(base_url: str) -> ReadOnlyConnections:
    return ReadOnlyConnections(Connections(base_url))


def read_only_client_from_env(timeout: float) -> BasetenClient:
    """The client `run` would build (same env variables), on read-only connections."""
    return BasetenClient.from_env(
        connect=read_only_connections, timeout=timeout, user_agent=PLAN_USER_AGENT
    )


def read_only_clients(base_url: str, timeout: float) -> Callable[[str], BasetenClient]:
    """Clients of namespaces' own keys, like the operator key's: read-only connections."""
    return lambda api_key: BasetenClient(
        api_key,
        base_url,
        connect=read_only_connections,
        timeout=timeout,
        user_agent=PLAN_USER_AGENT,
    )


@dataclass
class Recording:
    """What one pass would have done."""

    actions: list[Action] = field(default_factory=list)
    # Deployment names the pass looked up, and whether Baseten has them.
    found: dict[str, bool] = field(default_factory=dict)
    # Reads that got no usable answer: what the pass decided on them is not a plan.
    failed_reads: list[str] = field(default_factory=list)


def unplanned(recording: Recording, refused: WriteRefused | None = None) -> str | None:
    """A CR's plan error: a write the plan does not know, or a read that got no usable
    answer (what the pass decided on it is not what it will do)."""
    if refused is not None:
        return f"the pass tried a write the plan does not know: {refused}"
    if recording.failed_reads:
        return f"a Baseten read failed, so this plan is incomplete: {recording.failed_reads[0]}"
    return None


def _an_answer(error: BasetenAPIError) -> bool:
    """A failed call that still tells the pass something about Baseten's state: a 404
    (not found) or an ambiguous name. Anything else (no answer, a refused key, a 5xx, an
    answer that did not parse) tells nothing."""
    return error.is_not_found or isinstance(error, AmbiguousName)


class Ledger:
    """What every recording client of one plan shares: the current pass's recording, and
    what the reads returned (names for the actions, environments for the diffs' old side),
    whichever key or team view made them."""

    def __init__(self) -> None:
        self.recording = Recording()
        self.names: dict[str, str] = {}  # deployment id -> name
        self.environments: dict[tuple[str, str], EnvironmentV1] = {}
        self.models: dict[str, str] = {}  # model id -> name
        self.teams: dict[str, str] = {}  # team id -> name

    def start_pass(self) -> Recording:
        self.recording = Recording()
        return self.recording

    def environment_seen(self, model_id: str, env_name: str) -> EnvironmentV1 | None:
        """The environment as this plan last read it (the "old" side of a settings diff)."""
        return self.environments.get((model_id, env_name))


class RecordingBaseten:
    """`BasetenClient`'s interface: reads from Baseten, writes into the ledger's recording.

    test/unit/plan/test_world.py holds its methods to the client's, signature for signature.
    """

    def __init__(self, client: BasetenClient, ledger: Ledger | None = None) -> None:
        self._client = client
        self.ledger = ledger if ledger is not None else Ledger()

    @property
    def recording(self) -> Recording:
        return self.ledger.recording

    @property
    def base_url(self) -> str:
        return self._client.base_url

    def _record(self, action: Action) -> None:
        self.recording.actions.append(action)

    def _seen(self, *deployments: DeploymentV1 | None) -> None:
        for deployment in deployments:
            if deployment is not None:
                self.ledger.names[deployment.id] = deployment.name

    def _name(self, deployment_id: str) -> str:
        return self.ledger.names.get(deployment_id, deployment_id)

    def _seen_environment(self, environment: EnvironmentV1, model_id: str) -> None:
        self.ledger.environments[(model_id, environment.name)] = environment
        self._seen(environment.current_deployment, environment.candidate_deployment)

    def _seen_models(self, *models: ModelV1 | None) -> None:
        self.ledger.models.update({m.id: m.name for m in models if m is not None})

    def _read(self, read: Callable[..., T], *args: Any) -> T:
        try:
            return read(*args)
        except RateLimited as throttled:
            self.recording.failed_reads.append(str(throttled))
            raise
        except BasetenAPIError as error:
            if not _an_answer(error):
                self.recording.failed_reads.append(str(error))
            raise

    # --- reads ----------------------------------------------------------------------------

    def list_models(self, name: str | None = None) -> list[ModelV1]:
        models = self._read(self._client.list_models, name)
        self._seen_models(*models)
        return models

    def find_model(self, name: str) -> ModelV1 | None:
        model = self._read(self._client.find_model, name)
        self._seen_models(model)
        return model

    def list_teams(self, name: str | None = None) -> list[TeamV1]:
        teams = self._read(self._client.list_teams, name)
        self.ledger.teams.update({t.id: t.name for t in teams})
        return teams

    def list_team_models(self, team_id: str, name: str | None = None) -> list[ModelV1]:
        models = self._read(self._client.list_team_models, team_id, name)
        self._seen_models(*models)
        return models

    def list_deployments(self, model_id: str, name: str | None = None) -> list[DeploymentV1]:
        deployments = self._read(self._client.list_deployments, model_id, name)
        self._seen(*deployments)
        return deployments

    def find_deployment(self, model_id: str, name: str) -> DeploymentV1 | None:
        deployment = self._read(self._client.find_deployment, model_id, name)
        self._seen(deployment)
        self.recording.found[name] = deployment is not None
        return deployment

    def get_deployment(self, model_id: str, deployment_id: str) -> DeploymentV1:
        deployment = self._read(self._client.get_deployment, model_id, deployment_id)
        self._seen(deployment)
        return deployment

    def list_environments(self, model_id: str) -> list[EnvironmentV1]:
        environments = self._read(self._client.list_environments, model_id)
        for environment in environments:
            self._seen_environment(environment, model_id)
        return environments

    def get_environment(self, model_id: str, env_name: str) -> EnvironmentV1:
        environment = self._read(self._client.get_environment, model_id, env_name)
        self._seen_environment(environment, model_id)
        return environment

    def list_secrets(self) -> list[SecretV1]:
        return self._read(self._client.list_secrets)

    def list_team_secrets(self, team_id: str) -> list[SecretV1]:
        return self._read(self._client.list_team_secrets, team_id)

    # --- writes: recorded, never sent ------------------------------------------------------

    def upsert_secret(self, name: str, value: SecretStr) -> SecretV1:
        return self._upsert_secret(name, None)

    def upsert_team_secret(self, team_id: str, name: str, value: SecretStr) -> SecretV1:
        return self._upsert_secret(name, self.ledger.teams.get(team_id, team_id))

    def _upsert_secret(self, name: str, team: str | None) -> SecretV1:
        # Recorded by name: the value is neither recorded nor looked at. A secret being
        # created has no id yet.
        self._record(UpsertSecret(name, team))
        return SecretV1(id="", name=name, team_name=team)

    def delete_secret(self, name: str) -> bool:
        self._record(DeleteSecret(name, None))
        return True

    def delete_team_secret(self, team_id: str, name: str) -> bool:
        self._record(DeleteSecret(name, self.ledger.teams.get(team_id, team_id)))
        return True

    def delete_model(self, model_id: str) -> None:
        self._record(DeleteModel(self.ledger.models.get(model_id, model_id), model_id, "", ""))

    def delete_deployment(self, model_id: str, deployment_id: str) -> None:
        self._record(DeleteOrphan(self._name(deployment_id), deployment_id))

    def activate_deployment(self, model_id: str, deployment_id: str) -> None:
        reactivate = any(
            env.current_deployment is not None and env.current_deployment.id == deployment_id
            for (mid, _), env in self.ledger.environments.items()
            if mid == model_id
        )
        self._record(Activate(self._name(deployment_id), deployment_id, reactivate))

    def deactivate_deployment(self, model_id: str, deployment_id: str) -> None:
        self._record(Deactivate(self._name(deployment_id), deployment_id))

    def retry_deployment(self, model_id: str, deployment_id: str) -> RetryResult:
        self._record(Retry(self._name(deployment_id), deployment_id))
        return RetryResult(retried=True)

    def update_deployment_autoscaling(
        self, model_id: str, deployment_id: str, settings: Mapping[str, Any]
    ) -> None:
        self._record(ScaleInOrphan(self._name(deployment_id), deployment_id, dict(settings)))

    def create_environment(
        self,
        model_id: str,
        name: str,
        autoscaling_settings: Mapping[str, Any] | None,
        promotion_settings: Mapping[str, Any] | None,
    ) -> EnvironmentV1:
        self._record(
            CreateEnvironment(name, _copy(autoscaling_settings), _copy(promotion_settings))
        )
        return EnvironmentV1(name=name, model_id=model_id)

    def update_environment(
        self,
        model_id: str,
        env_name: str,
        autoscaling_settings: Mapping[str, Any] | None,
        promotion_settings: Mapping[str, Any] | None,
        autoscaling_schedule_settings: Mapping[str, Any] | None = None,
    ) -> None:
        # The changes (old→new) are filled in by the planner, from the spec and the
        # environment read, with the drift function the pass itself used.
        self._record(
            UpdateEnvironment(
                env_name,
                [],
                _copy(autoscaling_settings),
                _copy(promotion_settings),
                autoscaling_schedule_settings=_copy(autoscaling_schedule_settings),
            )
        )

    def promote(
        self,
        model_id: str,
        env_name: str,
        deployment_id: str,
        *,
        scale_down_previous_deployment: bool = True,
        preserve_env_instance_type: bool = True,
    ) -> DeploymentV1:
        environment = self.ledger.environment_seen(model_id, env_name)
        current = environment.current_deployment if environment else None
        self._record(
            Promote(
                env_name,
                current.name if current else None,
                self._name(deployment_id),
                deployment_id,
                scale_down_previous_deployment,
                preserve_env_instance_type,
            )
        )
        # Baseten answers with the deployment being promoted.
        return DeploymentV1(
            id=deployment_id, name=self._name(deployment_id), model_id=model_id, status="ACTIVE"
        )

    def cancel_promotion(self, model_id: str, env_name: str) -> CancelPromotionAck:
        environment = self.ledger.environment_seen(model_id, env_name)
        candidate = environment.candidate_deployment if environment else None
        self._record(
            CancelPromotion(
                env_name,
                candidate.name if candidate else None,
                candidate.id if candidate else None,
            )
        )
        # Answered as a promotion stopped at once, so the plan goes on to what the pass
        # would do next (the promote of a forward fix); a ramp-down would only delay it.
        return CancelPromotionAck(status=CANCELED, message="planned")

    def pause_promotion(self, model_id: str, env_name: str) -> SignalPromotionAck:
        return self._signal(PausePromotion, model_id, env_name)

    def resume_promotion(self, model_id: str, env_name: str) -> SignalPromotionAck:
        return self._signal(ResumePromotion, model_id, env_name)

    def force_cancel_promotion(self, model_id: str, env_name: str) -> SignalPromotionAck:
        return self._signal(RollBackPromotion, model_id, env_name)

    def force_roll_forward_promotion(self, model_id: str, env_name: str) -> SignalPromotionAck:
        return self._signal(RollForwardPromotion, model_id, env_name)

    def _signal(
        self, action: type[PromotionSignal], model_id: str, env_name: str
    ) -> SignalPromotionAck:
        environment = self.ledger.environment_seen(model_id, env_name)
        candidate = environment.candidate_deployment if environment else None
        self._record(
            action(
                env_name,
                candidate.name if candidate else None,
                candidate.id if candidate else None,
            )
        )
        return SignalPromotionAck(success=True)

    def get_deployment_metrics(
        self,
        model_id: str,
        deployment_id: str,
        *,
        mode: str,
        start_ms: int | None = None,
        end_ms: int | None = None,
        metrics: Sequence[str] = (),
    ) -> DeploymentMetrics:
        def read() -> DeploymentMetrics:
            return self._client.get_deployment_metrics(
                model_id,
                deployment_id,
                mode=mode,
                start_ms=start_ms,
                end_ms=end_ms,
                metrics=metrics,
            )

        return self._read(read)

    def list_audit_logs(
        self,
        model_id: str,
        *,
        event_type_groups: Sequence[str] = (),
        start: datetime | None = None,
        end: datetime | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> AuditLogPage:
        def read() -> AuditLogPage:
            return self._client.list_audit_logs(
                model_id,
                event_type_groups=event_type_groups,
                start=start,
                end=end,
                limit=limit,
                cursor=cursor,
            )

        return self._read(read)

    def get_deployment_logs(
        self,
        model_id: str,
        deployment_id: str,
        *,
        min_level: str | None = None,
        limit: int = 500,
        start_ms: int | None = None,
        end_ms: int | None = None,
        direction: str | None = None,
    ) -> list[LogV1]:
        def read() -> list[LogV1]:
            return self._client.get_deployment_logs(
                model_id,
                deployment_id,
                min_level=min_level,
                limit=limit,
                start_ms=start_ms,
                end_ms=end_ms,
                direction=direction,
            )

        return self._read(read)


def _copy(settings: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return copy.deepcopy(dict(settings)) if settings is not None else None


def changes_of(drift: Drift) -> tuple[list[SettingChange], list[ScheduleChange]]:
    """A pass's drift as the plan's changes: the settings' and the schedule time zone's
    (`SettingChange`), then the schedules' (`ScheduleChange`)."""
    settings = [
        SettingChange(c.field, c.actual, c.desired) for c in (*drift.autoscaling, *drift.promotion)
    ]
    schedules: list[ScheduleChange] = []
    for change in drift.schedules.changes:
        if isinstance(change, TimezoneChange):
            settings.append(SettingChange(TIMEZONE_FIELD, change.actual, change.desired))
        else:
            schedules.append(ScheduleChange(change.name, change.verb))
    return settings, schedules


class MemoryKube:
    """Status and finalizer writes of a pass, kept in memory (the plan reads them back)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.finalizer_patches: list[tuple[str, list[str]]] = []

    def put(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.objects[(meta.get("namespace") or "", meta["name"])] = copy.deepcopy(obj)

    def stored(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((namespace, name))

    def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        return copy.deepcopy(self.objects[(namespace or "", name)])

    def update_status(self, res: Any, body: dict[str, Any]) -> dict[str, Any]:
        stored = copy.deepcopy(body)
        meta = stored["metadata"]
        meta["resourceVersion"] = str(int(meta.get("resourceVersion") or 0) + 1)
        self.put(stored)
        return copy.deepcopy(stored)

    def patch(
        self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        stored = self.objects[(namespace or "", name)]
        finalizers = list(patch.get("metadata", {}).get("finalizers") or [])
        stored["metadata"]["finalizers"] = finalizers
        self.finalizer_patches.append((name, finalizers))
        return copy.deepcopy(stored)


@dataclass(frozen=True)
class RecordedEvent:
    type: str
    reason: str
    message: str


class RecordedEvents:
    def __init__(self) -> None:
        self.events: list[RecordedEvent] = []

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.events.append(RecordedEvent(type, reason, message))


class RecordingPusher:
    """The pusher's interface: a push is recorded, not launched.

    `running` names the pushes the operator is running now, as the CRs' statuses say
    (a plan cannot see the operator's processes): the pass waits for those as it would.
    """

    def __init__(self, ledger: Ledger, running: set[str]) -> None:
        self._ledger = ledger
        self._running = running

    def has_capacity(self) -> bool:
        return True

    def in_flight(self, deployment_name: str) -> bool:
        return deployment_name in self._running

    def take_outcome(self, key: str) -> PushOutcome | None:
        return None

    def launch(self, req: PushRequest) -> bool:
        self._ledger.recording.actions.append(
            Push(req.deployment_name, req.model_name, req.model_id is None)
        )
        return True
