"""Liveness and readiness probes in the Kubernetes API server's style.

`/healthz` answers while the process can serve at all (plus any liveness checks);
`/readyz` runs every readiness check (caches synced, leader election healthy, ...)
and fails as soon as shutdown begins, so traffic and attention move elsewhere while
in-flight work drains. Liveness deliberately stays green during that drain: failing it
would have the kubelet kill the container before the drain can finish.

Both answer 200 `ok`, or 500 listing every check (`[+]name ok` / `[-]name failed`).
`?verbose` lists them on success too, `?exclude=name` skips one, and `/readyz/<name>`
runs a single check.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

import structlog

from baseten_operator.runtime.httpserver import Query, Response, RoutedHTTPServer

_log = structlog.get_logger(__name__)

Check = Callable[[], bool]  # True when healthy; False or an exception when not


class _CheckSet:
    """The checks of one endpoint, fixed when the server is built."""

    def __init__(self, kind: str, checks: Mapping[str, Check]) -> None:
        self.kind = kind
        self._checks: dict[str, Check] = {"ping": lambda: True, **checks}

    def respond(self, path: str, query: Query) -> Response:
        checks = self._checks
        single = path.removeprefix(f"/{self.kind}").strip("/")
        if single:
            if single not in checks:
                return Response(404, f"no {self.kind} check named {single!r}\n".encode())
            passed = _run(single, checks[single])
            return Response(200, b"ok") if passed else _failure(f"{single} check failed\n")

        excluded = set(query.get("exclude", []))
        results = [
            (name, _run(name, check)) for name, check in checks.items() if name not in excluded
        ]
        healthy = all(passed for _, passed in results)
        if healthy and "verbose" not in query:
            return Response(200, b"ok")
        lines = [f"[+]{name} ok" if passed else f"[-]{name} failed" for name, passed in results]
        lines.append(f"{self.kind} check {'passed' if healthy else 'failed'}")
        body = "\n".join(lines) + "\n"
        return Response(200, body.encode()) if healthy else _failure(body)


def _run(name: str, check: Check) -> bool:
    try:
        return bool(check())
    except Exception as error:
        _log.debug("health check raised", check=name, error=str(error))
        return False


def _failure(body: str) -> Response:
    return Response(500, body.encode())


class HealthServer(RoutedHTTPServer):
    """Probe endpoints; `checks` are readiness checks by name. Address "0" disables it."""

    def __init__(
        self,
        address: str,
        checks: Mapping[str, Check] | None = None,
        *,
        liveness_checks: Mapping[str, Check] | None = None,
    ) -> None:
        self._shutting_down = threading.Event()
        self._liveness = _CheckSet("healthz", liveness_checks or {})
        self._readiness = _CheckSet(
            "readyz", {"shutdown": lambda: not self._shutting_down.is_set(), **(checks or {})}
        )
        super().__init__(
            address,
            {"/healthz": self._liveness.respond, "/readyz": self._readiness.respond},
            name="health",
        )

    def set_shutting_down(self) -> None:
        """From now on /readyz fails with the `shutdown` check."""
        self._shutting_down.set()
