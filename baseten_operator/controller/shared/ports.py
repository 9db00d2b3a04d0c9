"""Everything a pass calls on what it talks to, with the real types (docs/design.md).

The reconciler's dependencies are these Protocols, never concrete classes, so mypy checks
every call a pass makes and every implementation given to it: the real clients
(`runtime.client.KubeClient`, `baseten.client.BasetenClient` and its team view
`baseten.teams.TeamScopedClient`, `truss.pusher.TrussPusher`), the namespace-scoped pusher
(`basetenmodel/scoped_pusher.py`), the recording world of `plan` (`plan/world.py`) and the
unit tests' fakes (`test/unit/controller/conftest.py`). A method a pass needs is added here first.

Arguments the reconciler passes by position are positional-only (`/`): an implementation
may name its parameters as it likes.

Separate from context.py so that modules context.py depends on can name them too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from pydantic import SecretStr

from baseten_operator.baseten.deployment_metrics import DeploymentMetrics
from baseten_operator.baseten.models import (
    CancelPromotionAck,
    DeploymentV1,
    EnvironmentV1,
    ModelV1,
    RetryResult,
    SecretV1,
    SignalPromotionAck,
)
from baseten_operator.baseten.teams import TeamDirectory
from baseten_operator.runtime.recorder import Recorder
from baseten_operator.runtime.resource import Resource
from baseten_operator.truss.pusher import PushOutcome, PushRequest

__all__ = [
    "BasetenAPI",
    "KeyedBasetenAPI",
    "KubeAPI",
    "Lookup",
    "ObjectCache",
    "PrometheusAPI",
    "Pusher",
    "Recorder",
    "SecretSource",
]


class KubeAPI(Protocol):
    """The API server, as a pass writes a BasetenModel: its status (re-reading it when a
    write conflicts) and its finalizer; and a setup script's ConfigMap, read whole when its
    metadata-only informer says it exists. Every other read comes from an informer cache."""

    def get(self, res: Resource, name: str, namespace: str | None = None, /) -> dict[str, Any]: ...

    def update_status(self, res: Resource, body: dict[str, Any], /) -> dict[str, Any]: ...

    def patch(
        self, res: Resource, name: str, body: dict[str, Any], namespace: str | None = None, /
    ) -> dict[str, Any]: ...


class BasetenAPI(Protocol):
    """The Baseten Management API calls of a pass (docs/baseten-api.md)."""

    # --- models -------------------------------------------------------------------------

    def find_model(self, name: str, /) -> ModelV1 | None: ...

    def delete_model(self, model_id: str, /) -> None: ...

    # --- deployments -------------------------------------------------------------------

    def list_deployments(self, model_id: str, /) -> list[DeploymentV1]: ...

    def find_deployment(self, model_id: str, name: str, /) -> DeploymentV1 | None: ...

    def get_deployment(self, model_id: str, deployment_id: str, /) -> DeploymentV1: ...

    def delete_deployment(self, model_id: str, deployment_id: str, /) -> None: ...

    def activate_deployment(self, model_id: str, deployment_id: str, /) -> None: ...

    def retry_deployment(self, model_id: str, deployment_id: str, /) -> RetryResult: ...

    def update_deployment_autoscaling(
        self, model_id: str, deployment_id: str, settings: Mapping[str, Any], /
    ) -> None: ...

    # --- environments ------------------------------------------------------------------

    def list_environments(self, model_id: str, /) -> list[EnvironmentV1]: ...

    def get_environment(self, model_id: str, env_name: str, /) -> EnvironmentV1: ...

    def create_environment(
        self,
        model_id: str,
        name: str,
        autoscaling_settings: Mapping[str, Any] | None,
        promotion_settings: Mapping[str, Any] | None,
        /,
    ) -> EnvironmentV1: ...

    def update_environment(
        self,
        model_id: str,
        env_name: str,
        autoscaling_settings: Mapping[str, Any] | None,
        promotion_settings: Mapping[str, Any] | None,
        autoscaling_schedule_settings: Mapping[str, Any] | None = None,
        /,
    ) -> None: ...

    def promote(
        self,
        model_id: str,
        env_name: str,
        deployment_id: str,
        /,
        *,
        scale_down_previous_deployment: bool = True,
        preserve_env_instance_type: bool = True,
    ) -> DeploymentV1: ...

    def cancel_promotion(self, model_id: str, env_name: str, /) -> CancelPromotionAck: ...

    # --- a stepped promotion's signals, and the candidate's metrics (docs/contract.md 14) ---

    def pause_promotion(self, model_id: str, env_name: str, /) -> SignalPromotionAck: ...

    def resume_promotion(self, model_id: str, env_name: str, /) -> SignalPromotionAck: ...

    def force_cancel_promotion(self, model_id: str, env_name: str, /) -> SignalPromotionAck: ...

    def get_deployment_metrics(
        self,
        model_id: str,
        deployment_id: str,
        /,
        *,
        mode: str,
        start_ms: int | None = None,
        end_ms: int | None = None,
        metrics: Sequence[str] = (),
    ) -> DeploymentMetrics: ...

    # --- secrets (the workspace's, or a team view's team's) ----------------------------

    def list_secrets(self, /) -> list[SecretV1]: ...

    def upsert_secret(self, name: str, value: SecretStr, /) -> SecretV1: ...

    def delete_secret(self, name: str, /) -> bool: ...


class KeyedBasetenAPI(BasetenAPI, TeamDirectory, Protocol):
    """The client of one API key, as the client pool holds it (tenancy.py): a pass's calls,
    and the team lookups through which a namespace's team view resolves model names."""


class Pusher(Protocol):
    """The background truss pusher (docs/contract.md section 5): a pass launches a push and
    takes its outcome on a later pass; it never waits for one."""

    def has_capacity(self) -> bool: ...

    def in_flight(self, deployment_name: str, /) -> bool: ...

    def take_outcome(self, key: str, /) -> PushOutcome | None: ...

    def launch(self, req: PushRequest, /) -> bool: ...


class SecretSource(Protocol):
    """Secrets in the CRs' namespaces, read when a pass needs one (a BasetenSecret's value, a
    Prometheus token): the Secret, None when it does not exist; the API server's
    `Forbidden` when the namespace has not let the operator read it."""

    def get(self, namespace: str, name: str, /) -> dict[str, Any] | None: ...


class PrometheusAPI(Protocol):
    """Instant queries to a user's Prometheus (basetenmodel/prometheus.py)."""

    def query(
        self, address: str, query: str, /, *, token: str | None, ca_pem: str | None
    ) -> float | None:
        """The query's one number now; None when it has no result. PrometheusError when
        Prometheus cannot be asked or answers with an error."""
        ...


class ObjectCache(Protocol):
    """An informer's store: the object as last seen, or None."""

    def get(self, namespace: str | None, name: str, /) -> dict[str, Any] | None: ...


# Raw objects by an index value, as an informer's `by_index` gives them: a BasetenModel's
# siblings (by model name) and rivals (by claimed environment), a BasetenSecret's rivals (by
# Baseten secret name) and the BasetenModels naming its secret.
Lookup = Callable[[str], list[dict[str, Any]]]
