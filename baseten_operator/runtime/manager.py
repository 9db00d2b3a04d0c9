"""The manager: runs informers, probes, metrics and (once leader) controllers.

Every replica keeps its informers warm so that a failover starts from a full cache.
Only the leader runs what was `add`ed: controllers and the services they use. A clean stop (SIGTERM)
stops taking work, drains in-flight passes within `shutdown_timeout`, releases the
Lease and exits 0; a replica that loses its Lease stops its controllers at once and
exits 1, because two replicas acting at the same time is worse than a restart.

The manager owns the write fence (fence.py): whatever the components write passes it.
It closes the moment the Lease is lost, so a pass still in flight stops at its next
write. A clean shutdown wakes every wait in a write path at once, lets the drain
finish its writes, and closes the fence before the Lease is released.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import uuid
from collections.abc import Callable
from types import FrameType
from typing import Protocol

import structlog

from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.delegatedauth import DelegatedAuth
from baseten_operator.runtime.fence import WriteFence
from baseten_operator.runtime.health import Check, HealthServer
from baseten_operator.runtime.httpserver import parse_bind_address
from baseten_operator.runtime.informer import Informer
from baseten_operator.runtime.leaderelection import LeaderElector
from baseten_operator.runtime.metrics import MetricsServer
from baseten_operator.runtime.options import ManagerOptions
from baseten_operator.runtime.resource import Resource
from baseten_operator.runtime.tlscert import CertificateFiles, self_signed

log = structlog.get_logger(__name__)

EXIT_OK = 0
EXIT_LOST_LEASE = 1
# A leader whose Lease went unrenewed this long past its duration reports unready.
LEADER_HEALTH_TOLERANCE = 20.0
# Each watch started on demand gets what an informer gets to end its threads.
WATCHES_STOP_TIMEOUT = 5.0


class Runnable(Protocol):
    """What the manager runs while this replica leads: a controller, or a service it uses.

    `start` returns at once (the work runs on the runnable's own threads); `stop(timeout)`
    ends it within `timeout` seconds and returns whether it finished in that time.
    """

    def start(self) -> None: ...

    def stop(self, timeout: float) -> bool: ...


class Watches(Protocol):
    """Watches a component starts on demand, outside the shared informers (one per object
    a custom resource names): on every replica, as the informers whose events start them."""

    def stop(self, timeout: float) -> None: ...


SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def lease_namespace(configured: str) -> str:
    """The Lease's namespace: as configured, else the pod's own (controller-runtime's rule)."""
    if configured:
        return configured
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE_FILE) as file:
            return file.read().strip() or "default"
    except OSError:
        return "default"  # out of cluster


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class Manager:
    def __init__(
        self,
        client: KubeClient,
        options: ManagerOptions,
        *,
        clock: Clock | None = None,
        identity: str | None = None,
        lease_client: KubeClient | None = None,
    ) -> None:
        """`clock` times the Kubernetes-facing waits (backoff, lease renewals) and the drain.

        Leave it None outside tests: Kubernetes time is real, never scaled by --time-scale.
        `lease_client` (default `client`) serves the Lease: give it one without connection
        retries, so that a renewal ends at its deadline.
        """
        if options.leader_elect and not options.leader_election_id:
            raise ValueError("leader election needs a leader_election_id (the Lease's name)")
        self.client = client
        self.options = options
        self.identity = identity or default_identity()
        self._clock: Clock = clock or RealClock()
        self._lease_client = lease_client or client
        self.fence = WriteFence(self._leadership_refusal, clock=self._clock)
        self._liveness_checks: dict[str, Check] = {}
        self._lease_lost = threading.Event()
        self._deposing = False
        self._lock = threading.RLock()
        # Wakes `wait`'s watchdog: leadership gained, the Lease lost, the manager done. On
        # the manager's own lock, which the watchdog takes anyway to read the state it
        # watches: one lock, so no order between two to get wrong.
        self._watchdog_wake = threading.Condition(self._lock)
        self._informers: dict[tuple[Resource, str | None, bool], Informer] = {}
        self._optional_informers: set[tuple[Resource, str | None, bool]] = set()
        # What `add` registered: work that drains within the manager's budget, and the
        # services it uses, each with its own stop budget.
        self._work: list[Runnable] = []
        self._services: list[tuple[Runnable, float]] = []
        self._watches: list[Watches] = []
        self._elector: LeaderElector | None = None
        self._metrics_server: MetricsServer | None = None
        self._health_server: HealthServer | None = None
        self._started = False
        self._leading = False
        self._stopping = threading.Event()
        self._done = threading.Event()
        self._exit_code = EXIT_OK
        self._log = log.bind(identity=self.identity)

    # -- registration -------------------------------------------------------------------

    def informer(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        metadata_only: bool = False,
        optional: bool = False,
    ) -> Informer:
        """The shared informer of `resource` in `namespace` (default: the watch namespace);
        `metadata_only`: one that caches only the objects' metadata. `optional`: readiness
        does not wait for it while the API server does not serve its type (a kind whose
        CRD may be installed after the operator: the rest of the operator works meanwhile)."""
        if namespace is None:
            namespace = self.options.namespace
        key = (resource, namespace if resource.namespaced else None, metadata_only)
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                informer = Informer(
                    self.client, resource, key[1], clock=self._clock, metadata_only=metadata_only
                )
                self._informers[key] = informer
                if self._started:
                    informer.start()
            if optional:
                self._optional_informers.add(key)
            return informer

    def add(self, runnable: Runnable, *, stop_timeout: float | None = None) -> None:
        """Run `runnable` while this replica leads (at once if it already does).

        Without `stop_timeout` it is work that drains (a controller): on shutdown all such
        runnables stop together, within the drain budget (`shutdown_timeout`; nothing after
        a lost Lease). With one it is a service that work uses (the Event recorder, a pool
        of child processes): stopped once the work has drained, in the order added, each
        within its own `stop_timeout`.
        """
        with self._lock:
            if stop_timeout is None:
                self._work.append(runnable)
            else:
                self._services.append((runnable, stop_timeout))
            if self._leading:
                runnable.start()

    def add_watches(self, watches: Watches) -> None:
        """Stop `watches` at shutdown, right after the shared informers that feed them."""
        with self._lock:
            self._watches.append(watches)

    def add_liveness_check(self, name: str, check: Check) -> None:
        """A check of /healthz: failing it tells the kubelet to restart the pod."""
        with self._lock:
            if self._started:
                raise RuntimeError("liveness checks are fixed once the manager started")
            self._liveness_checks[name] = check

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Servers, informers and the election; returns at once."""
        with self._lock:
            if self._started:
                raise RuntimeError("manager already started")
            self._started = True
            self._start_servers()
            for informer in self._informers.values():
                informer.start()
        if self.options.leader_elect:
            self._elector = LeaderElector(
                self._lease_client,
                name=self.options.leader_election_id,
                namespace=lease_namespace(self.options.leader_election_namespace),
                identity=self.identity,
                lease_duration=self.options.lease_duration,
                renew_deadline=self.options.renew_deadline,
                retry_period=self.options.retry_period,
                on_started_leading=self._on_started_leading,
                on_stopped_leading=self._on_stopped_leading,
                clock=self._clock,
            )
            self._elector.start()
        else:
            self._on_started_leading()
        self._log.info("manager started", leader_elect=self.options.leader_elect)

    def wait(self, *, lost_lease_grace: float | None = None) -> int:
        """Block until the manager stopped; return its exit code.

        With `lost_lease_grace`, a replica that lost its Lease returns EXIT_LOST_LEASE at
        most that many (real) seconds later even if a component is still stopping: the
        process must not linger as a deposed leader.
        """
        # The watchdog below sleeps until the leader's proof would lapse (once per renew
        # deadline while renewals succeed), not in a poll: a replica that leads for weeks
        # would otherwise wake many times a second for nothing.
        if lost_lease_grace is None or not self.options.leader_elect:
            # Without leader election there is no Lease to lose and no leadership to prove.
            self._done.wait()
            return self._exit_code
        while True:
            with self._watchdog_wake:
                if not (self._done.is_set() or self._lease_lost.is_set()):
                    self._clock.wait(self._watchdog_wake, self._proof_time_left())
            if self._done.is_set():
                return self._exit_code
            self._depose_if_unproven()
            if self._lease_lost.is_set():
                if not self._done.wait(lost_lease_grace):
                    self._log.error("still stopping after losing the lease: exiting anyway")
                return EXIT_LOST_LEASE

    def run(self, *, lost_lease_grace: float | None = None) -> int:
        self.start()
        return self.wait(lost_lease_grace=lost_lease_grace)

    def stop(self) -> None:
        """Stop taking work, drain within `shutdown_timeout`, release the Lease; exit 0."""
        self._shutdown(EXIT_OK, self.options.shutdown_timeout)

    @property
    def is_leader(self) -> bool:
        return self._leading

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        return self._metrics_server.bound_address if self._metrics_server else None

    @property
    def health_address(self) -> tuple[str, int] | None:
        return self._health_server.bound_address if self._health_server else None

    def informers_synced(self) -> bool:
        with self._lock:
            informers = [(key in self._optional_informers, i) for key, i in self._informers.items()]
        return all(i.has_synced() or (optional and i.unserved) for optional, i in informers)

    def _leadership_refusal(self) -> str | None:
        """The fence's proof: why this replica may not write now, or None."""
        if not self.options.leader_elect:
            return None
        elector = self._elector
        return "leader election has not started" if elector is None else elector.refusal()

    def _proof_time_left(self) -> float | None:
        """Seconds until this leader can no longer prove it leads unless a renewal succeeds
        first: when the watchdog must look. None while there is nothing to watch (not
        leading, stopping, or already being deposed): what changes that wakes it."""
        with self._lock:
            elector = self._elector
            if elector is None or not self._leading or self._stopping.is_set() or self._deposing:
                return None
        lapses_at = elector.proof_lapses_at()
        return None if lapses_at is None else max(lapses_at - self._clock.monotonic(), 0.0)

    def _wake_watchdog(self) -> None:
        with self._watchdog_wake:
            self._watchdog_wake.notify_all()

    def leader_election_healthy(self) -> bool:
        elector = self._elector
        return elector is None or elector.healthy(LEADER_HEALTH_TOLERANCE)

    # -- leadership ---------------------------------------------------------------------

    def _on_started_leading(self) -> None:
        with self._lock:
            if self._stopping.is_set():
                return
            self._leading = True
            self._log.info("starting controllers", controllers=len(self._work))
            for service, _ in self._services:
                service.start()
            for runnable in self._work:
                runnable.start()
        self._wake_watchdog()

    def _depose_if_unproven(self) -> None:
        """A watchdog over the elector: its own thread deposes a leader whose renewals fail,
        but a renewal that hangs (a request that never returns) cannot report its failure.
        A leader that can no longer prove it leads is deposed here instead, off this thread
        so that the wait still returns within its grace."""
        with self._lock:
            if not self._leading or self._stopping.is_set() or self._deposing:
                return
            refusal = self._leadership_refusal()
            if refusal is None:
                return
            self._deposing = True
        self._log.error("cannot prove leadership any more: stopping", reason=refusal)
        threading.Thread(target=self._on_stopped_leading, name="depose", daemon=True).start()

    def _on_stopped_leading(self) -> None:
        if self._stopping.is_set():
            return  # our own clean release
        self.fence.close("leadership lost")
        self._lease_lost.set()
        self._wake_watchdog()
        self._log.error("leader election lost: stopping controllers and exiting")
        self._shutdown(EXIT_LOST_LEASE, 0.0)

    # -- shutdown -----------------------------------------------------------------------

    def _shutdown(self, exit_code: int, drain_timeout: float) -> None:
        with self._lock:
            if self._stopping.is_set():
                first = False
            else:
                first = True
                self._stopping.set()
                self._exit_code = exit_code
        if not first:
            self._done.wait()
            return
        # Waits in write paths wake up now; the drain may still write what it did.
        self.fence.interrupt_waits("shutting down")
        if self._health_server is not None:
            self._health_server.set_shutting_down()
        try:
            self._stop_leader_work(drain_timeout)
            # A pass that outlived the drain must not write once the Lease is given up.
            self.fence.close("shutting down")
            if self._elector is not None:
                self._elector.stop(timeout=self.options.retry_period + 5.0)
            self._stop_everything_else()
        finally:
            self._log.info("manager stopped", exit_code=self._exit_code)
            self._done.set()
            self._wake_watchdog()

    def _stop_leader_work(self, drain_timeout: float) -> None:
        """Stop the work in parallel (none takes new work while another drains), then the
        services it used, which a draining pass may still need (Events, pushes)."""
        with self._lock:
            leading, self._leading = self._leading, False
            controllers = list(self._work)
            services = list(self._services)
        if not leading:
            return
        drained: dict[int, bool] = {}

        def stop_one(index: int, controller: Runnable) -> None:
            drained[index] = controller.stop(drain_timeout)

        threads = [
            threading.Thread(target=stop_one, args=(i, c), name="controller-stop", daemon=True)
            for i, c in enumerate(controllers)
        ]
        for thread in threads:
            thread.start()
        deadline = self._clock.monotonic() + drain_timeout
        for thread in threads:
            # Real-time join bounded by the drain budget plus a margin for bookkeeping.
            thread.join(max(0.0, deadline - self._clock.monotonic()) + 1.0)
        if not all(drained.get(i, False) for i in range(len(controllers))):
            self._log.warning("in-flight passes did not finish within the shutdown timeout")
        for service, stop_timeout in services:
            self._stop_quietly(service.stop, stop_timeout)

    def _stop_everything_else(self) -> None:
        with self._lock:
            informers = list(self._informers.values())
            watches = list(self._watches)
        for informer in informers:
            informer.stop()
        for started_on_demand in watches:
            self._stop_quietly(started_on_demand.stop, WATCHES_STOP_TIMEOUT)
        for server in (self._health_server, self._metrics_server):
            if server is not None:
                self._stop_quietly(server.stop)

    def _stop_quietly(self, stop: Callable[..., object], *args: float) -> None:
        try:
            stop(*args)
        except Exception:
            self._log.exception("stopping a component failed")

    # -- servers ------------------------------------------------------------------------

    def _start_servers(self) -> None:
        self._metrics_server = self._new_metrics_server()
        self._metrics_server.start()
        self._health_server = HealthServer(
            self.options.health_probe_bind_address,
            {
                "informers-synced": self.informers_synced,
                "leader-election": self.leader_election_healthy,
            },
            liveness_checks=self._liveness_checks,
        )
        self._health_server.start()

    def _new_metrics_server(self) -> MetricsServer:
        options = self.options
        if not options.metrics_secure or parse_bind_address(options.metrics_bind_address) is None:
            return MetricsServer(options.metrics_bind_address)  # plain HTTP, or disabled
        tls = (
            CertificateFiles(
                options.metrics_cert_path, options.metrics_cert_name, options.metrics_cert_key
            )
            if options.metrics_cert_path
            else self_signed()
        )
        return MetricsServer(
            options.metrics_bind_address,
            tls=tls,
            request_filter=DelegatedAuth(self.client, clock=self._clock),
        )


def install_signal_handlers(manager: Manager) -> None:
    """SIGTERM/SIGINT stop the manager cleanly; a second signal exits at once.

    Must be called from the main thread (Python delivers signals only there).
    """
    received: list[int] = []

    def handle(signum: int, _frame: FrameType | None) -> None:
        if received:
            os._exit(EXIT_LOST_LEASE)
        received.append(signum)
        log.info("signal received: shutting down", signal=signal.Signals(signum).name)
        # The handler runs on the main thread, which may be the one in `wait()`: stop
        # from another thread so the drain does not block signal handling.
        threading.Thread(target=manager.stop, name="manager-shutdown", daemon=True).start()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
