"""`KubeApiServer`: the emulator as an object tests start and stop, plus its control API."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import structlog
import yaml

from baseten_operator.runtime.clock import Clock, RealClock

from .auth import ADMIN_TOKEN, Authority
from .faults import Faults
from .handler import KubeHTTPServer
from .store import Store
from .writelog import WriteLog

log = structlog.get_logger(__name__)


class KubeApiServer:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        history_limit: int = 10000,
        clock: Clock | None = None,
        bookmark_interval: float = 10.0,
    ) -> None:
        self.host = host
        self.port = port
        # The clock stamps objects (creationTimestamp, deletionTimestamp, table ages);
        # watch timeouts and bookmarks always follow real time, as network streams do.
        self.clock: Clock = clock or RealClock()
        self.bookmark_interval = bookmark_interval
        self.store = Store(self.clock, history_limit)
        self.faults = Faults()
        self.auth = Authority(self.store)
        self.writes = WriteLog()
        self._httpd: KubeHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> str:
        self._httpd = KubeHTTPServer((self.host, self.port), self)
        # A later start() after stop() comes back on the same port with the same state.
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True,
            name="kube-emulator",
        )  # fmt: skip
        self._thread.start()
        log.info("kube emulator listening", url=self.url)
        return self.url

    def stop(self) -> None:
        if self._httpd is None:
            return
        self.store.drop_watches("graceful")
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.close_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> KubeApiServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> str:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "sim", "cluster": {"server": self.url}}],
            "users": [{"name": "sim", "user": {"token": ADMIN_TOKEN}}],
            "contexts": [
                {
                    "name": "sim",
                    "context": {"cluster": "sim", "user": "sim", "namespace": namespace},
                }
            ],
            "current-context": "sim",
            "preferences": {},
        }
        Path(path).write_text(yaml.safe_dump(config, sort_keys=False))
        return str(path)

    # ---- fault injection --------------------------------------------------------------

    def drop_watches(self, graceful: bool = False) -> int:
        """End every open watch: abruptly (connection reset) unless `graceful`."""
        return self.store.drop_watches("graceful" if graceful else "abrupt")

    def stall_watches(self, stalled: bool = True) -> None:
        """Stop (or resume) delivering watch events; they queue up meanwhile."""
        self.store.stall_watches(stalled)

    def fail_next(
        self,
        n: int,
        status: int = 500,
        *,
        verb: str | None = None,
        resource: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.faults.fail_next(n, status, verb=verb, resource=resource, retry_after=retry_after)

    def set_latency(self, seconds: float) -> None:
        self.faults.set_latency(seconds)

    def compact(self) -> None:
        self.store.compact()

    def clear_faults(self) -> None:
        self.faults.clear()
        self.store.stall_watches(False)

    def reset(self) -> None:
        self.clear_faults()
        self.store.reset()
        self.writes.clear()

    def watch_count(self) -> int:
        return self.store.watch_count()

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
