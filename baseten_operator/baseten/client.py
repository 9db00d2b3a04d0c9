"""Client of the Baseten management API (the operations in docs/baseten-api.md).

One instance is shared by every reconcile worker: its transport pools connections and
its rate limiter's buckets are per instance, so all threads draw from the same ones.
How each call is throttled and retried is the transport's business (transport.py).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from pydantic import SecretStr

from baseten_operator.baseten.connections import Connect, Connections
from baseten_operator.baseten.deployment_metrics import DeploymentMetrics
from baseten_operator.baseten.errors import (
    AmbiguousDeploymentName,
    AmbiguousModelName,
    BasetenAPIError,
    ConfigError,
)
from baseten_operator.baseten.models import (
    Ack,
    AuditLogPage,
    CancelPromotionAck,
    DeploymentList,
    DeploymentV1,
    EnvironmentList,
    EnvironmentUpdateAck,
    EnvironmentV1,
    LogList,
    LogV1,
    ModelList,
    ModelV1,
    RetryResult,
    SecretList,
    SecretTombstone,
    SecretV1,
    SettingsUpdateAck,
    SignalPromotionAck,
    SuccessAck,
    TeamList,
    TeamV1,
    Tombstone,
)
from baseten_operator.baseten.ratelimit import Limit
from baseten_operator.baseten.transport import (
    Endpoint,
    RetryPolicy,
    Secret,
    Transport,
    usable_api_key,
)
from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.fence import WriteFence

DEFAULT_BASE_URL = "https://api.baseten.co/v1"
# Total deadline of one call, retries and waits included (`--baseten-timeout`).
DEFAULT_TIMEOUT = 30.0
API_KEY_ENV = "BASETEN_API_KEY"
BASE_URL_ENV = "BASETEN_API_BASE_URL"

# Documented per-key, per-endpoint limits stricter than the default 100/s.
ACTIVATION_LIMIT = Limit(20, 60.0)
RETRY_LIMIT = Limit(10, 60.0)

_MODEL = "/models/{model_id}"
_DEPLOYMENT = _MODEL + "/deployments/{deployment_id}"
_ENVIRONMENT = _MODEL + "/environments/{env_name}"

LIST_MODELS = Endpoint("GET", "/models", idempotent=True)
LIST_TEAMS = Endpoint("GET", "/teams", idempotent=True)
LIST_TEAM_MODELS = Endpoint("GET", "/teams/{team_id}/models", idempotent=True)
DELETE_MODEL = Endpoint("DELETE", _MODEL, idempotent=True)
LIST_DEPLOYMENTS = Endpoint("GET", _MODEL + "/deployments", idempotent=True)
GET_DEPLOYMENT = Endpoint("GET", _DEPLOYMENT, idempotent=True)
DELETE_DEPLOYMENT = Endpoint("DELETE", _DEPLOYMENT, idempotent=True)
ACTIVATE_DEPLOYMENT = Endpoint("POST", _DEPLOYMENT + "/activate", False, ACTIVATION_LIMIT)
DEACTIVATE_DEPLOYMENT = Endpoint("POST", _DEPLOYMENT + "/deactivate", False, ACTIVATION_LIMIT)
RETRY_DEPLOYMENT = Endpoint("POST", _DEPLOYMENT + "/retry", False, RETRY_LIMIT)
# Settings PATCHes set absolute values: repeating one is harmless.
UPDATE_DEPLOYMENT_AUTOSCALING = Endpoint(
    "PATCH", _DEPLOYMENT + "/autoscaling_settings", idempotent=True
)
LIST_ENVIRONMENTS = Endpoint("GET", _MODEL + "/environments", idempotent=True)
GET_ENVIRONMENT = Endpoint("GET", _ENVIRONMENT, idempotent=True)
CREATE_ENVIRONMENT = Endpoint("POST", _MODEL + "/environments", idempotent=False)
UPDATE_ENVIRONMENT = Endpoint("PATCH", _ENVIRONMENT, idempotent=True)
PROMOTE = Endpoint("POST", _ENVIRONMENT + "/promote", idempotent=False)
# Not repeated blindly either: a second cancel must be a decision, not a retry. Nor are the
# rolling promotions' signals: a pause repeated after a resume would pause again.
CANCEL_PROMOTION = Endpoint("POST", _ENVIRONMENT + "/cancel_promotion", idempotent=False)
PAUSE_PROMOTION = Endpoint("POST", _ENVIRONMENT + "/pause_promotion", idempotent=False)
RESUME_PROMOTION = Endpoint("POST", _ENVIRONMENT + "/resume_promotion", idempotent=False)
FORCE_CANCEL_PROMOTION = Endpoint(
    "POST", _ENVIRONMENT + "/force_cancel_promotion", idempotent=False
)
FORCE_ROLL_FORWARD_PROMOTION = Endpoint(
    "POST", _ENVIRONMENT + "/force_roll_forward_promotion", idempotent=False
)

# What a model and its deployments did and how they serve: reads, retried as every GET.
LIST_AUDIT_LOGS = Endpoint("GET", _MODEL + "/audit_logs", idempotent=True)
GET_DEPLOYMENT_METRICS = Endpoint("GET", _DEPLOYMENT + "/metrics", idempotent=True)
GET_DEPLOYMENT_LOGS = Endpoint("GET", _DEPLOYMENT + "/logs", idempotent=True)

# Secrets: the workspace's (the caller's primary team) and a team's. An upsert is a POST:
# repeated only when it cannot have been sent, as every POST.
_SECRETS = "/secrets"
_TEAM_SECRETS = "/teams/{team_id}/secrets"
LIST_SECRETS = Endpoint("GET", _SECRETS, idempotent=True)
UPSERT_SECRET = Endpoint("POST", _SECRETS, idempotent=False)
DELETE_SECRET = Endpoint("DELETE", _SECRETS + "/{secret_name}", idempotent=True)
LIST_TEAM_SECRETS = Endpoint("GET", _TEAM_SECRETS, idempotent=True)
UPSERT_TEAM_SECRET = Endpoint("POST", _TEAM_SECRETS, idempotent=False)
DELETE_TEAM_SECRET = Endpoint("DELETE", _TEAM_SECRETS + "/{secret_name}", idempotent=True)

A = TypeVar("A", bound=Ack)


class BasetenClient:
    def __init__(
        self,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        connect: Connect | None = None,
        clock: Clock | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_attempts: int = 4,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        pool_size: int = 32,
        rng: random.Random | None = None,
        user_agent: str | None = None,
        time_scale: float = 1.0,
    ) -> None:
        """`timeout` is each call's total deadline, retries and waits included; `connect`
        (default: a pool of `pool_size` connections) builds what sends to `base_url`;
        `time_scale` (`--time-scale`) scales the windows of the client-side rate limits."""
        if not api_key or not api_key.strip():
            raise ConfigError(f"a Baseten API key is required (set {API_KEY_ENV})")
        if not usable_api_key(api_key.strip()):
            raise ConfigError(
                "the Baseten API key contains a line break or another character an HTTP "
                "header cannot carry"
            )
        self._base_url = base_url.rstrip("/")
        self._transport = Transport(
            Secret(api_key.strip()),
            self._base_url,
            http=(connect or (lambda url: Connections(url, pool_size)))(self._base_url),
            clock=clock if clock is not None else RealClock(),
            policy=RetryPolicy(
                max_attempts=max(1, max_attempts),
                deadline=timeout,
                connect_timeout=min(10.0, timeout),
                backoff_base=backoff_base,
                backoff_cap=backoff_cap,
            ),
            rng=rng if rng is not None else random.Random(),
            user_agent=user_agent,
            time_scale=time_scale,
        )

    @classmethod
    def from_env(
        cls,
        *,
        connect: Connect | None = None,
        clock: Clock | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        user_agent: str | None = None,
        time_scale: float = 1.0,
    ) -> BasetenClient:
        api_key = os.environ.get(API_KEY_ENV, "").strip()
        if not api_key:
            raise ConfigError(
                f"{API_KEY_ENV} is not set or empty: the operator needs a Baseten API key"
            )
        base_url = os.environ.get(BASE_URL_ENV, "").strip() or DEFAULT_BASE_URL
        return cls(
            api_key,
            base_url,
            connect=connect,
            clock=clock,
            timeout=timeout,
            user_agent=user_agent,
            time_scale=time_scale,
        )

    @property
    def base_url(self) -> str:
        return self._base_url

    def fence_writes(self, fence: WriteFence) -> None:
        """From now on every non-GET call passes `fence`, and every wait is interruptible by it."""
        self._transport.fence = fence

    def __repr__(self) -> str:
        return f"BasetenClient(base_url={self._base_url!r})"

    def _acknowledged(
        self,
        endpoint: Endpoint,
        path: Mapping[str, str],
        ack: type[A],
        body: Mapping[str, Any] | None = None,
    ) -> A:
        """Call an endpoint that answers an acknowledgement; a 200 that does not positively
        acknowledge (an `error` member, `deleted`/`success` not true, a settings status
        other than accepted) is a BasetenAPIError quoting the answer."""
        answer = self._transport.call(endpoint, path, ack, body=body)
        if not answer.accepted():
            raise self._transport.unacknowledged(endpoint, json.dumps(answer.answer()))
        return answer

    # --- models ---------------------------------------------------------------------------

    def list_models(self, name: str | None = None) -> list[ModelV1]:
        query = {"name": name} if name is not None else None
        return self._transport.call(LIST_MODELS, {}, ModelList, query=query).models

    def find_model(self, name: str) -> ModelV1 | None:
        """The model with exactly this name; None if none; AmbiguousModelName if several."""
        matches = [m for m in self.list_models(name) if m.name == name]
        if len(matches) > 1:
            raise AmbiguousModelName(name, [m.id for m in matches])
        return matches[0] if matches else None

    def delete_model(self, model_id: str) -> None:
        self._acknowledged(DELETE_MODEL, {"model_id": model_id}, Tombstone)

    # --- teams ------------------------------------------------------------------------------

    def list_teams(self, name: str | None = None) -> list[TeamV1]:
        query = {"name": name} if name is not None else None
        return self._transport.call(LIST_TEAMS, {}, TeamList, query=query).teams

    def list_team_models(self, team_id: str, name: str | None = None) -> list[ModelV1]:
        query = {"name": name} if name is not None else None
        path = {"team_id": team_id}
        return self._transport.call(LIST_TEAM_MODELS, path, ModelList, query=query).models

    # --- secrets ---------------------------------------------------------------------------

    def list_secrets(self) -> list[SecretV1]:
        """The names of the caller's primary team's secrets (values are never returned)."""
        return self._list_secrets(LIST_SECRETS, {})

    def upsert_secret(self, name: str, value: SecretStr) -> SecretV1:
        """Create the secret or give it a new value; its id stays the same."""
        return self._upsert_secret(UPSERT_SECRET, {}, name, value)

    def delete_secret(self, name: str) -> bool:
        """True when deleted, False when there was none of that name (404)."""
        return self._delete_secret(DELETE_SECRET, {"secret_name": name})

    def list_team_secrets(self, team_id: str) -> list[SecretV1]:
        return self._list_secrets(LIST_TEAM_SECRETS, {"team_id": team_id})

    def upsert_team_secret(self, team_id: str, name: str, value: SecretStr) -> SecretV1:
        return self._upsert_secret(UPSERT_TEAM_SECRET, {"team_id": team_id}, name, value)

    def delete_team_secret(self, team_id: str, name: str) -> bool:
        path = {"team_id": team_id, "secret_name": name}
        return self._delete_secret(DELETE_TEAM_SECRET, path)

    def _list_secrets(self, endpoint: Endpoint, path: Mapping[str, str]) -> list[SecretV1]:
        return self._transport.call(endpoint, path, SecretList).secrets

    def _upsert_secret(
        self, endpoint: Endpoint, path: Mapping[str, str], name: str, value: SecretStr
    ) -> SecretV1:
        # The one place the value is unwrapped: the request body. No error shows it.
        body = {"name": name, "value": value.get_secret_value()}
        return self._transport.call(endpoint, path, SecretV1, body=body, conceal=value)

    def _delete_secret(self, endpoint: Endpoint, path: Mapping[str, str]) -> bool:
        try:
            self._acknowledged(endpoint, path, SecretTombstone)
        except BasetenAPIError as error:
            if error.is_not_found:
                return False
            raise
        return True

    # --- deployments ----------------------------------------------------------------------

    def list_deployments(self, model_id: str, name: str | None = None) -> list[DeploymentV1]:
        query = {"name": name} if name is not None else None
        path = {"model_id": model_id}
        return self._transport.call(LIST_DEPLOYMENTS, path, DeploymentList, query=query).deployments

    def find_deployment(self, model_id: str, name: str) -> DeploymentV1 | None:
        matches = [d for d in self.list_deployments(model_id, name) if d.name == name]
        if len(matches) > 1:
            raise AmbiguousDeploymentName(name, [d.id for d in matches])
        return matches[0] if matches else None

    def get_deployment(self, model_id: str, deployment_id: str) -> DeploymentV1:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        return self._transport.call(GET_DEPLOYMENT, path, DeploymentV1)

    def delete_deployment(self, model_id: str, deployment_id: str) -> None:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        self._acknowledged(DELETE_DEPLOYMENT, path, Tombstone)

    def activate_deployment(self, model_id: str, deployment_id: str) -> None:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        self._acknowledged(ACTIVATE_DEPLOYMENT, path, SuccessAck)

    def deactivate_deployment(self, model_id: str, deployment_id: str) -> None:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        self._acknowledged(DEACTIVATE_DEPLOYMENT, path, SuccessAck)

    def retry_deployment(self, model_id: str, deployment_id: str) -> RetryResult:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        return self._transport.call(RETRY_DEPLOYMENT, path, RetryResult)

    def update_deployment_autoscaling(
        self, model_id: str, deployment_id: str, settings: Mapping[str, Any]
    ) -> None:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        self._acknowledged(UPDATE_DEPLOYMENT_AUTOSCALING, path, SettingsUpdateAck, dict(settings))

    # --- environments ---------------------------------------------------------------------

    def list_environments(self, model_id: str) -> list[EnvironmentV1]:
        path = {"model_id": model_id}
        return self._transport.call(LIST_ENVIRONMENTS, path, EnvironmentList).environments

    def get_environment(self, model_id: str, env_name: str) -> EnvironmentV1:
        """The environment; BasetenAPIError with is_not_found when it does not exist."""
        path = {"model_id": model_id, "env_name": env_name}
        return self._transport.call(GET_ENVIRONMENT, path, EnvironmentV1)

    def create_environment(
        self,
        model_id: str,
        name: str,
        autoscaling_settings: Mapping[str, Any] | None,
        promotion_settings: Mapping[str, Any] | None,
    ) -> EnvironmentV1:
        body: dict[str, Any] = {"name": name}
        body.update(_settings_body(autoscaling_settings, promotion_settings))
        return self._transport.call(
            CREATE_ENVIRONMENT, {"model_id": model_id}, EnvironmentV1, body=body
        )

    def update_environment(
        self,
        model_id: str,
        env_name: str,
        autoscaling_settings: Mapping[str, Any] | None,
        promotion_settings: Mapping[str, Any] | None,
        autoscaling_schedule_settings: Mapping[str, Any] | None = None,
    ) -> None:
        """PATCH the settings given, every group in one request (UpdateEnvironmentRequestV1
        takes all three). Applied asynchronously: a later GET shows the result."""
        body = _settings_body(autoscaling_settings, promotion_settings)
        if autoscaling_schedule_settings is not None:
            body["autoscaling_schedule_settings"] = dict(autoscaling_schedule_settings)
        if not body:
            return
        path = {"model_id": model_id, "env_name": env_name}
        self._acknowledged(UPDATE_ENVIRONMENT, path, EnvironmentUpdateAck, body)

    def promote(
        self,
        model_id: str,
        env_name: str,
        deployment_id: str,
        *,
        scale_down_previous_deployment: bool = True,
        preserve_env_instance_type: bool = True,
    ) -> DeploymentV1:
        """Start promoting; returns the deployment being promoted (possibly a new copy)."""
        body = {
            "deployment_id": deployment_id,
            "scale_down_previous_deployment": scale_down_previous_deployment,
            "preserve_env_instance_type": preserve_env_instance_type,
        }
        path = {"model_id": model_id, "env_name": env_name}
        return self._transport.call(PROMOTE, path, DeploymentV1, body=body)

    def cancel_promotion(self, model_id: str, env_name: str) -> CancelPromotionAck:
        """Stop the environment's promotion in progress: CANCELED (stopped) or RAMPING_DOWN
        (the candidate's traffic is being moved back first)."""
        path = {"model_id": model_id, "env_name": env_name}
        return self._acknowledged(CANCEL_PROMOTION, path, CancelPromotionAck)

    # Signals to a rolling promotion in progress (SignalPromotionResponseV1). Baseten
    # refuses one with no promotion, or one that is not rolling, with an error status.

    def pause_promotion(self, model_id: str, env_name: str) -> SignalPromotionAck:
        """Pause when the step in progress completes; no further step until resumed."""
        return self._signal(PAUSE_PROMOTION, model_id, env_name)

    def resume_promotion(self, model_id: str, env_name: str) -> SignalPromotionAck:
        """Carry a paused promotion on from where it was paused."""
        return self._signal(RESUME_PROMOTION, model_id, env_name)

    def force_cancel_promotion(self, model_id: str, env_name: str) -> SignalPromotionAck:
        """Cancel at once: all traffic back to the previous deployment."""
        return self._signal(FORCE_CANCEL_PROMOTION, model_id, env_name)

    def force_roll_forward_promotion(self, model_id: str, env_name: str) -> SignalPromotionAck:
        """Complete at once, all traffic to the candidate, even while rolling back."""
        return self._signal(FORCE_ROLL_FORWARD_PROMOTION, model_id, env_name)

    def _signal(self, endpoint: Endpoint, model_id: str, env_name: str) -> SignalPromotionAck:
        path = {"model_id": model_id, "env_name": env_name}
        return self._acknowledged(endpoint, path, SignalPromotionAck)

    # --- observability ----------------------------------------------------------------------

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
        """The deployment's metrics: `mode` CURRENT (no window), SUMMARY (one value set over
        the window) or SERIES; the window in epoch milliseconds (Baseten's defaults: the hour
        before now); `metrics` by name (none: Baseten's default three). Read the answer
        with its `summary` and `series` (deployment_metrics.py)."""
        query: list[tuple[str, str]] = [("mode", mode)]
        query += _window(start_ms, end_ms)
        query += [("metrics", name) for name in metrics]
        path = {"model_id": model_id, "deployment_id": deployment_id}
        return self._transport.call(GET_DEPLOYMENT_METRICS, path, DeploymentMetrics, query=query)

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
        """One page of the model's audit log, newest first (`limit` 1..200); the next page
        with `cursor=page.next_cursor` and the same filters. `start` and `end` must be
        timezone-aware."""
        query: list[tuple[str, str]] = [("limit", str(limit))]
        query += [("event_type_groups", group) for group in event_type_groups]
        query += _window(_epoch_ms(start), _epoch_ms(end))
        if cursor is not None:
            query.append(("cursor", cursor))
        path = {"model_id": model_id}
        return self._transport.call(LIST_AUDIT_LOGS, path, AuditLogPage, query=query)

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
        """The deployment's log lines (Baseten's default window: the last 30 minutes;
        `limit` 1..1000; `min_level` drops lines below it and lines without a level;
        `direction` asc or desc)."""
        query: list[tuple[str, str]] = [("limit", str(limit))]
        query += _window(start_ms, end_ms)
        if min_level is not None:
            query.append(("min_level", min_level))
        if direction is not None:
            query.append(("direction", direction))
        path = {"model_id": model_id, "deployment_id": deployment_id}
        return self._transport.call(GET_DEPLOYMENT_LOGS, path, LogList, query=query).logs


def _window(start_ms: int | None, end_ms: int | None) -> list[tuple[str, str]]:
    """A time window's query parameters (epoch milliseconds), those given."""
    bounds = (("start_epoch_millis", start_ms), ("end_epoch_millis", end_ms))
    return [(name, str(value)) for name, value in bounds if value is not None]


def _epoch_ms(moment: datetime | None) -> int | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        raise ValueError("a timezone-aware datetime is required (a naive one is ambiguous)")
    return int(moment.timestamp() * 1000)


def _settings_body(
    autoscaling_settings: Mapping[str, Any] | None, promotion_settings: Mapping[str, Any] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if autoscaling_settings is not None:
        body["autoscaling_settings"] = dict(autoscaling_settings)
    if promotion_settings is not None:
        body["promotion_settings"] = dict(promotion_settings)
    return body
