"""Client of the Baseten management API (the operations in reference/baseten-api.md).

One instance is shared by every reconcile worker: the session pools connections and
the rate limiter's buckets are per instance, so all threads draw from the same ones.

Retry policy (conservative: a duplicate promote or create is worse than an error):
- 429: every call waits what the server asks (`retry_after` in the body or the
  `Retry-After` header) and tries again, within a bounded number of attempts.
- 5xx: only idempotent calls (GET, DELETE, settings PATCH) are retried.
- connection errors: idempotent calls are retried; the others only when the
  connection failed before the request could have been sent.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import quote

import requests
import structlog
import urllib3.exceptions
from pydantic import BaseModel, ValidationError
from requests.adapters import HTTPAdapter

from baseten_operator.baseten.errors import (
    AmbiguousDeploymentName,
    AmbiguousModelName,
    BasetenAPIError,
    ConfigError,
)
from baseten_operator.baseten.models import (
    DeploymentList,
    DeploymentV1,
    EnvironmentList,
    EnvironmentV1,
    ModelList,
    ModelV1,
    RetryResult,
    SettingsUpdateAck,
    SuccessAck,
    Tombstone,
)
from baseten_operator.baseten.ratelimit import EndpointRateLimiter, Limit
from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.metrics import (
    BASETEN_API_LATENCY,
    BASETEN_API_REQUESTS,
    BASETEN_RATE_LIMIT_WAIT,
)

log = structlog.get_logger(__name__)

DEFAULT_BASE_URL = "https://api.baseten.co/v1"
API_KEY_ENV = "BASETEN_API_KEY"
BASE_URL_ENV = "BASETEN_API_BASE_URL"

# Documented per-key, per-endpoint limits.
DEFAULT_LIMIT = Limit(100, 1.0)
ACTIVATION_LIMIT = Limit(20, 60.0)
RETRY_LIMIT = Limit(10, 60.0)

# Error messages end up in CR status; keep them readable.
_MAX_MESSAGE_CHARS = 300
_REDACTED = "[REDACTED]"
# An Authorization header echoed in text (e.g. a dumped request): keep the scheme, drop the value.
_AUTH_HEADER_VALUE = re.compile(
    r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?(?:bearer|api-key)\s+)[^\s'\",}]+"
)

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Endpoint:
    """One API operation: its path template (relative to the base URL) and retry class."""

    method: str
    template: str
    idempotent: bool
    limit: Limit = DEFAULT_LIMIT

    @property
    def label(self) -> str:
        """The template as the API documents it, for metrics and logs (never a raw path)."""
        return "/v1" + self.template

    def path(self, params: Mapping[str, str]) -> str:
        return self.template.format(**{k: quote(v, safe="") for k, v in params.items()})


_MODEL = "/models/{model_id}"
_DEPLOYMENT = _MODEL + "/deployments/{deployment_id}"
_ENVIRONMENT = _MODEL + "/environments/{env_name}"

LIST_MODELS = Endpoint("GET", "/models", idempotent=True)
DELETE_MODEL = Endpoint("DELETE", _MODEL, idempotent=True)
LIST_DEPLOYMENTS = Endpoint("GET", _MODEL + "/deployments", idempotent=True)
GET_DEPLOYMENT = Endpoint("GET", _DEPLOYMENT, idempotent=True)
DELETE_DEPLOYMENT = Endpoint("DELETE", _DEPLOYMENT, idempotent=True)
ACTIVATE_DEPLOYMENT = Endpoint("POST", _DEPLOYMENT + "/activate", False, ACTIVATION_LIMIT)
DEACTIVATE_DEPLOYMENT = Endpoint("POST", _DEPLOYMENT + "/deactivate", False, ACTIVATION_LIMIT)
RETRY_DEPLOYMENT = Endpoint("POST", _DEPLOYMENT + "/retry", False, RETRY_LIMIT)
UPDATE_DEPLOYMENT_AUTOSCALING = Endpoint(
    "PATCH", _DEPLOYMENT + "/autoscaling_settings", idempotent=True
)
LIST_ENVIRONMENTS = Endpoint("GET", _MODEL + "/environments", idempotent=True)
GET_ENVIRONMENT = Endpoint("GET", _ENVIRONMENT, idempotent=True)
CREATE_ENVIRONMENT = Endpoint("POST", _MODEL + "/environments", idempotent=False)
UPDATE_ENVIRONMENT = Endpoint("PATCH", _ENVIRONMENT, idempotent=True)
PROMOTE = Endpoint("POST", _ENVIRONMENT + "/promote", idempotent=False)


class _Secret:
    """Holds the API key so that no repr, vars() dump or log of the client shows it."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__


class _BearerAuth(requests.auth.AuthBase):
    def __init__(self, api_key: _Secret) -> None:
        self._api_key = api_key

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self._api_key.value}"
        return request

    def __repr__(self) -> str:
        return "_BearerAuth(<redacted>)"


def _pooled_session(pool_size: int) -> requests.Session:
    session = requests.Session()
    # max_retries=0: retries are decided here, where we know what is safe to repeat.
    adapter = HTTPAdapter(pool_connections=4, pool_maxsize=pool_size, max_retries=0)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def _failed_before_sending(exc: requests.RequestException) -> bool:
    """True when the connection could not be opened, so the server never saw the request."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    if not isinstance(exc, requests.ConnectionError):
        return False
    reason: object = exc.args[0] if exc.args else None
    if isinstance(reason, urllib3.exceptions.MaxRetryError):
        reason = reason.reason
    return isinstance(reason, urllib3.exceptions.NewConnectionError)


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _MAX_MESSAGE_CHARS:
        return text[: _MAX_MESSAGE_CHARS - 1] + "…"
    return text


def _server_message(response: requests.Response) -> str:
    """The server's own explanation: JSON message/error/detail, else the plain text."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        for key in ("message", "error", "detail"):
            value = data.get(key)
            if value:
                return value if isinstance(value, str) else json.dumps(value)
    if response.text.strip():
        return response.text
    return response.reason or "no message"


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


class BasetenClient:
    def __init__(
        self,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        session: requests.Session | None = None,
        clock: Clock | None = None,
        timeout: float | tuple[float, float] = 30,
        max_attempts: int = 4,
        max_rate_limit_wait: float = 60.0,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        pool_size: int = 32,
        rng: random.Random | None = None,
    ) -> None:
        if not api_key or not api_key.strip():
            raise ConfigError(f"a Baseten API key is required (set {API_KEY_ENV})")
        self._api_key = _Secret(api_key.strip())
        self._auth = _BearerAuth(self._api_key)
        self._base_url = base_url.rstrip("/")
        self._session = session if session is not None else _pooled_session(pool_size)
        self._clock: Clock = clock if clock is not None else RealClock()
        self._timeout = timeout if isinstance(timeout, tuple) else (min(10.0, timeout), timeout)
        self._max_attempts = max(1, max_attempts)
        self._max_rate_limit_wait = max_rate_limit_wait
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._rng = rng if rng is not None else random.Random()
        self._limiter = EndpointRateLimiter(self._clock)

    @classmethod
    def from_env(
        cls,
        *,
        session: requests.Session | None = None,
        clock: Clock | None = None,
        timeout: float | tuple[float, float] = 30,
    ) -> BasetenClient:
        api_key = os.environ.get(API_KEY_ENV, "").strip()
        if not api_key:
            raise ConfigError(
                f"{API_KEY_ENV} is not set or empty: the operator needs a Baseten API key"
            )
        base_url = os.environ.get(BASE_URL_ENV, "").strip() or DEFAULT_BASE_URL
        return cls(api_key, base_url, session=session, clock=clock, timeout=timeout)

    @property
    def base_url(self) -> str:
        return self._base_url

    def __repr__(self) -> str:
        return f"BasetenClient(base_url={self._base_url!r})"

    # --- models ---------------------------------------------------------------------------

    def list_models(self, name: str | None = None) -> list[ModelV1]:
        query = {"name": name} if name is not None else None
        return self._call(LIST_MODELS, {}, ModelList, query=query).models

    def find_model(self, name: str) -> ModelV1 | None:
        """The model with exactly this name; None if none; AmbiguousModelName if several."""
        matches = [m for m in self.list_models(name) if m.name == name]
        if len(matches) > 1:
            raise AmbiguousModelName(name, [m.id for m in matches])
        return matches[0] if matches else None

    def delete_model(self, model_id: str) -> None:
        tombstone = self._call(DELETE_MODEL, {"model_id": model_id}, Tombstone)
        self._check_ack(DELETE_MODEL, tombstone.deleted, "deleted")

    # --- deployments ----------------------------------------------------------------------

    def list_deployments(self, model_id: str, name: str | None = None) -> list[DeploymentV1]:
        query = {"name": name} if name is not None else None
        path = {"model_id": model_id}
        return self._call(LIST_DEPLOYMENTS, path, DeploymentList, query=query).deployments

    def find_deployment(self, model_id: str, name: str) -> DeploymentV1 | None:
        matches = [d for d in self.list_deployments(model_id, name) if d.name == name]
        if len(matches) > 1:
            raise AmbiguousDeploymentName(name, [d.id for d in matches])
        return matches[0] if matches else None

    def get_deployment(self, model_id: str, deployment_id: str) -> DeploymentV1:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        return self._call(GET_DEPLOYMENT, path, DeploymentV1)

    def delete_deployment(self, model_id: str, deployment_id: str) -> None:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        tombstone = self._call(DELETE_DEPLOYMENT, path, Tombstone)
        self._check_ack(DELETE_DEPLOYMENT, tombstone.deleted, "deleted")

    def activate_deployment(self, model_id: str, deployment_id: str) -> None:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        ack = self._call(ACTIVATE_DEPLOYMENT, path, SuccessAck)
        self._check_ack(ACTIVATE_DEPLOYMENT, ack.success, "success")

    def deactivate_deployment(self, model_id: str, deployment_id: str) -> None:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        ack = self._call(DEACTIVATE_DEPLOYMENT, path, SuccessAck)
        self._check_ack(DEACTIVATE_DEPLOYMENT, ack.success, "success")

    def retry_deployment(self, model_id: str, deployment_id: str) -> RetryResult:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        return self._call(RETRY_DEPLOYMENT, path, RetryResult)

    def update_deployment_autoscaling(
        self, model_id: str, deployment_id: str, settings: Mapping[str, Any]
    ) -> None:
        path = {"model_id": model_id, "deployment_id": deployment_id}
        self._call(UPDATE_DEPLOYMENT_AUTOSCALING, path, SettingsUpdateAck, body=dict(settings))

    # --- environments ---------------------------------------------------------------------

    def list_environments(self, model_id: str) -> list[EnvironmentV1]:
        path = {"model_id": model_id}
        return self._call(LIST_ENVIRONMENTS, path, EnvironmentList).environments

    def get_environment(self, model_id: str, env_name: str) -> EnvironmentV1:
        """The environment; BasetenAPIError with is_not_found when it does not exist."""
        path = {"model_id": model_id, "env_name": env_name}
        return self._call(GET_ENVIRONMENT, path, EnvironmentV1)

    def create_environment(
        self,
        model_id: str,
        name: str,
        autoscaling_settings: Mapping[str, Any] | None,
        promotion_settings: Mapping[str, Any] | None,
    ) -> EnvironmentV1:
        body: dict[str, Any] = {"name": name}
        body.update(_settings_body(autoscaling_settings, promotion_settings))
        return self._call(CREATE_ENVIRONMENT, {"model_id": model_id}, EnvironmentV1, body=body)

    def update_environment(
        self,
        model_id: str,
        env_name: str,
        autoscaling_settings: Mapping[str, Any] | None,
        promotion_settings: Mapping[str, Any] | None,
    ) -> None:
        """PATCH the settings given. Applied asynchronously: a later GET shows the result."""
        body = _settings_body(autoscaling_settings, promotion_settings)
        if not body:
            return
        path = {"model_id": model_id, "env_name": env_name}
        self._call(UPDATE_ENVIRONMENT, path, SettingsUpdateAck, body=body)

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
        return self._call(PROMOTE, path, DeploymentV1, body=body)

    # --- transport ------------------------------------------------------------------------

    def _call(
        self,
        endpoint: Endpoint,
        path: Mapping[str, str],
        model: type[T],
        *,
        query: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> T:
        response = self._send(endpoint, path, query, body)
        try:
            data = response.json()
        except ValueError:
            raise self._malformed(endpoint, response, "body is not JSON") from None
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors(include_input=False, include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"]) or "body"
            raise self._malformed(endpoint, response, f"{where}: {first['msg']}") from None

    def _send(
        self,
        endpoint: Endpoint,
        path: Mapping[str, str],
        query: Mapping[str, str] | None,
        body: Mapping[str, Any] | None,
    ) -> requests.Response:
        """Send with throttling and retries; return a 2xx response or raise BasetenAPIError."""
        url = self._base_url + endpoint.path(path)
        attempt = 0
        while True:
            attempt += 1
            last_attempt = attempt >= self._max_attempts
            self._throttle(endpoint)
            started = self._clock.monotonic()
            try:
                response = self._session.request(
                    endpoint.method,
                    url,
                    params=query,
                    json=body,
                    auth=self._auth,
                    timeout=self._timeout,
                )
            except requests.RequestException as exc:
                self._record(endpoint, "0", started)
                error = BasetenAPIError(0, self._connection_message(endpoint, exc))
                safe_to_repeat = endpoint.idempotent or _failed_before_sending(exc)
                if last_attempt or not safe_to_repeat:
                    raise error from None
                self._back_off(endpoint, attempt, error)
                continue
            self._record(endpoint, str(response.status_code), started)
            status = response.status_code
            if 200 <= status < 300:
                return response
            error = BasetenAPIError(status, self._error_message(response))
            if status == 429:
                retry_after = self._retry_after(response)
                error.retry_after = retry_after
                if last_attempt or (retry_after or 0) > self._max_rate_limit_wait:
                    raise error
                if retry_after is None:
                    self._back_off(endpoint, attempt, error)
                else:
                    self._wait(endpoint, attempt, error, retry_after)
                    BASETEN_RATE_LIMIT_WAIT.labels(endpoint=endpoint.label).inc(retry_after)
                continue
            if status >= 500 and endpoint.idempotent and not last_attempt:
                self._back_off(endpoint, attempt, error)
                continue
            raise error

    def _throttle(self, endpoint: Endpoint) -> None:
        waited = self._limiter.acquire(endpoint.template, endpoint.limit)
        if waited > 0:
            BASETEN_RATE_LIMIT_WAIT.labels(endpoint=endpoint.label).inc(waited)

    def _record(self, endpoint: Endpoint, code: str, started: float) -> None:
        elapsed = self._clock.monotonic() - started
        BASETEN_API_REQUESTS.labels(
            endpoint=endpoint.label, method=endpoint.method, code=code
        ).inc()
        BASETEN_API_LATENCY.labels(endpoint=endpoint.label, method=endpoint.method).observe(elapsed)
        log.debug(
            "baseten request",
            method=endpoint.method,
            endpoint=endpoint.label,
            code=code,
            duration=round(elapsed, 4),
        )

    def _back_off(self, endpoint: Endpoint, attempt: int, error: BasetenAPIError) -> None:
        """Full-jitter-ish exponential backoff: half fixed, half random, capped."""
        ceiling = min(self._backoff_cap, self._backoff_base * 2 ** (attempt - 1))
        self._wait(endpoint, attempt, error, ceiling * (0.5 + self._rng.random() / 2))

    def _wait(self, endpoint: Endpoint, attempt: int, error: BasetenAPIError, delay: float) -> None:
        log.warning(
            "baseten request failed, retrying",
            method=endpoint.method,
            endpoint=endpoint.label,
            attempt=attempt,
            delay=round(delay, 3),
            error=str(error),
        )
        self._clock.sleep(delay)

    def _retry_after(self, response: requests.Response) -> float | None:
        """The longer of the body's `retry_after` and the `Retry-After` header (seconds or date)."""
        candidates: list[float] = []
        try:
            data = response.json()
        except ValueError:
            data = None
        if isinstance(data, dict):
            from_body = _number(data.get("retry_after"))
            if from_body is not None:
                candidates.append(from_body)
        header = response.headers.get("Retry-After")
        if header:
            from_header = _number(header.strip())
            if from_header is None:
                try:
                    from_header = parsedate_to_datetime(header).timestamp() - self._clock.now()
                except (TypeError, ValueError):
                    from_header = None
            if from_header is not None:
                candidates.append(from_header)
        return max(0.0, *candidates) if candidates else None

    def _check_ack(self, endpoint: Endpoint, ok: bool, field: str) -> None:
        if not ok:
            raise BasetenAPIError(200, f"{endpoint.method} {endpoint.label} answered {field}=false")

    def _malformed(
        self, endpoint: Endpoint, response: requests.Response, problem: str
    ) -> BasetenAPIError:
        return BasetenAPIError(
            response.status_code,
            self._safe(f"malformed response from {endpoint.method} {endpoint.label}: {problem}"),
        )

    def _error_message(self, response: requests.Response) -> str:
        return self._safe(_server_message(response))

    def _connection_message(self, endpoint: Endpoint, exc: requests.RequestException) -> str:
        kind = "timeout" if isinstance(exc, requests.Timeout) else "connection error"
        detail = f"{kind} on {endpoint.method} {endpoint.label}: {type(exc).__name__}: {exc}"
        return self._safe(detail)

    def _safe(self, text: str) -> str:
        """Text fit for an error: without the key or an echoed auth header, then shortened.

        Redaction comes first so truncation can never leave part of the key behind.
        """
        text = _AUTH_HEADER_VALUE.sub(lambda m: m.group(1) + _REDACTED, text)
        return _shorten(text.replace(self._api_key.value, _REDACTED))


def _settings_body(
    autoscaling_settings: Mapping[str, Any] | None, promotion_settings: Mapping[str, Any] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if autoscaling_settings is not None:
        body["autoscaling_settings"] = dict(autoscaling_settings)
    if promotion_settings is not None:
        body["promotion_settings"] = dict(promotion_settings)
    return body
