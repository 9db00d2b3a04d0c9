"""`KubeApiServer`: the emulator (emulator.py) listening on a loopback port, as an object
tests start and stop."""

from __future__ import annotations

import threading
from pathlib import Path

import structlog
import yaml

from baseten_operator.runtime.clock import Clock

from .auth import ADMIN_TOKEN
from .emulator import KubeEmulator
from .handler import KubeHTTPServer

log = structlog.get_logger(__name__)


class KubeApiServer(KubeEmulator):
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        history_limit: int = 10000,
        clock: Clock | None = None,
        bookmark_interval: float = 10.0,
    ) -> None:
        super().__init__(
            history_limit=history_limit, clock=clock, bookmark_interval=bookmark_interval
        )
        self.host = host
        self.port = port
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
        self.store.watches.drop("graceful")
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
