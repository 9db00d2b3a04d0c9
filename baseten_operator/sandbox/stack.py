"""The sandbox's moving parts, started and stopped together.

The Kubernetes emulator (or, with `--kube real`, a real kube-apiserver and etcd as child
processes) and the Baseten simulator run in this process; the real operator
(`main.build_operator`, leader election on) runs on them in this process too, talking to both
over loopback HTTP (HTTPS to the real API server) exactly as it would to the real services.
"""

from __future__ import annotations

import os
from typing import IO

import structlog

from baseten_operator.baseten.client import API_KEY_ENV, BASE_URL_ENV, BasetenClient
from baseten_operator.config import OperatorOptions
from baseten_operator.main import build_operator
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.clock import RealClock
from baseten_operator.runtime.errors import NotFound
from baseten_operator.runtime.logging import configure_logging
from baseten_operator.runtime.manager import Manager
from baseten_operator.runtime.resource import LEASES
from baseten_operator.sandbox import cluster
from baseten_operator.sandbox.seed import SANDBOX_API_KEY, SeededAccount, seed_account
from baseten_operator.sandbox.settings import DEFAULT_SAMPLES, SandboxSettings
from baseten_operator.sandbox.waiting import wait_until
from baseten_operator.sim.baseten.simulator import BasetenSimulator
from baseten_operator.sim.kube.server import KubeApiServer
from baseten_operator.sim.realkube import ControlPlane, ensure_built

log = structlog.get_logger(__name__)

LEADER_TIMEOUT = 20.0


class Sandbox:
    """start() brings everything up (operator leading); stop() takes it down in reverse."""

    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings
        self.kube_server: KubeApiServer | ControlPlane = KubeApiServer(port=settings.kube_port)
        self.simulator = BasetenSimulator(
            SANDBOX_API_KEY, port=settings.baseten_port, time_scale=settings.time_scale
        )
        self.operator_options = OperatorOptions(
            metrics_bind_address=settings.metrics_bind_address,
            # The sandbox runs on loopback for one user: plain HTTP, as local runs do.
            metrics_secure=False,
            health_probe_bind_address=settings.health_probe_bind_address,
            leader_elect=True,
            leader_election_namespace=cluster.OPERATOR_NAMESPACE,
            log_level=settings.log_level,
            time_scale=settings.time_scale,
            kubeconfig=str(settings.kubeconfig),
            shutdown_timeout=10.0,
        )
        self._log_stream: IO[str] | None = None
        self._kube: KubeClient | None = None
        self._operator_kube: KubeClient | None = None
        self._manager: Manager | None = None
        self._account: SeededAccount | None = None
        self._lease_released: bool | None = None

    # -- what the other parts of the sandbox use -----------------------------------------

    @property
    def kube(self) -> KubeClient:
        """The sandbox's own client (the operator has its own)."""
        if self._kube is None:
            raise RuntimeError("sandbox not started")
        return self._kube

    @property
    def manager(self) -> Manager:
        if self._manager is None:
            raise RuntimeError("sandbox not started")
        return self._manager

    @property
    def account(self) -> SeededAccount:
        if self._account is None:
            raise RuntimeError("sandbox not started")
        return self._account

    @property
    def lease_released(self) -> bool | None:
        """After stop(): whether the Lease was found without a holder (None: unknown)."""
        return self._lease_released

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self.settings.work_dir.mkdir(parents=True, exist_ok=True)
        self._configure_logging()
        if self.settings.kube == "real":
            # Built on first use (minutes; progress on stderr, before the display starts).
            self.kube_server = ControlPlane(
                ensure_built(),
                self.settings.work_dir / "control-plane",
                port=self.settings.kube_port,
            )
        self.kube_server.start()
        self.kube_server.write_kubeconfig(self.settings.kubeconfig)
        self._kube = KubeClient.from_kubeconfig(str(self.settings.kubeconfig))
        cluster.install_crd(self._kube)
        cluster.ensure_namespace(self._kube, cluster.OPERATOR_NAMESPACE)
        cluster.ensure_namespace(self._kube, cluster.SAMPLES_NAMESPACE)
        cluster.create_api_key_secret(self._kube, SANDBOX_API_KEY)
        cluster.open_secret_reading(self._kube, DEFAULT_SAMPLES)

        self.simulator.start()
        self._account = seed_account(self.simulator)
        # The in-process client reads these, and the truss push children inherit them.
        os.environ[API_KEY_ENV] = SANDBOX_API_KEY
        os.environ[BASE_URL_ENV] = self.simulator.api_url

        clock = RealClock()
        self._operator_kube = KubeClient.from_kubeconfig(str(self.settings.kubeconfig))
        self._manager = build_operator(
            self.operator_options,
            kube=self._operator_kube,
            baseten=BasetenClient.from_env(clock=clock, time_scale=self.settings.time_scale),
            clock=clock,
        )
        self._manager.start()
        wait_until(lambda: self.manager.is_leader, LEADER_TIMEOUT, "the operator to lead")

    def stop(self) -> None:
        """Operator first (drain, release the Lease), then the two simulators."""
        if self._manager is not None:
            self._manager.stop()
            self._lease_released = self._lease_has_no_holder()
            self._manager = None
        for client in (self._operator_kube, self._kube):
            if client is not None:
                client.close()
        self._operator_kube = self._kube = None
        self.simulator.stop()
        self.kube_server.stop()
        if self._log_stream is not None:
            self._log_stream.close()
            self._log_stream = None

    def _lease_has_no_holder(self) -> bool | None:
        try:
            lease = self.kube.get(
                LEASES,
                self.operator_options.leader_election_id,
                cluster.OPERATOR_NAMESPACE,
            )
        except NotFound:
            return None
        except Exception:  # the API server is local and running: only a bug lands here
            log.exception("reading the lease after shutdown failed")
            return None
        return not (lease.get("spec") or {}).get("holderIdentity")

    def _configure_logging(self) -> None:
        """Operator and simulator logs go to a file: the terminal belongs to the display."""
        self._log_stream = self.settings.operator_log.open("a", encoding="utf-8")
        configure_logging(self.settings.log_level, "json", stream=self._log_stream)

    # -- addresses to print ----------------------------------------------------------------

    @property
    def metrics_url(self) -> str | None:
        address = self.manager.metrics_address
        return f"http://{address[0]}:{address[1]}/metrics" if address else None

    @property
    def health_url(self) -> str | None:
        address = self.manager.health_address
        return f"http://{address[0]}:{address[1]}/readyz" if address else None
