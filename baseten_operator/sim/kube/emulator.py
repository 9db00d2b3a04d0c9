"""`KubeEmulator`: the emulated API server without its socket: the store, the review APIs,
injected faults and the write log, with the controls tests use on them.

The HTTP front end (handler.py) is given one and serves it; `KubeApiServer` (server.py) is one
that also listens.
"""

from __future__ import annotations

from typing import Any

from baseten_operator.runtime.clock import Clock, RealClock

from .auth import Authority
from .faults import FailureRule, Faults
from .store import Store
from .writelog import WriteLog


class KubeEmulator:
    def __init__(
        self,
        *,
        history_limit: int = 10000,
        clock: Clock | None = None,
        bookmark_interval: float = 10.0,
    ) -> None:
        # The clock stamps objects (creationTimestamp, deletionTimestamp, table ages);
        # watch timeouts and bookmarks always follow real time, as network streams do.
        self.clock: Clock = clock or RealClock()
        self.bookmark_interval = bookmark_interval
        self.store = Store(self.clock, history_limit)
        self.faults = Faults()
        self.auth = Authority(self.store)
        self.writes = WriteLog()

    # ---- fault injection --------------------------------------------------------------

    def drop_watches(self, graceful: bool = False) -> int:
        """End every open watch: abruptly (connection reset) unless `graceful`."""
        return self.store.watches.drop("graceful" if graceful else "abrupt")

    def stall_watches(self, stalled: bool = True) -> None:
        """Stop (or resume) delivering watch events; they queue up meanwhile."""
        self.store.watches.stall(stalled)

    def fail_next(
        self,
        n: int,
        status: int = 500,
        *,
        verb: str | None = None,
        resource: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Answer the next `n` matching requests (verb, resource: None matches any) with
        `status` (429s and `retry_after` carry Retry-After) instead of serving them."""
        self.faults.add(FailureRule(n, status, verb, resource, retry_after))

    def set_latency(self, seconds: float) -> None:
        self.faults.set_latency(seconds)

    def compact(self) -> None:
        self.store.compact()

    def clear_faults(self) -> None:
        self.faults.clear()
        self.store.watches.stall(False)

    def reset(self) -> None:
        self.clear_faults()
        self.store.reset()
        self.writes.clear()

    def watch_count(self) -> int:
        return self.store.watches.count()

    def state(self) -> dict[str, Any]:
        """What `GET /_sim/state` answers: the current resourceVersion and open watches."""
        return {"resourceVersion": str(self.store.rv), "watches": self.watch_count()}

    def control(self, request: dict[str, Any]) -> dict[str, Any]:
        """The JSON form of the fault API (POST /_sim/faults); see the package docstring."""
        action = request["action"]
        if action == "drop_watches":
            return {"dropped": self.drop_watches(bool(request.get("graceful", False)))}
        if action == "stall_watches":
            self.stall_watches(bool(request.get("stalled", True)))
        elif action == "fail_next":
            retry_after = request.get("retry_after")
            self.fail_next(
                int(request.get("count", 1)),
                int(request.get("status", 500)),
                verb=request.get("verb"),
                resource=request.get("resource"),
                retry_after=float(retry_after) if retry_after is not None else None,
            )
        elif action == "set_latency":
            self.set_latency(float(request["seconds"]))
        elif action == "compact":
            self.compact()
        elif action == "clear":
            self.clear_faults()
        elif action == "reset":
            self.reset()
        else:
            raise KeyError(f"unknown action {action!r}")
        return {"ok": True}
