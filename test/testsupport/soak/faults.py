"""Faults throughout the soak, injected through the simulators' control APIs.

Baseten: 5% of requests answered 5xx (the driver counts the requests of each tick in the
request log and queues that many 5xx faults), bursts of 429 with a retry-after, slow
answers and connection resets, each kind queued again only once the last lot has struck
(the simulator's faults wait for requests: queued faster than the operator calls, they would
answer every call). Kubernetes: every watch connection cut abruptly at a steady interval (on a
real API server, every connection through the relay in front of it is reset).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field

from testsupport.soak.stack import Stack


@dataclass(frozen=True)
class FaultPlan:
    error_rate: float = 0.05
    tick: float = 1.0
    # Every `*_every` ticks: a burst of `rate_limit_burst` 429s asking for `retry_after`
    # simulated seconds, `slow_count` answers `slow_seconds` (simulated) late, `resets`
    # dropped connections, and every watch cut.
    rate_limit_every: int = 12
    rate_limit_burst: int = 10
    # Seconds, as Baseten says them: the operator's client waits them unscaled.
    retry_after: int = 2
    slow_every: int = 7
    slow_count: int = 3
    slow_seconds: float = 40.0
    reset_every: int = 9
    resets: int = 2
    watch_cut_every: int = 5


@dataclass
class FaultDriver:
    stack: Stack
    plan: FaultPlan = field(default_factory=FaultPlan)
    injected: Counter[str] = field(default_factory=Counter)
    struck: Counter[str] = field(default_factory=Counter)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _seen_requests: int = 0
    _owed_errors: float = 0.0
    _rng: random.Random = field(default_factory=lambda: random.Random(11))

    def start(self) -> None:
        self._seen_requests = len(self.stack.request_log())
        self._thread = threading.Thread(target=self._run, name="soak-faults", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop injecting and withdraw what is still queued (again: a no-op)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        self.stack.sim.control("clear_faults")
        self.stack.clear_kube_faults()

    def _run(self) -> None:
        tick = 0
        while not self._stop.wait(self.plan.tick):
            tick += 1
            self._server_errors()
            plan = self.plan
            if tick % plan.rate_limit_every == 0:
                self._burst("429", plan.rate_limit_burst, retry_after=plan.retry_after)
            if tick % plan.slow_every == 0:
                self._burst("latency", plan.slow_count, seconds=plan.slow_seconds)
            if tick % plan.reset_every == 0:
                self._burst("drop", plan.resets)
            if tick % plan.watch_cut_every == 0:
                self.stack.cut_watches()
                self.injected["watch cut"] += 1

    def _server_errors(self) -> None:
        new = self.stack.request_log(self._seen_requests)
        self._seen_requests += len(new)
        self.struck.update(str(e["fault"]) for e in new if e.get("fault"))
        self._owed_errors += len(new) * self.plan.error_rate
        count = int(self._owed_errors)
        if count:
            self._owed_errors -= count
            status = self._rng.choice((500, 502, 503))
            self._baseten("5xx", count, status=status)

    def _burst(self, kind: str, count: int, **params: object) -> None:
        if self.injected[kind] <= self.struck[kind]:
            self._baseten(kind, count, **params)

    def _baseten(self, kind: str, count: int, **params: object) -> None:
        self.stack.sim.control("inject_fault", endpoint="*", kind=kind, count=count, **params)
        self.injected[kind] += count
