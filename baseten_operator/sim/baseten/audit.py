"""What the simulator saw: every mutating call it answered (the audit log) and every API
request it received, answered or not (the request log).

Both keep each request's User-Agent, which is how a test tells operator replicas apart.
"""

from __future__ import annotations

import copy
from typing import Any

from baseten_operator.sim.recordlog import RecordLog


class AuditLog(RecordLog):
    def record(
        self,
        *,
        method: str,
        path: str,
        body: Any,
        time: float,
        status: int,
        endpoint: str,
        key: str | None = None,
        user_agent: str | None = None,
    ) -> None:
        """`key`: the label of the API key the call carried (never the key itself)."""
        self.append(
            {
                "method": method,
                "path": path,
                "body": copy.deepcopy(body),
                "time": time,
                "status": status,
                "endpoint": endpoint,
                "key": key,
                "user_agent": user_agent,
            }
        )


class RequestLog(RecordLog):
    """Every REST and GraphQL request on arrival, before faults or rate limits apply."""

    def record(
        self, *, method: str, path: str, time: float, user_agent: str | None, fault: str | None
    ) -> None:
        self.append(
            {"method": method, "path": path, "time": time, "user_agent": user_agent, "fault": fault}
        )
