"""Injected failures and latency for the HTTP layer."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .errors import ApiError, internal, too_many_requests


@dataclass
class FailureRule:
    remaining: int
    status: int
    verb: str | None
    resource: str | None
    retry_after: float | None

    def applies(self, verb: str, resource: str, group: str) -> bool:
        if self.verb is not None and self.verb != verb:
            return False
        return self.resource is None or self.resource in (resource, f"{resource}.{group}")


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[FailureRule] = []
        self.latency = 0.0

    def add(self, rule: FailureRule) -> None:
        with self._lock:
            self._rules.append(rule)

    def set_latency(self, seconds: float) -> None:
        self.latency = max(seconds, 0.0)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
        self.latency = 0.0

    def failure_for(self, verb: str, resource: str, group: str) -> ApiError | None:
        """The error to answer instead of serving this request, consuming one failure."""
        with self._lock:
            for rule in self._rules:
                if rule.remaining > 0 and rule.applies(verb, resource, group):
                    rule.remaining -= 1
                    self._rules = [r for r in self._rules if r.remaining > 0]
                    if rule.status == 429:
                        return too_many_requests(rule.retry_after)
                    error = internal("injected failure", rule.status)
                    error.retry_after = rule.retry_after
                    return error
        return None
