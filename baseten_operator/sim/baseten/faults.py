"""Faults injected into the next N requests of an endpoint.

Besides transport trouble (latency, 5xx, 429, a dropped connection), two kinds make Baseten
answer 200 with uncertain data, for the operator's fail-closed paths: `body` answers the
given JSON instead of doing the operation (e.g. `{"error": "..."}` on a DELETE), and `omit`
does the operation but leaves members out of its answer (dotted paths, `*` for every item of
a list: `environments.*.autoscaling_settings`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

# "echo": an error (status 400 unless given) whose body repeats the caller's credentials.
FAULT_KINDS: frozenset[str] = frozenset({"latency", "5xx", "429", "drop", "echo", "body", "omit"})
ANY_ENDPOINT = "*"


@dataclass
class Fault:
    kind: str
    remaining: int
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> int:
        default = {"5xx": 503, "echo": 400}.get(self.kind, 429)
        return int(self.params.get("status", default))

    @property
    def seconds(self) -> float:
        return float(self.params.get("seconds", 1.0))

    @property
    def retry_after(self) -> int:
        return int(self.params.get("retry_after", 1))

    @property
    def body(self) -> Any:
        return self.params.get("body", {})

    @property
    def omitted(self) -> list[str]:
        return [str(path) for path in self.params.get("fields", [])]


def omit_members(payload: Any, path: str) -> None:
    """Remove the member at dotted `path` from `payload` in place (`*`: every list item)."""
    head, _, rest = path.partition(".")
    targets = payload if head == "*" and isinstance(payload, list) else [payload]
    for target in targets:
        if head == "*":
            if rest:
                omit_members(target, rest)
        elif isinstance(target, dict) and head in target:
            if rest:
                omit_members(target[head], rest)
            else:
                del target[head]


class FaultInjector:
    """Endpoint names are the simulator's operation names (`promote`, `get_deployment`, ...,
    `graphql`, `graphql:<root field>`, `s3`), or `*` for every request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: dict[str, list[Fault]] = {}

    def inject(self, endpoint: str, kind: str, count: int, **params: Any) -> None:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {sorted(FAULT_KINDS)}")
        if count < 1:
            raise ValueError("count must be at least 1")
        with self._lock:
            self._faults.setdefault(endpoint, []).append(Fault(kind, count, dict(params)))

    def take(self, endpoints: list[str]) -> Fault | None:
        """Consume one use of the first pending fault matching any of `endpoints` (or `*`)."""
        with self._lock:
            for endpoint in [*endpoints, ANY_ENDPOINT]:
                pending = self._faults.get(endpoint)
                if not pending:
                    continue
                fault = pending[0]
                fault.remaining -= 1
                if fault.remaining == 0:
                    pending.pop(0)
                return fault
            return None

    def pending(self, endpoint: str) -> int:
        """Uses left of the faults waiting on `endpoint` (a test knows when one has struck)."""
        with self._lock:
            return sum(fault.remaining for fault in self._faults.get(endpoint, []))

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
