"""A deployment's logs: the lines the simulator writes as it builds, deploys and serves a
deployment (one per status it enters; an ERROR line saying why when it fails), lines a test
injects (`inject_log`), and `GET /v1/models/{model_id}/deployments/{deployment_id}/logs`
(GetLogsResponseV1).

The query as the spec states it: a window defaulting to the 30 minutes before its end (now),
at most 7 days, both ends included; `limit` 1..1000 (500); `min_level` keeps lines at or
above it and drops lines without a level; `replica`, `includes`, `excludes` (at most 8
each) and `search_pattern` (a regular expression; Python's, close to RE2 for what tests
use) filter; `request_id` and `component` match nothing (no simulated line has either).
*Inferred*: without `direction` lines come oldest first, and `limit` keeps the first ones
in that order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from baseten_operator.sim.baseten import query_params as params
from baseten_operator.sim.baseten.errors import bad_request
from baseten_operator.sim.baseten.records import (
    ACTIVE,
    BUILD_STOPPED,
    BUILDING,
    DEACTIVATING,
    DEPLOYING,
    INACTIVE,
    LOADING_MODEL,
    RETRYABLE_STATUSES,
    SCALED_TO_ZERO,
    UPDATING,
    WAKING_UP,
    Deployment,
    LogLine,
)

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_WINDOW_MS = 30 * 60 * 1000
MAX_WINDOW_MS = 7 * 24 * 3600 * 1000
DEFAULT_LIMIT = 500
MAX_LIMIT = 1000
MAX_SUBSTRINGS = 8

# What a deployment logs as it enters a status (the builder's lines carry no replica).
_STATUS_LINES: dict[str, str] = {
    BUILDING: "Building the model image",
    DEPLOYING: "Image built; deploying the model server",
    LOADING_MODEL: "Model server started; loading the model",
    ACTIVE: "Model loaded; the deployment is ACTIVE",
    SCALED_TO_ZERO: "No traffic: scaled to zero replicas",
    WAKING_UP: "Waking up: starting a replica",
    UPDATING: "Updating the deployment",
    DEACTIVATING: "Deactivating the deployment",
    INACTIVE: "The deployment is inactive",
}
_FROM_BUILDER = frozenset({BUILDING, DEPLOYING})
# Why a deployment failed, when nothing more precise is known.
_FAILURES: dict[str, str] = {
    "BUILD_FAILED": "Build failed: the image build exited with an error",
    "DEPLOY_FAILED": "Deploy failed: the model server did not become ready",
    "FAILED": "The deployment failed",
    "UNHEALTHY": "The deployment is unhealthy: its health checks fail",
    BUILD_STOPPED: "The build was stopped",
}


def default_failure(status: str) -> str:
    return _FAILURES.get(status, f"The deployment is {status}")


def replica_of(dep: Deployment) -> str:
    """The 5-character short id of the deployment's (one simulated) replica."""
    return dep.id[:5]


def log_status(dep: Deployment, status: str, at: float) -> None:
    """The line a deployment writes on entering `status` (why, for a failure)."""
    if status in RETRYABLE_STATUSES:
        level = "WARNING" if status == BUILD_STOPPED else "ERROR"
        dep.log.append(LogLine(at, dep.failure or default_failure(status), level))
        return
    message = _STATUS_LINES.get(status)
    if message is not None:
        replica = None if status in _FROM_BUILDER else replica_of(dep)
        dep.log.append(LogLine(at, message, "INFO", replica))


def check_level(level: str | None) -> str | None:
    if level is not None and level not in LEVELS:
        raise bad_request(f"level must be one of {', '.join(LEVELS)} or null, not {level!r}")
    return level


@dataclass(frozen=True)
class LogsQuery:
    start_ms: int | None = None
    end_ms: int | None = None
    descending: bool = False
    limit: int = DEFAULT_LIMIT
    min_level: str | None = None
    replica: str | None = None
    includes: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    matches_nothing: bool = False  # request_id or component

    @classmethod
    def parse(cls, query: dict[str, list[str]]) -> LogsQuery:
        limit = params.bounded(query, "limit", DEFAULT_LIMIT, MAX_LIMIT)
        direction = params.one(query, "direction") or "asc"
        if direction not in ("asc", "desc"):
            raise bad_request(f"direction must be asc or desc, not {direction!r}")
        includes, excludes = tuple(query.get("includes", ())), tuple(query.get("excludes", ()))
        if len(includes) > MAX_SUBSTRINGS or len(excludes) > MAX_SUBSTRINGS:
            raise bad_request(f"includes and excludes take at most {MAX_SUBSTRINGS} substrings")
        return cls(
            start_ms=params.integer(query, "start_epoch_millis"),
            end_ms=params.integer(query, "end_epoch_millis"),
            descending=direction == "desc",
            limit=limit,
            min_level=check_level(params.one(query, "min_level")),
            replica=params.one(query, "replica"),
            includes=includes,
            excludes=excludes,
            pattern=_pattern(params.one(query, "search_pattern")),
            matches_nothing=bool(params.one(query, "request_id") or params.one(query, "component")),
        )

    def matches(self, line: LogLine) -> bool:
        if self.min_level is not None and (
            line.level is None or LEVELS.index(line.level) < LEVELS.index(self.min_level)
        ):
            return False
        return (
            not self.matches_nothing
            and (self.replica is None or line.replica == self.replica)
            and all(part in line.message for part in self.includes)
            and not any(part in line.message for part in self.excludes)
            and (self.pattern is None or self.pattern.search(line.message) is not None)
        )


def logs_answer(dep: Deployment, query: LogsQuery, now: float) -> dict[str, Any]:
    end = query.end_ms if query.end_ms is not None else int(now * 1000)
    start = query.start_ms if query.start_ms is not None else end - DEFAULT_WINDOW_MS
    if start > end:
        raise bad_request("start_epoch_millis must not be after end_epoch_millis")
    if end - start > MAX_WINDOW_MS:
        raise bad_request("The window from start to end must not exceed 7 days")
    lines = [
        line for line in dep.log if start <= int(line.time * 1000) <= end and query.matches(line)
    ]
    if query.descending:
        lines.reverse()
    return {"logs": [_view(line) for line in lines[: query.limit]]}


def _view(line: LogLine) -> dict[str, Any]:
    """LogV1: the timestamp in epoch nanoseconds, as a string."""
    return {
        "timestamp": str(round(line.time * 1_000_000_000)),
        "message": line.message,
        "replica": line.replica,
        "request_id": None,
        "level": line.level,
    }


def _pattern(text: str | None) -> re.Pattern[str] | None:
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        raise bad_request(f"search_pattern is not a valid regular expression: {exc}") from None
