"""The control API over HTTP: `POST /_sim/<operation>` with the keyword arguments as JSON.

`GET /_sim/<operation>?arg=value` works too for operations that only read
(`audit_log`, `request_log`, `uploaded_files`, `deployment_failure`, `secrets`, `health`).
No auth: the control API is the test's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from baseten_operator.sim.baseten.errors import SimError
from baseten_operator.sim.baseten.http import Request, Response, json_response

READ_ONLY = frozenset(
    {"audit_log", "request_log", "uploaded_files", "deployment_failure", "secrets", "health"}
)


class ControlApi:
    def __init__(self, operations: dict[str, Callable[..., Any]]) -> None:
        self._operations = operations

    def __call__(self, request: Request) -> Response:
        name = request.path.removeprefix("/_sim/").strip("/")
        operation = self._operations.get(name)
        if operation is None:
            return _error(404, "NOT_FOUND", f"No control operation {name!r}")
        if request.method == "GET" and name not in READ_ONLY:
            return _error(405, "METHOD_NOT_ALLOWED", f"{name} needs POST")
        try:
            kwargs = self._arguments(request)
            return json_response(200, operation(**kwargs))
        except SimError as exc:
            return json_response(exc.status, exc.body())
        except (TypeError, ValueError) as exc:
            return _error(400, "BAD_REQUEST", str(exc))

    @staticmethod
    def _arguments(request: Request) -> dict[str, Any]:
        if request.method == "GET":
            return {k: v[0] for k, v in parse_qs(request.query).items()}
        body = request.json()
        if body is None:
            return {}
        if not isinstance(body, dict):
            raise ValueError("control body must be a JSON object of keyword arguments")
        return body


def _error(status: int, code: str, message: str) -> Response:
    return json_response(status, {"code": code, "message": message, "details": None})
