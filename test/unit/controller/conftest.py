"""Fakes for the reconciler's unit tests: Baseten, the kube API + informer cache, a pusher.

FakeBaseten, FakeKube and FakePusher implement the Protocols of controller/shared/ports.py
(BasetenAPI and KeyedBasetenAPI, KubeAPI, Pusher): mypy checks this file (pyproject.toml),
so a fake cannot drift from the interface the real clients implement.

Everything is reached through the `h` fixture (a Harness): test modules cannot import
each other or this file.
"""

from __future__ import annotations

import base64
import copy
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import SecretStr

from baseten_operator.api.constants import FINALIZER
from baseten_operator.baseten.deployment_metrics import (
    INFERENCE_REQUESTS,
    RESPONSE_TIME,
    DeploymentMetrics,
)
from baseten_operator.baseten.errors import AmbiguousModelName, BasetenAPIError
from baseten_operator.baseten.models import (
    AutoscalingSettingsV1,
    CancelPromotionAck,
    DeploymentV1,
    EnvironmentV1,
    InProgressPromotionV1,
    InstanceTypeV1,
    ModelV1,
    PromotionSettingsV1,
    RetryResult,
    SecretV1,
    SignalPromotionAck,
    TeamV1,
)
from baseten_operator.baseten.pool import BasetenClientPool
from baseten_operator.controller.basetenmodel.context import Dependencies
from baseten_operator.controller.basetenmodel.ownership import claim_index
from baseten_operator.controller.basetenmodel.reconciler import BasetenModelReconciler
from baseten_operator.controller.basetensecret.context import OperatorIdentity, SecretDependencies
from baseten_operator.controller.basetensecret.fingerprint import fingerprint_key
from baseten_operator.controller.basetensecret.ownership import secret_claim_index
from baseten_operator.controller.basetensecret.reconciler import BasetenSecretReconciler
from baseten_operator.controller.basetensecret.telemetry import LastSyncAges
from baseten_operator.controller.shared.ports import PrometheusAPI, SecretSource
from baseten_operator.controller.shared.tenancy import Tenancy
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.controller import Request, Result
from baseten_operator.runtime.errors import Conflict, Forbidden, NotFound
from baseten_operator.runtime.recorder import FakeRecorder
from baseten_operator.truss.pusher import PushOutcome, PushRequest

NAMESPACE = "default"
OPERATOR_NAMESPACE = "baseten-system"
NAME = "my-model"
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def not_found(what: str = "not found") -> BasetenAPIError:
    return BasetenAPIError(404, what)


class FakeBaseten:
    """In-memory Baseten: records every call, errors injectable per method."""

    READS = frozenset(
        {
            "find_model",
            "list_models",
            "list_teams",
            "list_team_models",
            "get_environment",
            "list_environments",
            "list_deployments",
            "find_deployment",
            "get_deployment",
            "list_secrets",
            "list_team_secrets",
            "get_deployment_metrics",
        }
    )

    def __init__(self) -> None:
        self.models: dict[str, ModelV1] = {}
        self.deployments: dict[str, list[DeploymentV1]] = {}
        self.environments: dict[tuple[str, str], EnvironmentV1] = {}
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.errors: dict[str, list[BasetenAPIError]] = {}
        self.retry_result: RetryResult | None = None
        self.promote_result: DeploymentV1 | None = None
        # What cancel_promotion answers: CANCELED (the promotion is gone at once) or
        # RAMPING_DOWN (it stays, in that phase, until the test ends it).
        self.cancel_answer = "CANCELED"
        self.ambiguous: list[str] | None = None
        self.teams: dict[str, str] = {}  # team name -> id
        self.model_teams: dict[str, str] = {}  # model id -> team id
        # Secrets by (team id, name), team None for the key's primary team; with their
        # values (Baseten never returns one) so that tests can assert what was written.
        self.secrets: dict[tuple[str | None, str], tuple[SecretV1, str]] = {}
        # A deployment's traffic as its metrics report it: (requests, 5xx, p99 seconds).
        self.traffic: dict[str, tuple[float, float, float | None]] = {}
        self._ids = itertools.count(1)

    # --- test setup ----------------------------------------------------------------------

    def fail(self, method: str, error: BasetenAPIError, times: int = 1) -> None:
        self.errors.setdefault(method, []).extend([error] * times)

    def add_model(self, name: str = "my-llm", model_id: str = "m1", team: str | None = None) -> str:
        self.models[model_id] = ModelV1(id=model_id, name=name)
        self.deployments.setdefault(model_id, [])
        if team is not None:
            self.model_teams[model_id] = self.teams.setdefault(team, f"team-{team}")
        return model_id

    def add_deployment(
        self, model_id: str = "m1", name: str = "src", **fields: Any
    ) -> DeploymentV1:
        fields.setdefault("id", f"d{next(self._ids)}")
        fields.setdefault("status", "ACTIVE")
        # Members Baseten always sends (DeploymentV1 requires them); a test of a partial
        # answer builds its deployment with DeploymentV1.model_validate instead.
        for member, value in (
            ("active_replica_count", 0),
            ("is_production", False),
            ("is_development", False),
            ("environment", None),
        ):
            fields.setdefault(member, value)
        deployment = DeploymentV1(name=name, model_id=model_id, **fields)
        self.deployments.setdefault(model_id, []).append(deployment)
        return deployment

    def add_environment(
        self,
        model_id: str = "m1",
        name: str = "production",
        *,
        current: DeploymentV1 | None = None,
        candidate: DeploymentV1 | None = None,
        autoscaling: dict[str, Any] | None = None,
        promotion: dict[str, Any] | None = None,
        schedules: dict[str, Any] | None = None,
        in_progress: dict[str, Any] | None = None,
        instance_type: str | None = None,
    ) -> EnvironmentV1:
        """`schedules`: the raw `autoscaling_schedules` (EnvironmentAutoscalingSchedulesV1);
        `in_progress`: the `in_progress_promotion` (InProgressPromotionV1)."""
        env = EnvironmentV1(
            name=name,
            model_id=model_id,
            current_deployment=current,
            candidate_deployment=candidate,
            autoscaling_settings=AutoscalingSettingsV1(**autoscaling) if autoscaling else None,
            promotion_settings=PromotionSettingsV1(**promotion) if promotion else None,
            autoscaling_schedules=schedules,
            in_progress_promotion=InProgressPromotionV1(**in_progress) if in_progress else None,
            instance_type=(
                InstanceTypeV1(id=instance_type, name=instance_type) if instance_type else None
            ),
        )
        self.environments[(model_id, name)] = env
        return env

    def add_secret(
        self, name: str, value: str = "secret-value", team: str | None = None
    ) -> SecretV1:
        """A secret created outside the operator; `team`: a team's, else the primary team's."""
        team_id = self.teams.setdefault(team, f"team-{team}") if team is not None else None
        return self._store_secret(team_id, name, value)

    def secret_value(self, name: str, team: str | None = None) -> str | None:
        team_id = self.teams.get(team) if team is not None else None
        stored = self.secrets.get((team_id, name))
        return stored[1] if stored is not None else None

    def _store_secret(self, team_id: str | None, name: str, value: str) -> SecretV1:
        known = self.secrets.get((team_id, name))
        secret = known[0] if known is not None else SecretV1(id=f"s{next(self._ids)}", name=name)
        self.secrets[(team_id, name)] = (secret, value)
        return secret

    def _secrets_of(self, team_id: str | None) -> list[SecretV1]:
        return [secret for (team, _), (secret, _) in self.secrets.items() if team == team_id]

    @property
    def writes(self) -> list[tuple[str, tuple[Any, ...]]]:
        return [call for call in self.calls if call[0] not in self.READS]

    def called(self, method: str) -> list[tuple[Any, ...]]:
        return [args for name, args in self.calls if name == method]

    # --- the BasetenClient API -------------------------------------------------------------

    def _enter(self, method: str, *args: Any) -> None:
        self.calls.append((method, args))
        queued = self.errors.get(method)
        if queued:
            raise queued.pop(0)

    def _model(self, model_id: str) -> None:
        if model_id not in self.models:
            raise not_found(f"model {model_id} not found")

    def find_model(self, name: str) -> ModelV1 | None:
        self._enter("find_model", name)
        if self.ambiguous:
            raise AmbiguousModelName(name, self.ambiguous)
        return next((m for m in self.models.values() if m.name == name), None)

    def list_teams(self, name: str | None = None) -> list[TeamV1]:
        self._enter("list_teams", name)
        return [
            TeamV1(id=team_id, name=team)
            for team, team_id in self.teams.items()
            if name is None or team == name
        ]

    def list_team_models(self, team_id: str, name: str | None = None) -> list[ModelV1]:
        self._enter("list_team_models", team_id, name)
        return [
            model
            for model_id, model in self.models.items()
            if self.model_teams.get(model_id) == team_id and (name is None or model.name == name)
        ]

    def delete_model(self, model_id: str) -> None:
        self._enter("delete_model", model_id)
        self._model(model_id)
        del self.models[model_id]

    def list_deployments(self, model_id: str, name: str | None = None) -> list[DeploymentV1]:
        self._enter("list_deployments", model_id)
        self._model(model_id)
        return [d for d in self.deployments[model_id] if name is None or d.name == name]

    def find_deployment(self, model_id: str, name: str) -> DeploymentV1 | None:
        self._enter("find_deployment", model_id, name)
        self._model(model_id)
        return next((d for d in self.deployments[model_id] if d.name == name), None)

    def get_deployment(self, model_id: str, deployment_id: str) -> DeploymentV1:
        self._enter("get_deployment", model_id, deployment_id)
        self._model(model_id)
        for deployment in self.deployments[model_id]:
            if deployment.id == deployment_id:
                return deployment
        raise not_found(f"deployment {deployment_id} not found")

    def delete_deployment(self, model_id: str, deployment_id: str) -> None:
        self._enter("delete_deployment", model_id, deployment_id)

    def activate_deployment(self, model_id: str, deployment_id: str) -> None:
        self._enter("activate_deployment", model_id, deployment_id)
        self._model(model_id)

    def retry_deployment(self, model_id: str, deployment_id: str) -> RetryResult:
        self._enter("retry_deployment", model_id, deployment_id)
        return self.retry_result or RetryResult(retried=True)

    def update_deployment_autoscaling(
        self, model_id: str, deployment_id: str, settings: Mapping[str, Any]
    ) -> None:
        self._enter("update_deployment_autoscaling", model_id, deployment_id, dict(settings))

    def list_environments(self, model_id: str) -> list[EnvironmentV1]:
        self._enter("list_environments", model_id)
        self._model(model_id)
        return [e for (mid, _), e in self.environments.items() if mid == model_id]

    def get_environment(self, model_id: str, env_name: str) -> EnvironmentV1:
        self._enter("get_environment", model_id, env_name)
        try:
            return self.environments[(model_id, env_name)]
        except KeyError:
            raise not_found(f"environment {env_name} not found") from None

    def create_environment(
        self,
        model_id: str,
        name: str,
        autoscaling_settings: Mapping[str, Any] | None,
        promotion_settings: Mapping[str, Any] | None,
    ) -> EnvironmentV1:
        self._enter("create_environment", model_id, name, autoscaling_settings, promotion_settings)
        self._model(model_id)
        return self.add_environment(model_id, name)

    def update_environment(
        self,
        model_id: str,
        env_name: str,
        autoscaling_settings: Mapping[str, Any] | None,
        promotion_settings: Mapping[str, Any] | None,
        autoscaling_schedule_settings: Mapping[str, Any] | None = None,
    ) -> None:
        self._enter(
            "update_environment",
            model_id,
            env_name,
            autoscaling_settings,
            promotion_settings,
            autoscaling_schedule_settings,
        )
        self._model(model_id)

    def promote(
        self,
        model_id: str,
        env_name: str,
        deployment_id: str,
        *,
        scale_down_previous_deployment: bool = True,
        preserve_env_instance_type: bool = True,
    ) -> DeploymentV1:
        self._enter(
            "promote",
            model_id,
            env_name,
            deployment_id,
            scale_down_previous_deployment,
            preserve_env_instance_type,
        )
        self._model(model_id)
        if self.promote_result is not None:
            return self.promote_result
        source = self.get_deployment(model_id, deployment_id)
        return source.model_copy(update={"status": "BUILDING"})

    def list_secrets(self) -> list[SecretV1]:
        self._enter("list_secrets")
        return self._secrets_of(None)

    def upsert_secret(self, name: str, value: SecretStr) -> SecretV1:
        self._enter("upsert_secret", name, value)
        return self._store_secret(None, name, value.get_secret_value())

    def delete_secret(self, name: str) -> bool:
        self._enter("delete_secret", name)
        return self.secrets.pop((None, name), None) is not None

    def list_team_secrets(self, team_id: str) -> list[SecretV1]:
        self._enter("list_team_secrets", team_id)
        return self._secrets_of(team_id)

    def upsert_team_secret(self, team_id: str, name: str, value: SecretStr) -> SecretV1:
        self._enter("upsert_team_secret", team_id, name, value)
        return self._store_secret(team_id, name, value.get_secret_value())

    def delete_team_secret(self, team_id: str, name: str) -> bool:
        self._enter("delete_team_secret", team_id, name)
        return self.secrets.pop((team_id, name), None) is not None

    def cancel_promotion(self, model_id: str, env_name: str) -> CancelPromotionAck:
        self._enter("cancel_promotion", model_id, env_name)
        env = self.get_environment(model_id, env_name)
        if self.cancel_answer == "CANCELED":
            update: dict[str, Any] = {"candidate_deployment": None, "in_progress_promotion": None}
        else:
            progress = env.in_progress_promotion or InProgressPromotionV1()
            update = {
                "in_progress_promotion": progress.model_copy(update={"status": "RAMPING_DOWN"})
            }
        self.environments[(model_id, env_name)] = env.model_copy(update=update)
        return CancelPromotionAck(status=self.cancel_answer, message="cancelled")

    # A stepped promotion's signals: recorded; the test moves the phase (set_phase), but a
    # force cancel rolls back at once, as Baseten's does.

    def pause_promotion(self, model_id: str, env_name: str) -> SignalPromotionAck:
        self._enter("pause_promotion", model_id, env_name)
        return SignalPromotionAck(success=True)

    def resume_promotion(self, model_id: str, env_name: str) -> SignalPromotionAck:
        self._enter("resume_promotion", model_id, env_name)
        return SignalPromotionAck(success=True)

    def force_cancel_promotion(self, model_id: str, env_name: str) -> SignalPromotionAck:
        self._enter("force_cancel_promotion", model_id, env_name)
        env = self.get_environment(model_id, env_name)
        update = {"candidate_deployment": None, "in_progress_promotion": None}
        self.environments[(model_id, env_name)] = env.model_copy(update=update)
        return SignalPromotionAck(success=True)

    def set_phase(
        self, status: str, percent: int, model_id: str = "m1", env_name: str = "production"
    ) -> None:
        """Baseten moves the promotion in progress to `status` at `percent`% traffic."""
        env = self.environments[(model_id, env_name)]
        progress = InProgressPromotionV1(status=status, percent_traffic_to_new_version=percent)
        self.environments[(model_id, env_name)] = env.model_copy(
            update={"in_progress_promotion": progress}
        )

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
        """The window's requests (200 and 500) and p99, from `traffic`; none: no data."""
        self._enter("get_deployment_metrics", model_id, deployment_id, mode, start_ms, end_ms)
        requests, errors, p99 = self.traffic.get(deployment_id, (0.0, 0.0, None))
        ok = {"status_code": "200", "rollout_phase": "promoting"}
        failed = {"status_code": "500", "rollout_phase": "promoting"}
        return DeploymentMetrics.model_validate(
            {
                "start_epoch_millis": start_ms,
                "end_epoch_millis": end_ms,
                "mode": mode,
                "step_seconds": None,
                "metric_descriptors": [
                    {"name": INFERENCE_REQUESTS, "unit_hint": "COUNT", "kind": "COUNTER",
                     "label_sets": [ok, failed]},
                    {"name": RESPONSE_TIME, "unit_hint": "SECONDS", "kind": "HISTOGRAM",
                     "label_sets": [{"quantile": "0.99"}]},
                ],
                "metric_values": [
                    {"start_epoch_millis": start_ms,
                     "values": [[requests - errors, errors], [p99]]},
                ],
            }
        )  # fmt: skip


class FakeKube:
    """The API server's copy of BasetenModels: optimistic concurrency on resourceVersion.

    `status_writes` are the writes that changed a status (each a new resourceVersion and a
    watch event); an unchanged one is still checked against the resourceVersion.
    """

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.status_writes: list[dict[str, Any]] = []
        self.patches: list[dict[str, Any]] = []
        self.conflicts = 0  # the next N status writes answer 409
        self._version = itertools.count(100)

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(next(self._version))
        meta = obj["metadata"]
        self.objects[(meta["namespace"], meta["name"])] = obj
        return copy.deepcopy(obj)

    def _stored(self, namespace: str, name: str) -> dict[str, Any]:
        try:
            return self.objects[(namespace, name)]
        except KeyError:
            raise NotFound(404, "NotFound", f"{name} not found") from None

    def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        return copy.deepcopy(self._stored(namespace or "", name))

    def update_status(self, res: Any, body: dict[str, Any]) -> dict[str, Any]:
        meta = body["metadata"]
        stored = self._stored(meta["namespace"], meta["name"])
        if self.conflicts:
            self.conflicts -= 1
            raise Conflict(409, "Conflict", "the object has been modified")
        if meta.get("resourceVersion") != stored["metadata"]["resourceVersion"]:
            raise Conflict(409, "Conflict", "the object has been modified")
        if body["status"] == stored.get("status"):
            # As the API server does: checked, but a no-op (same version, no watch event).
            return copy.deepcopy(stored)
        self.status_writes.append(copy.deepcopy(body["status"]))
        updated = copy.deepcopy(stored)
        updated["status"] = copy.deepcopy(body["status"])
        return self.put(updated)

    def patch(
        self, res: Any, name: str, body: dict[str, Any], namespace: str | None = None, **_: Any
    ) -> dict[str, Any]:
        stored = self._stored(namespace or "", name)
        wanted = body["metadata"].get("resourceVersion")
        if wanted and wanted != stored["metadata"]["resourceVersion"]:
            raise Conflict(409, "Conflict", "the object has been modified")
        self.patches.append(copy.deepcopy(body))
        updated = copy.deepcopy(stored)
        updated["metadata"]["finalizers"] = body["metadata"]["finalizers"]
        if not updated["metadata"]["finalizers"] and updated["metadata"].get("deletionTimestamp"):
            del self.objects[(namespace or "", name)]
            return updated
        return self.put(updated)


class Cache:
    """An always-synced informer over FakeKube."""

    def __init__(self, kube: FakeKube) -> None:
        self._kube = kube

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self._kube.objects.get((namespace or "", name))


class LaggingCache(Cache):
    """An informer that can fall behind: after `lag()` it serves the objects as they were
    then, as a watch that has not yet delivered the latest writes does."""

    def __init__(self, kube: FakeKube) -> None:
        super().__init__(kube)
        self._snapshot: dict[tuple[str, str], dict[str, Any]] | None = None

    def lag(self) -> None:
        self._snapshot = copy.deepcopy(self._kube.objects)

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        if self._snapshot is None:
            return super().get(namespace, name)
        return self._snapshot.get((namespace or "", name))


class ConfigMaps:
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, Any]] = {}

    def add(
        self,
        name: str,
        data: dict[str, str] | None = None,
        namespace: str = NAMESPACE,
        *,
        binary_data: dict[str, str] | None = None,
    ) -> None:
        configmap: dict[str, Any] = {"metadata": {"name": name, "namespace": namespace}}
        if data is not None:
            configmap["data"] = data
        if binary_data is not None:
            configmap["binaryData"] = binary_data
        self.items[(namespace, name)] = configmap

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.items.get((namespace or "", name))


class Namespaces:
    """The Namespace informer's cache: annotations only (what the operator reads). Every
    namespace exists, without annotations, unless annotated or listed in `unseen` (not in
    the cache yet)."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.unseen: set[str] = set()

    def annotate(self, namespace: str, **annotations: str | None) -> None:
        """Set (or, with None, remove) annotations; keys use `/`-less shorthands (see below).
        A new object each time, as the informer stores one per change (never an edit)."""
        changed = copy.deepcopy(self.items.get(namespace) or {"metadata": {"name": namespace}})
        self.items[namespace] = changed
        current = changed["metadata"].setdefault("annotations", {})
        for short, value in annotations.items():
            key = f"models.baseten.com/{short.replace('_', '-')}"
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        if name in self.unseen:
            return None
        return self.items.get(name, {"metadata": {"name": name}})


class Secrets:
    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}

    def put(self, name: str, data: dict[str, str]) -> None:
        encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
        self.items[name] = {
            "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
            "data": encoded,
        }

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.items.get(name) if namespace == OPERATOR_NAMESPACE else None


class FakePusher:
    def __init__(self) -> None:
        self.capacity = True
        self.accept = True
        self.launched: list[PushRequest] = []
        self.running: set[str] = set()
        self.outcomes: dict[str, PushOutcome] = {}

    def has_capacity(self) -> bool:
        return self.capacity

    def in_flight(self, deployment_name: str) -> bool:
        return deployment_name in self.running

    def launch(self, req: PushRequest) -> bool:
        if not self.accept:
            return False
        self.launched.append(req)
        self.running.add(req.deployment_name)
        return True

    def take_outcome(self, key: str) -> PushOutcome | None:
        return self.outcomes.pop(key, None)

    def finish(
        self,
        key: str,
        name: str,
        *,
        error: str | None = None,
        model_id: str | None = None,
    ) -> None:
        self.running.discard(name)
        self.outcomes[key] = PushOutcome(
            key=key,
            deployment_name=name,
            succeeded=error is None,
            error=error,
            model_id=model_id,
            deployment_id=None,
            duration=1.0,
        )


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Harness:
    baseten: FakeBaseten = field(default_factory=FakeBaseten)
    kube: FakeKube = field(default_factory=FakeKube)
    recorder: FakeRecorder = field(default_factory=FakeRecorder)
    clock: FakeClock = field(default_factory=lambda: FakeClock(START))
    configmaps: ConfigMaps = field(default_factory=ConfigMaps)
    pusher: FakePusher = field(default_factory=FakePusher)
    timing: Timing = field(default_factory=Timing)
    siblings: list[dict[str, Any]] = field(default_factory=list)
    namespaces: Namespaces = field(default_factory=Namespaces)
    secrets: Secrets = field(default_factory=Secrets)
    # Clients of namespaces' own keys, by key: FakeBaseten instances made on demand.
    keyed: dict[str, FakeBaseten] = field(default_factory=dict)
    require_namespace_policy: bool = False
    jitter: float = 0.0
    # Section 14's Prometheus checks: the Prometheus and the Secrets a check reads.
    prometheus: PrometheusAPI | None = None
    secrets_source: SecretSource | None = None
    # What the last pass did.
    writes: int = 0
    events: list[tuple[str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reconciler = self.make_reconciler()

    def make_reconciler(self) -> BasetenModelReconciler:
        deps = Dependencies(
            kube=self.kube,
            baseten=self.baseten,
            recorder=self.recorder,
            clock=self.clock,
            timing=self.timing,
            models=Cache(self.kube),
            configmaps=self.configmaps,
            siblings=lambda name: [
                s for s in self.siblings if (s.get("spec") or {}).get("modelName") == name
            ],
            claimants=lambda value: [
                obj for obj in self.kube.objects.values() if value in claim_index(obj)
            ],
            pusher=self.pusher,
            random=lambda: self.jitter,
            prometheus=self.prometheus,
            secrets=self.secrets_source,
            tenancy=Tenancy(
                namespaces=self.namespaces,
                secrets=self.secrets,
                pool=BasetenClientPool(self.baseten, self._client_for_key),
                operator_namespace=OPERATOR_NAMESPACE,
                require_policy=self.require_namespace_policy,
            ),
        )
        return BasetenModelReconciler(deps)

    def _client_for_key(self, api_key: str) -> FakeBaseten:
        return self.keyed.setdefault(api_key, FakeBaseten())

    # --- objects ---------------------------------------------------------------------------

    def create(
        self,
        spec: dict[str, Any] | None = None,
        *,
        status: dict[str, Any] | None = None,
        finalizer: bool = True,
        name: str = NAME,
        generation: int = 1,
        namespace: str = NAMESPACE,
        created: str | None = None,
        **spec_fields: Any,
    ) -> dict[str, Any]:
        body = (
            spec
            if spec is not None
            else {
                "modelName": "my-llm",
                "sourceDeploymentName": "src",
                "environment": {"name": "production"},
            }
        )
        body = {**copy.deepcopy(body), **spec_fields}
        obj: dict[str, Any] = {
            "apiVersion": "models.baseten.com/v1alpha1",
            "kind": "BasetenModel",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "generation": generation,
                "uid": f"uid-{name}",
                "finalizers": [FINALIZER] if finalizer else [],
            },
            "spec": body,
        }
        if created is not None:
            obj["metadata"]["creationTimestamp"] = created
        if status is not None:
            obj["status"] = status
        return self.kube.put(obj)

    def edit(
        self,
        change: Callable[[dict[str, Any]], None],
        name: str = NAME,
        namespace: str = NAMESPACE,
    ) -> None:
        obj = self.kube.get(None, name, namespace)
        change(obj)
        self.kube.objects[(namespace, name)] = obj

    def obj(self, name: str = NAME, namespace: str = NAMESPACE) -> dict[str, Any]:
        return self.kube.get(None, name, namespace)

    def status(self, name: str = NAME, namespace: str = NAMESPACE) -> dict[str, Any]:
        return self.obj(name, namespace).get("status") or {}

    def message(self) -> str:
        return str(self.status().get("message"))

    def word(self) -> str:
        return str(self.status().get("deploymentStatus"))

    # --- passes ----------------------------------------------------------------------------

    def run(self, name: str = NAME, namespace: str = NAMESPACE) -> Result:
        """One pass; `writes` and `events` then describe what it did."""
        writes_before = len(self.kube.status_writes)
        events_before = len(self.recorder.events)
        try:
            return self.reconciler.reconcile(Request(namespace, name))
        finally:
            self.writes = len(self.kube.status_writes) - writes_before
            self.events = self.recorder.events[events_before:]

    def steady_period(self, name: str = NAME, namespace: str = NAMESPACE) -> float:
        """The steady re-check of that object (jittered per object, section 9)."""
        return self.timing.steady_after(f"{namespace}/{name}", self.clock.now())

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.events]

    def event(self, reason: str) -> tuple[str, str]:
        """(type, message) of the last pass's only event with `reason`."""
        matches = [(t, m) for t, r, m in self.events if r == reason]
        assert len(matches) == 1, self.events
        return matches[0]

    # --- Baseten shorthands --------------------------------------------------------------

    def steady_world(
        self,
        *,
        status: str = "ACTIVE",
        replicas: int = 3,
        autoscaling: dict[str, Any] | None = None,
        name: str = "src",
        schedules: dict[str, Any] | None = None,
    ) -> DeploymentV1:
        self.baseten.add_model()
        current = self.baseten.add_deployment(
            name=name, status=status, active_replica_count=replicas, environment="production"
        )
        self.baseten.add_environment(
            current=current,
            autoscaling=autoscaling or {"min_replica": 1, "max_replica": 5},
            schedules=schedules,
        )
        return current


@pytest.fixture
def h() -> Harness:
    return Harness()


@pytest.fixture
def iso_time() -> Callable[[float], str]:
    return iso


# --- BasetenSecret --------------------------------------------------------------------------

SECRET_CR = "hf-token"
SECRET_NAME = "hf_token"
# The user the API server names when it refuses the operator a Secret.
OPERATOR_USER = "system:serviceaccount:baseten-system:baseten-operator-controller-manager"


class UserSecrets:
    """The referenced Secrets as the operator reads them (basetensecret/context.py's
    SecretSource): refused (403) in the namespaces listed in `forbidden`, as without the
    RoleBinding."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, Any]] = {}
        self.forbidden: set[str] = set()
        self.reads = 0

    def put(self, name: str, data: dict[str, bytes | str], namespace: str = NAMESPACE) -> None:
        encoded = {
            key: base64.b64encode(value if isinstance(value, bytes) else value.encode()).decode()
            for key, value in data.items()
        }
        self.items[(namespace, name)] = {
            "metadata": {"name": name, "namespace": namespace},
            "data": encoded,
        }

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.reads += 1
        if namespace in self.forbidden:
            raise Forbidden(
                403,
                "Forbidden",
                f'secrets "{name}" is forbidden: User "{OPERATOR_USER}" cannot get resource '
                f'"secrets" in API group "" in the namespace "{namespace}"',
            )
        return copy.deepcopy(self.items.get((namespace, name)))


@dataclass
class SecretHarness:
    """A BasetenSecret's passes on fakes and the fake clock (the `sh` fixture)."""

    baseten: FakeBaseten = field(default_factory=FakeBaseten)
    kube: FakeKube = field(default_factory=FakeKube)
    recorder: FakeRecorder = field(default_factory=FakeRecorder)
    clock: FakeClock = field(default_factory=lambda: FakeClock(START))
    timing: Timing = field(default_factory=Timing)
    secrets: UserSecrets = field(default_factory=UserSecrets)
    namespaces: Namespaces = field(default_factory=Namespaces)
    api_keys: Secrets = field(default_factory=Secrets)
    models: list[dict[str, Any]] = field(default_factory=list)
    keyed: dict[str, FakeBaseten] = field(default_factory=dict)
    synced: list[str] = field(default_factory=list)
    require_namespace_policy: bool = False
    writes: int = 0
    events: list[tuple[str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ages = LastSyncAges(self.clock)
        self.cache = LaggingCache(self.kube)
        self.reconciler = BasetenSecretReconciler(
            SecretDependencies(
                kube=self.kube,
                baseten=self.baseten,
                recorder=self.recorder,
                clock=self.clock,
                timing=self.timing,
                crs=self.cache,
                secrets=self.secrets,
                claimants=lambda name: [
                    obj for obj in self.kube.objects.values() if name in secret_claim_index(obj)
                ],
                models_naming=lambda name: [
                    model
                    for model in self.models
                    if name in ((model["spec"].get("trussConfig") or {}).get("secrets") or {})
                ],
                fingerprint_key=fingerprint_key("operator-api-key"),
                identity=OperatorIdentity(OPERATOR_NAMESPACE, "baseten-operator"),
                ages=self.ages,
                on_synced=self.synced.append,
                tenancy=Tenancy(
                    namespaces=self.namespaces,
                    secrets=self.api_keys,
                    pool=BasetenClientPool(
                        self.baseten, lambda key: self.keyed.setdefault(key, FakeBaseten())
                    ),
                    operator_namespace=OPERATOR_NAMESPACE,
                    require_policy=self.require_namespace_policy,
                ),
            )
        )

    def create(
        self,
        *,
        name: str = SECRET_CR,
        namespace: str = NAMESPACE,
        finalizer: bool = True,
        created: str = "2026-01-01T00:00:00Z",
        **spec: Any,
    ) -> dict[str, Any]:
        body = {"name": SECRET_NAME, "secretRef": {"name": "hf", "key": "token"}, **spec}
        return self.kube.put(
            {
                "apiVersion": "models.baseten.com/v1alpha1",
                "kind": "BasetenSecret",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "generation": 1,
                    "creationTimestamp": created,
                    "finalizers": [FINALIZER] if finalizer else [],
                },
                "spec": body,
            }
        )

    def edit(
        self,
        change: Callable[[dict[str, Any]], None],
        name: str = SECRET_CR,
        namespace: str = NAMESPACE,
    ) -> None:
        obj = self.kube.get(None, name, namespace)
        change(obj)
        self.kube.put(obj)

    def delete(self, name: str = SECRET_CR, namespace: str = NAMESPACE) -> None:
        self.edit(
            lambda obj: obj["metadata"].update(deletionTimestamp="2026-01-01T01:00:00Z"),
            name,
            namespace,
        )

    def add_model(self, name: str, *secret_names: str, namespace: str = NAMESPACE) -> None:
        self.models.append(
            {
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "modelName": name,
                    "environment": {"name": "production"},
                    "trussConfig": {
                        "resources": {"cpu": "1"},
                        "baseImage": {"image": "python:3.11"},
                        "secrets": {secret: "" for secret in secret_names},
                    },
                },
            }
        )

    def status(self, name: str = SECRET_CR, namespace: str = NAMESPACE) -> dict[str, Any]:
        return self.kube.get(None, name, namespace).get("status") or {}

    def run(self, name: str = SECRET_CR, namespace: str = NAMESPACE) -> Result:
        writes_before = len(self.kube.status_writes)
        events_before = len(self.recorder.events)
        try:
            return self.reconciler.reconcile(Request(namespace, name))
        finally:
            self.writes = len(self.kube.status_writes) - writes_before
            self.events = self.recorder.events[events_before:]

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.events]

    def upserts(self) -> list[tuple[Any, ...]]:
        return self.baseten.called("upsert_secret")


@pytest.fixture
def sh() -> SecretHarness:
    return SecretHarness()
