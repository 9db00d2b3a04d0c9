"""The Management API routes under /v1 the operator uses, mapped onto the engine."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote

from baseten_operator.sim.baseten.audit_logs import AuditQuery
from baseten_operator.sim.baseten.deployment_logs import LogsQuery
from baseten_operator.sim.baseten.deployment_metrics import MetricsQuery
from baseten_operator.sim.baseten.engine import SimEngine
from baseten_operator.sim.baseten.errors import SimError, bad_request
from baseten_operator.sim.baseten.payloads import (
    AutoscalingUpdate,
    Body,
    CreateEnvironment,
    Promote,
    UpdateEnvironment,
    UpsertSecret,
    parse,
)
from baseten_operator.sim.baseten.promotion_signals import SIGNALS, PromotionSignals
from baseten_operator.sim.baseten.records import DEFAULT_TEAM_ID

Params = dict[str, str]
# The team of the key that made the call ("" for an organisation key): what lists show it.
CALLER_TEAM = "caller_team"
RouteHandler = Callable[[SimEngine, Params, dict[str, list[str]], Any], Any]


def _as_sent(body: Any) -> Any:
    return body


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    endpoint: str  # the name rate limits and faults are keyed on
    handler: RouteHandler
    # The request body as the audit log keeps it.
    audited: Callable[[Any], Any] = _as_sent


def _parse(model: type[Body], body: Any, *, echo_input: bool = True) -> Body:
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    return parse(model, body, "Invalid request body", echo_input=echo_input)


def _name(query: dict[str, list[str]]) -> str | None:
    names = query.get("name")
    return names[0] if names else None


def _caller_team(p: Params) -> str | None:
    return p.get(CALLER_TEAM) or None


def _list_models(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    return {"models": e.list_models(_name(q), _caller_team(p))}


def _list_teams(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    return {"teams": e.list_teams(_name(q), _caller_team(p))}


def _list_team_models(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    return {"models": e.list_models(_name(q), p["team_id"])}


def _list_deployments(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    return {"deployments": e.list_deployments(p["model_id"], _name(q))}


def _update_autoscaling(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    changes = _parse(AutoscalingUpdate, b).changes()
    return e.update_deployment_autoscaling(p["model_id"], p["deployment_id"], changes)


def _deployment_metrics(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    return e.deployment_metrics(p["model_id"], p["deployment_id"], MetricsQuery.parse(q))


def _deployment_logs(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    return e.deployment_logs(p["model_id"], p["deployment_id"], LogsQuery.parse(q))


def _list_audit_logs(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    return e.list_audit_logs(p["model_id"], AuditQuery.parse(q))


def _list_environments(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    return {"environments": e.list_environments(p["model_id"])}


def _create_environment(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    req = _parse(CreateEnvironment, b)
    return e.create_environment(
        p["model_id"], req.name, req.autoscaling_changes(), req.promotion_changes()
    )


def _update_environment(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    req = _parse(UpdateEnvironment, b)
    return e.update_environment(
        p["model_id"],
        p["env_name"],
        req.autoscaling_changes(),
        req.promotion_changes(),
        req.schedule_edit(),
    )


def _promote(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    req = _parse(Promote, b)
    return e.promote(
        p["model_id"],
        p["env_name"],
        req.deployment_id,
        scale_down_previous_deployment=req.scale_down_previous_deployment,
        preserve_env_instance_type=req.preserve_env_instance_type,
    )


def _secrets_team(p: Params) -> str:
    """The team a secrets call works on: the path's, else the caller's primary team (a team
    key's own, the organisation's default team for an organisation key)."""
    return p.get("team_id") or _caller_team(p) or DEFAULT_TEAM_ID


def _list_secrets(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    return {"secrets": e.secrets.list_secrets(_secrets_team(p))}


def _upsert_secret(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    req = _parse(UpsertSecret, b, echo_input=False)
    return e.secrets.upsert(_secrets_team(p), req.name, req.value.get_secret_value())


def _delete_secret(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
    return e.secrets.delete(_secrets_team(p), p["secret_name"])


def _upsert_audited(body: Any) -> Any:
    """An upsert as the audit log keeps it: the name, never the value."""
    return {"name": body.get("name")} if isinstance(body, dict) else None


_MODEL = "/v1/models/(?P<model_id>[^/]+)"
_DEPLOYMENT = _MODEL + "/deployments/(?P<deployment_id>[^/]+)"
_ENVIRONMENT = _MODEL + "/environments/(?P<env_name>[^/]+)"


def _signal_handler(signal: Callable[[PromotionSignals, str, str], dict]) -> RouteHandler:
    def handle(e: SimEngine, p: Params, q: dict[str, list[str]], b: Any) -> Any:
        return signal(e.promotion_signals, p["model_id"], p["env_name"])

    return handle


def _route(
    method: str,
    path: str,
    endpoint: str,
    handler: RouteHandler,
    audited: Callable[[Any], Any] = _as_sent,
) -> Route:
    return Route(method, re.compile(f"^{path}/?$"), endpoint, handler, audited)


def _secret_routes(path: str, prefix: str) -> tuple[Route, ...]:
    """List, upsert and delete under `path` (the workspace's or a team's), their endpoint
    names starting with `prefix`."""
    return (
        _route("GET", path, f"list_{prefix}secrets", _list_secrets),
        _route("POST", path, f"upsert_{prefix}secret", _upsert_secret, _upsert_audited),
        _route(
            "DELETE", path + "/(?P<secret_name>[^/]+)", f"delete_{prefix}secret", _delete_secret
        ),
    )


ROUTES: tuple[Route, ...] = (
    _route("GET", "/v1/teams", "list_teams", _list_teams),
    _route("GET", "/v1/teams/(?P<team_id>[^/]+)/models", "list_team_models", _list_team_models),
    *_secret_routes("/v1/secrets", ""),
    *_secret_routes("/v1/teams/(?P<team_id>[^/]+)/secrets", "team_"),
    _route("GET", "/v1/models", "list_models", _list_models),
    _route("GET", _MODEL, "get_model", lambda e, p, q, b: e.get_model(p["model_id"])),
    _route("DELETE", _MODEL, "delete_model", lambda e, p, q, b: e.delete_model(p["model_id"])),
    _route("GET", _MODEL + "/audit_logs", "list_audit_logs", _list_audit_logs),
    _route("GET", _MODEL + "/deployments", "list_deployments", _list_deployments),
    _route(
        "GET",
        _DEPLOYMENT,
        "get_deployment",
        lambda e, p, q, b: e.get_deployment(p["model_id"], p["deployment_id"]),
    ),
    _route(
        "DELETE",
        _DEPLOYMENT,
        "delete_deployment",
        lambda e, p, q, b: e.delete_deployment(p["model_id"], p["deployment_id"]),
    ),
    _route(
        "POST",
        _DEPLOYMENT + "/activate",
        "activate",
        lambda e, p, q, b: e.activate(p["model_id"], p["deployment_id"]),
    ),
    _route(
        "POST",
        _DEPLOYMENT + "/deactivate",
        "deactivate",
        lambda e, p, q, b: e.deactivate(p["model_id"], p["deployment_id"]),
    ),
    _route(
        "POST",
        _DEPLOYMENT + "/retry",
        "retry",
        lambda e, p, q, b: e.retry(p["model_id"], p["deployment_id"]),
    ),
    _route(
        "PATCH",
        _DEPLOYMENT + "/autoscaling_settings",
        "update_deployment_autoscaling",
        _update_autoscaling,
    ),
    _route("GET", _DEPLOYMENT + "/metrics", "get_deployment_metrics", _deployment_metrics),
    _route("GET", _DEPLOYMENT + "/logs", "get_deployment_logs", _deployment_logs),
    _route("GET", _MODEL + "/environments", "list_environments", _list_environments),
    _route("POST", _MODEL + "/environments", "create_environment", _create_environment),
    _route(
        "GET",
        _ENVIRONMENT,
        "get_environment",
        lambda e, p, q, b: e.get_environment(p["model_id"], p["env_name"]),
    ),
    _route("PATCH", _ENVIRONMENT, "update_environment", _update_environment),
    _route(
        "DELETE",
        _ENVIRONMENT,
        "delete_environment",
        lambda e, p, q, b: e.delete_environment(p["model_id"], p["env_name"]),
    ),
    _route("POST", _ENVIRONMENT + "/promote", "promote", _promote),
    *(
        _route("POST", f"{_ENVIRONMENT}/{operation}", operation, _signal_handler(signal))
        for operation, signal in SIGNALS.items()
    ),
)


@dataclass(frozen=True)
class Match:
    route: Route
    params: Params


def match_route(method: str, path: str) -> Match:
    """The route for a request; 404 for an unknown path, 405 for a known path's other methods."""
    path_known = False
    for route in ROUTES:
        found = route.pattern.match(path)
        if found is None:
            continue
        path_known = True
        if route.method == method:
            return Match(route, {k: unquote(v) for k, v in found.groupdict().items()})
    if path_known:
        raise SimError(405, "METHOD_NOT_ALLOWED", f"{method} is not allowed on {path}")
    raise SimError(404, "NOT_FOUND", f"No route for {path}")


def call(
    engine: SimEngine, match: Match, query: str, body: Any, caller_team: str | None = None
) -> Any:
    params = {**match.params, CALLER_TEAM: caller_team or ""}
    return match.route.handler(engine, params, parse_qs(query), body)
