"""The recording, read-only world a plan's pass runs in.

- Baseten: `RecordingBaseten` wraps the real `BasetenClient`; reads go through, every
  write is recorded as an action and answered with a plausible stub, never sent. Under
  it, `read_only_session` refuses any non-GET before it leaves the process: a write the
  wrapper does not know of fails the plan instead of reaching Baseten.
- Kubernetes: `MemoryKube` keeps the status and finalizer writes of the pass in memory.
- Events and pushes: recorded (`RecordedEvents`, `RecordingPusher`), nothing emitted or launched.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.deadlines import DeadlineAdapter
from baseten_operator.baseten.models import (
    DeploymentV1,
    EnvironmentV1,
    ModelV1,
    RetryResult,
)
from baseten_operator.baseten.settings import Change
from baseten_operator.plan.actions import (
    Action,
    Activate,
    CreateEnvironment,
    Deactivate,
    DeleteModel,
    DeleteOrphan,
    Promote,
    Push,
    Retry,
    ScaleInOrphan,
    SettingChange,
    UpdateEnvironment,
)
from baseten_operator.truss.pusher import PushOutcome, PushRequest

# Methods that cannot change anything on the server.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class WriteRefused(RuntimeError):
    """A plan tried to send a write to Baseten. Not a requests error: nothing retries it."""


class ReadOnlyAdapter(DeadlineAdapter):
    """The transport's adapter, refusing every request that is not a read before sending."""

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        if (request.method or "").upper() not in READ_METHODS:
            raise WriteRefused(f"plan refused to send {request.method} {request.path_url}")
        return super().send(request, *args, **kwargs)


def read_only_session() -> requests.Session:
    session = requests.Session()
    adapter = ReadOnlyAdapter(max_retries=0)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def read_only_client_from_env(timeout: float) -> BasetenClient:
    """The client `run` would build (same env variables), on a read-only session."""
    return BasetenClient.from_env(
        session=read_only_session(), timeout=timeout, user_agent="baseten-operator-plan"
    )


@dataclass
class Recording:
    """What one pass would have done."""

    actions: list[Action] = field(default_factory=list)
    # Deployment names the pass looked up, and whether Baseten has them.
    found: dict[str, bool] = field(default_factory=dict)


class RecordingBaseten:
    """`BasetenClient`'s interface: reads from Baseten, writes into `recording`."""

    def __init__(self, client: BasetenClient) -> None:
        self._client = client
        self.recording = Recording()
        self._names: dict[str, str] = {}  # deployment id -> name, from every read
        self._environments: dict[tuple[str, str], EnvironmentV1] = {}
        self._models: dict[str, str] = {}  # model id -> name

    def start_pass(self) -> Recording:
        self.recording = Recording()
        return self.recording

    @property
    def base_url(self) -> str:
        return self._client.base_url

    def _record(self, action: Action) -> None:
        self.recording.actions.append(action)

    def _seen(self, *deployments: DeploymentV1 | None) -> None:
        for deployment in deployments:
            if deployment is not None:
                self._names[deployment.id] = deployment.name

    def _name(self, deployment_id: str) -> str:
        return self._names.get(deployment_id, deployment_id)

    def _seen_environment(self, environment: EnvironmentV1, model_id: str) -> None:
        self._environments[(model_id, environment.name)] = environment
        self._seen(environment.current_deployment, environment.candidate_deployment)

    # --- reads ----------------------------------------------------------------------------

    def list_models(self, name: str | None = None) -> list[ModelV1]:
        models = self._client.list_models(name)
        self._models.update({m.id: m.name for m in models})
        return models

    def find_model(self, name: str) -> ModelV1 | None:
        model = self._client.find_model(name)
        if model is not None:
            self._models[model.id] = model.name
        return model

    def list_deployments(self, model_id: str, name: str | None = None) -> list[DeploymentV1]:
        deployments = self._client.list_deployments(model_id, name)
        self._seen(*deployments)
        return deployments

    def find_deployment(self, model_id: str, name: str) -> DeploymentV1 | None:
        deployment = self._client.find_deployment(model_id, name)
        self._seen(deployment)
        self.recording.found[name] = deployment is not None
        return deployment

    def get_deployment(self, model_id: str, deployment_id: str) -> DeploymentV1:
        deployment = self._client.get_deployment(model_id, deployment_id)
        self._seen(deployment)
        return deployment

    def list_environments(self, model_id: str) -> list[EnvironmentV1]:
        environments = self._client.list_environments(model_id)
        for environment in environments:
            self._seen_environment(environment, model_id)
        return environments

    def get_environment(self, model_id: str, env_name: str) -> EnvironmentV1:
        environment = self._client.get_environment(model_id, env_name)
        self._seen_environment(environment, model_id)
        return environment

    def environment_seen(self, model_id: str, env_name: str) -> EnvironmentV1 | None:
        """The environment as this plan last read it (the "old" side of a settings diff)."""
        return self._environments.get((model_id, env_name))

    # --- writes: recorded, never sent ------------------------------------------------------

    def delete_model(self, model_id: str) -> None:
        self._record(DeleteModel(self._models.get(model_id, model_id), model_id, "", ""))

    def delete_deployment(self, model_id: str, deployment_id: str) -> None:
        self._record(DeleteOrphan(self._name(deployment_id), deployment_id))

    def activate_deployment(self, model_id: str, deployment_id: str) -> None:
        reactivate = any(
            env.current_deployment is not None and env.current_deployment.id == deployment_id
            for (mid, _), env in self._environments.items()
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
    ) -> None:
        # The changes (old→new) are filled in by the planner, from the spec and the
        # environment read, with the drift function the pass itself used.
        self._record(
            UpdateEnvironment(env_name, [], _copy(autoscaling_settings), _copy(promotion_settings))
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
        environment = self._environments.get((model_id, env_name))
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


def _copy(settings: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return copy.deepcopy(dict(settings)) if settings is not None else None


def changes_of(changes: list[Change]) -> list[SettingChange]:
    """`baseten.settings.Change`s as the plan's SettingChange."""
    return [SettingChange(c.field, c.actual, c.desired) for c in changes]


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

    def __init__(self, baseten: RecordingBaseten, running: set[str]) -> None:
        self._baseten = baseten
        self._running = running

    def has_capacity(self) -> bool:
        return True

    def in_flight(self, deployment_name: str) -> bool:
        return deployment_name in self._running

    def take_outcome(self, key: str) -> PushOutcome | None:
        return None

    def launch(self, req: PushRequest) -> bool:
        self._baseten.recording.actions.append(
            Push(req.deployment_name, req.model_name, req.model_id is None)
        )
        return True
