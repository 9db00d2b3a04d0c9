"""The request pipeline: routing, auth, request log, injected faults, rate limits, audit."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from prometheus_client import CONTENT_TYPE_LATEST

from baseten_operator.runtime.clock import Clock
from baseten_operator.sim.baseten import rest
from baseten_operator.sim.baseten.access import check_route
from baseten_operator.sim.baseten.audit import AuditLog, RequestLog
from baseten_operator.sim.baseten.audit_trail import acting_as, api_key_actor
from baseten_operator.sim.baseten.engine import SimEngine
from baseten_operator.sim.baseten.errors import SimError
from baseten_operator.sim.baseten.faults import Fault, FaultInjector, omit_members
from baseten_operator.sim.baseten.graphql import (
    MUTATIONS,
    GraphQLError,
    TrussGraphQL,
    parse_root_field,
)
from baseten_operator.sim.baseten.http import Request, Response, json_response
from baseten_operator.sim.baseten.keys import ApiKey, KeyRing
from baseten_operator.sim.baseten.ratelimit import RateLimiter
from baseten_operator.sim.baseten.s3 import S3Store

RATE_LIMIT_MESSAGE = "Rate limit exceeded. Please try again later."
# Baseten's Prometheus export (app.baseten.co/metrics), and its name for faults.
METRICS_PATH = "/metrics"
METRICS_EXPORT = "metrics_export"
CONTROL_PREFIX = "/_sim/"
GRAPHQL_PATHS = ("/graphql", "/graphql/")
# Push arguments left out of the audit log: encoded blobs nobody reads there.
_BULKY_ARGS = frozenset({"config", "raw_config", "truss_user_env"})


def error_response(error: SimError) -> Response:
    return json_response(error.status, error.body())


def rate_limited(retry_after: int) -> Response:
    return json_response(429, {"error": RATE_LIMIT_MESSAGE, "retry_after": retry_after})


def _without_members(response: Response, paths: list[str]) -> Response:
    if response.status != 200:
        return response
    payload = json.loads(response.body)
    for path in paths:
        omit_members(payload, path)
    return json_response(200, payload)


class SimApp:
    def __init__(
        self,
        *,
        api_key: str,
        clock: Clock,
        time_scale: float,
        engine: SimEngine,
        graphql: TrussGraphQL,
        s3: S3Store,
        faults: FaultInjector,
        limiter: RateLimiter,
        audit: AuditLog,
        requests: RequestLog,
        control: Callable[[Request], Response],
        keys: KeyRing | None = None,
    ) -> None:
        self._keys = keys if keys is not None else KeyRing(api_key)
        self._clock = clock
        self._time_scale = time_scale
        self._engine = engine
        self._graphql = graphql
        self._s3 = s3
        self._faults = faults
        self._limiter = limiter
        self._audit = audit
        self._requests = requests
        self._control = control

    def __call__(self, request: Request) -> Response | None:
        if request.path.startswith(CONTROL_PREFIX):
            return self._control(request)
        if request.path in GRAPHQL_PATHS:
            return self._handle_graphql(request)
        if request.path == "/v1" or request.path.startswith("/v1/"):
            return self._handle_rest(request)
        if request.path == METRICS_PATH and request.method == "GET":
            return self._handle_metrics_export(request)
        if request.method in ("PUT", "POST", "DELETE") and request.path.count("/") >= 2:
            return self._with_fault(request, ["s3"], lambda: self._handle_s3(request))
        return error_response(SimError(404, "NOT_FOUND", f"No route for {request.path}"))

    # ----------------------------------------------------------------- shared steps

    def _authenticated_key(self, request: Request) -> tuple[str, ApiKey] | None:
        """The key the request carries and what it is, if it is one we know."""
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() not in ("bearer", "api-key"):
            return None
        known = self._keys.lookup(key)
        return (key.strip(), known) if known is not None else None

    def _with_fault(
        self, request: Request, endpoints: list[str], proceed: Callable[[], Response]
    ) -> Response | None:
        fault = self._faults.take(endpoints)
        self._requests.record(
            method=request.method,
            path=request.path,
            time=self._clock.now(),
            user_agent=request.headers.get("user-agent"),
            fault=fault.kind if fault is not None else None,
        )
        if fault is None:
            return proceed()
        return self._apply_fault(fault, request, proceed)

    def _apply_fault(
        self, fault: Fault, request: Request, proceed: Callable[[], Response]
    ) -> Response | None:
        if fault.kind == "latency":
            time.sleep(fault.seconds * self._time_scale)
            return proceed()
        if fault.kind == "5xx":
            return json_response(
                fault.status,
                {"code": "INTERNAL", "message": "injected server error", "details": None},
            )
        if fault.kind == "429":
            return rate_limited(fault.retry_after)
        if fault.kind == "echo":
            return json_response(fault.status, echoed_credentials(request))
        if fault.kind == "body":
            return json_response(200, fault.body)
        if fault.kind == "omit":
            return _without_members(proceed(), fault.omitted)
        return None  # "drop"

    def _audit_entry(
        self, request: Request, body: Any, status: int, endpoint: str, caller: ApiKey
    ) -> None:
        self._audit.record(
            method=request.method,
            path=request.path,
            body=body,
            time=self._clock.now(),
            status=status,
            endpoint=endpoint,
            key=caller.label,
            user_agent=request.headers.get("user-agent"),
        )

    # ----------------------------------------------------------------- REST

    def _handle_rest(self, request: Request) -> Response | None:
        authenticated = self._authenticated_key(request)
        if authenticated is None:
            return error_response(SimError(401, "UNAUTHENTICATED", "Invalid or missing API key"))
        key, caller = authenticated
        try:
            match = rest.match_route(request.method, request.path)
        except SimError as exc:
            return error_response(exc)
        endpoint = match.route.endpoint
        return self._with_fault(
            request, [endpoint], lambda: self._call_rest(request, key, caller, match)
        )

    def _call_rest(self, request: Request, key: str, caller: ApiKey, match: rest.Match) -> Response:
        endpoint = match.route.endpoint
        retry_after = self._limiter.check(key, endpoint)
        if retry_after is not None:
            return rate_limited(retry_after)
        body: Any = None
        try:
            body = request.json()
            check_route(self._engine, caller, match.params, request.method)
            with acting_as(api_key_actor(key, caller.label)):
                result = rest.call(self._engine, match, request.query, body, caller.team_id)
            response = json_response(200, result)
        except ValueError:
            response = error_response(SimError(400, "BAD_REQUEST", "Request body is not JSON"))
        except SimError as exc:
            response = error_response(exc)
        if request.method != "GET":
            audited = match.route.audited(body)
            self._audit_entry(request, audited, response.status, endpoint, caller)
        return response

    # ----------------------------------------------------------------- metrics export

    def _handle_metrics_export(self, request: Request) -> Response | None:
        """Baseten's Prometheus scrape endpoint, with the API key (`Api-Key` or `Bearer`).
        Its rate limit (6 a minute per organisation) is not played: tests scrape fast."""
        authenticated = self._authenticated_key(request)
        if authenticated is None:
            return error_response(SimError(401, "UNAUTHENTICATED", "Invalid or missing API key"))
        _, caller = authenticated

        def export() -> Response:
            body = self._engine.metrics_export(caller.team_id)
            return Response(200, body, {"Content-Type": CONTENT_TYPE_LATEST})

        return self._with_fault(request, [METRICS_EXPORT], export)

    # ----------------------------------------------------------------- GraphQL

    def _handle_graphql(self, request: Request) -> Response | None:
        authenticated = self._authenticated_key(request)
        if authenticated is None:
            return error_response(SimError(401, "UNAUTHENTICATED", "Invalid or missing API key"))
        key, caller = authenticated
        try:
            payload = request.json()
            if not isinstance(payload, dict) or not isinstance(payload.get("query"), str):
                raise GraphQLError("Body must be {query, variables}")
            field = parse_root_field(payload["query"], payload.get("variables") or {})
        except (ValueError, GraphQLError) as exc:
            message = exc.message if isinstance(exc, GraphQLError) else "Body is not JSON"
            return json_response(400, {"data": None, "errors": [{"message": message}]})

        def execute() -> Response:
            with acting_as(api_key_actor(key, caller.label)):
                result = self._graphql.execute(field, caller)
            if field.name in MUTATIONS:
                args = {k: v for k, v in field.args.items() if k not in _BULKY_ARGS}
                body = {"field": field.name, "args": args}
                self._audit_entry(request, body, 200, f"graphql:{field.name}", caller)
            return json_response(200, result)

        return self._with_fault(request, ["graphql", f"graphql:{field.name}"], execute)

    # ----------------------------------------------------------------- S3

    def _handle_s3(self, request: Request) -> Response:
        result = self._s3.handle(
            request.method, request.path, request.query, request.headers, request.body
        )
        return Response(result.status, result.body, result.headers)


def echoed_credentials(request: Request) -> dict[str, Any]:
    """An error body that repeats the caller's credentials, as careless APIs and proxies
    do: the Authorization header, and the key in base64 and URL-quoted, in the message."""
    header = request.headers.get("authorization", "")
    key = header.partition(" ")[2].strip()
    encoded = base64.b64encode(key.encode()).decode()
    return {
        "code": "BAD_REQUEST",
        "message": f"rejected request with Authorization: {header} "
        f"(basic {encoded}, url https://api.baseten.co/v1?api_key={quote(key, safe='')})",
        "details": {"headers": {"Authorization": header}},
    }
