"""The real operator loop in-process against the two simulators, and ways to watch it work.

`OperatorHarness` starts the Kubernetes API emulator and the Baseten simulator, installs the
CRD generated from the API types, and runs the operator exactly as `baseten-operator run`
wires it (`baseten_operator.main.build_operator`): Manager, informers, the BasetenModel
controller, the real KubeClient, BasetenClient, EventRecorder and TrussPusher (truss pushes
run for real in child processes against the simulator). Both sides run on short time scales.

Used by the integration tests (test/integration/controller/, through its conftest.py).
"""

from __future__ import annotations

import copy
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baseten_operator.api.constants import BASETENMODELS, BASETENSECRETS
from baseten_operator.api.crds import all_crds
from baseten_operator.baseten.client import API_KEY_ENV, BasetenClient
from baseten_operator.config import OperatorOptions
from baseten_operator.controller.basetenmodel.setup import CONTROLLER_NAME
from baseten_operator.main import build_operator
from baseten_operator.runtime import metrics
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.errors import ApiError, NotFound
from baseten_operator.runtime.informer import Informer
from baseten_operator.runtime.manager import Manager
from baseten_operator.runtime.resource import CONFIGMAPS, CRDS, EVENTS, NAMESPACES
from baseten_operator.sim.baseten import BasetenSimulator
from baseten_operator.sim.baseten.engine import LifecycleDurations
from baseten_operator.sim.baseten.http import Request, Response
from baseten_operator.sim.kube import KubeApiServer
from testsupport.polling import wait_for

API_KEY = "integration-key"
# Operator delays x0.01: a 30 s promotion poll takes 0.3 s, the 5 min steady requeue 3 s.
OPERATOR_TIME_SCALE = 0.01
# Simulated lifecycles x0.01: a push builds, deploys and loads in 0.4 s.
SIM_TIME_SCALE = 0.01


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


def is_ready(obj: dict[str, Any] | None) -> bool:
    cond = condition(obj, "Ready") if obj else None
    return bool(cond and cond.get("status") == "True")


@dataclass(frozen=True)
class SeenRequest:
    time: float
    method: str
    path: str
    status: int


class RequestLog:
    """Wraps the simulator's app to remember every request (reads too; its audit log keeps
    only writes): "no Baseten call at all" is then something a test can check."""

    def __init__(self, app: Callable[[Request], Response | None]) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._seen: list[SeenRequest] = []

    def __call__(self, request: Request) -> Response | None:
        response = self._app(request)
        if not request.path.startswith("/_sim/"):
            status = response.status if response is not None else 0
            with self._lock:
                self._seen.append(SeenRequest(time.time(), request.method, request.path, status))
        return response

    def seen(self, *, path_contains: str = "", since: float = 0.0) -> list[SeenRequest]:
        with self._lock:
            return [r for r in self._seen if path_contains in r.path and r.time >= since]


@dataclass
class OperatorHarness:
    operator_time_scale: float = OPERATOR_TIME_SCALE
    sim_time_scale: float = SIM_TIME_SCALE
    max_concurrent_reconciles: int = 5
    max_concurrent_pushes: int = 4
    sim_durations: LifecycleDurations | None = None
    workdir: Path = field(default_factory=lambda: Path("/tmp"))
    # Kinds whose CRD `start` leaves out (an operator upgraded before its CRDs); a test
    # installs one later with `install_crd`.
    deferred_kinds: tuple[str, ...] = ()
    # The wall clock of the simulator and the operator alike (a test's PinnedClock: what
    # depends on the hour or the weekday reads the test's instant).
    clock: Clock = field(default_factory=RealClock)
    kube_server: KubeApiServer = field(init=False)
    sim: BasetenSimulator = field(init=False)
    kube: KubeClient = field(init=False)
    baseten: BasetenClient = field(init=False)
    manager: Manager = field(init=False)
    # Every version of every BasetenModel the watch delivered, by "ns/name", with its arrival
    # time: transient states (a candidate recorded for 0.1 s) stay observable afterwards.
    _history: dict[str, list[tuple[float, dict[str, Any]]]] = field(init=False)
    _history_lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _observer: Informer = field(init=False)
    requests: RequestLog = field(init=False)
    _previous_key: str | None = field(init=False, default=None)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self.kube_server = KubeApiServer(bookmark_interval=1.0)
        self.kube_server.start()
        kubeconfig = self.kube_server.write_kubeconfig(
            self.workdir / f"kubeconfig-{uuid.uuid4().hex[:6]}"
        )
        self.kube = KubeClient.from_kubeconfig(kubeconfig)
        for crd in all_crds():
            if crd["spec"]["names"]["kind"] not in self.deferred_kinds:
                self.kube.create(CRDS, crd)
        wait_for(self._crds_served, timeout=10.0)
        self._start_observer()
        self.sim = BasetenSimulator(
            API_KEY, time_scale=self.sim_time_scale, clock=self.clock, durations=self.sim_durations
        )
        self.requests = RequestLog(self.sim.app)
        # The server takes the app when it starts; the log is a transparent wrapper around it.
        self.sim.app = self.requests  # type: ignore[assignment]
        self.sim.start()
        self.baseten = BasetenClient(API_KEY, self.sim.api_url)
        # The pusher hands the key to its truss children through the environment, as in a pod.
        self._previous_key = os.environ.get(API_KEY_ENV)
        os.environ[API_KEY_ENV] = API_KEY
        self._start_operator()

    def _start_operator(self) -> None:
        options = OperatorOptions(
            metrics_bind_address="0",
            health_probe_bind_address="0",
            time_scale=self.operator_time_scale,
            max_concurrent_reconciles=self.max_concurrent_reconciles,
            max_concurrent_pushes=self.max_concurrent_pushes,
            shutdown_timeout=5.0,
        )
        self.manager = build_operator(
            options, kube=self.kube, baseten=self.baseten, clock=self.clock
        )
        self.manager.start()
        wait_for(lambda: self.manager.informers_synced(), timeout=10.0)

    def _stop_operator(self) -> None:
        self.manager.stop()
        self.manager.wait()

    def restart_operator(self) -> None:
        """A new operator process on the same cluster and Baseten (the old one's pushes die)."""
        self._stop_operator()
        self._start_operator()

    def stop(self) -> None:
        self._stop_operator()
        self._observer.stop()
        self.sim.stop()
        self.kube_server.stop()
        self.kube.close()
        if self._previous_key is None:
            os.environ.pop(API_KEY_ENV, None)
        else:
            os.environ[API_KEY_ENV] = self._previous_key

    def _start_observer(self) -> None:
        self._history = {}
        self._observer = Informer(self.kube, BASETENMODELS)
        self._observer.add_event_handler(
            on_add=self._remember, on_update=lambda _old, new: self._remember(new)
        )
        self._observer.start()
        wait_for(self._observer.has_synced, timeout=10.0)

    def _remember(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        with self._history_lock:
            self._history.setdefault(key, []).append((time.time(), copy.deepcopy(obj)))

    def history(self, namespace: str, name: str) -> list[tuple[float, dict[str, Any]]]:
        """(arrival time, object) for every version of the CR seen so far, oldest first."""
        with self._history_lock:
            return list(self._history.get(f"{namespace}/{name}", []))

    def statuses(self, namespace: str, name: str) -> list[dict[str, Any]]:
        return [obj.get("status") or {} for _, obj in self.history(namespace, name)]

    def wait_seen(
        self,
        namespace: str,
        name: str,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        timeout: float = 15.0,
        what: str = "",
    ) -> dict[str, Any]:
        """The first version of the CR ever seen for which `predicate(cr)` holds."""

        def probe() -> dict[str, Any] | None:
            return next((o for _, o in self.history(namespace, name) if predicate(o)), None)

        return wait_for(
            probe,
            timeout=timeout,
            describe=lambda: f"{what}; statuses seen: {self._status_trail(namespace, name)}",
        )

    def _status_trail(self, namespace: str, name: str) -> list[tuple[str, str]]:
        return [
            (s.get("deploymentStatus", ""), s.get("message", ""))
            for s in self.statuses(namespace, name)
        ]

    def install_crd(self, kind: str) -> None:
        """Install a CRD `start` left out, once the server serves it."""
        self.kube.create(CRDS, next(c for c in all_crds() if c["spec"]["names"]["kind"] == kind))
        self.deferred_kinds = tuple(k for k in self.deferred_kinds if k != kind)
        wait_for(self._crds_served, timeout=10.0)

    def _crds_served(self) -> bool:
        try:
            for resource in (BASETENMODELS, BASETENSECRETS):
                if resource.kind not in self.deferred_kinds:
                    self.kube.list(resource, "default", limit=1)
        except ApiError:  # not served yet
            return False
        return True

    # ------------------------------------------------------------------ Kubernetes side

    def new_namespace(self, prefix: str = "it") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        self.kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
        return name

    def create_model_cr(self, namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        body = {
            "apiVersion": BASETENMODELS.api_version,
            "kind": BASETENMODELS.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
        return self.kube.create(BASETENMODELS, body, namespace)

    def get_cr(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.kube.get(BASETENMODELS, name, namespace)
        except NotFound:
            return None

    def patch_spec(self, namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return self.kube.patch(BASETENMODELS, name, {"spec": spec}, namespace)

    def delete_cr(self, namespace: str, name: str) -> None:
        self.kube.delete(BASETENMODELS, name, namespace)

    def create_configmap(self, namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        }
        return self.kube.create(CONFIGMAPS, body, namespace)

    def update_configmap(self, namespace: str, name: str, data: dict[str, str]) -> None:
        self.kube.patch(CONFIGMAPS, name, {"data": data}, namespace)

    def wait_status(
        self,
        namespace: str,
        name: str,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        timeout: float = 15.0,
        what: str = "",
    ) -> dict[str, Any]:
        """The CR once `predicate(cr)` holds (polled)."""

        def probe() -> dict[str, Any] | None:
            obj = self.get_cr(namespace, name)
            return obj if obj is not None and predicate(obj) else None

        return wait_for(
            probe,
            timeout=timeout,
            describe=lambda: f"{what}; last status of {namespace}/{name}: "
            f"{(self.get_cr(namespace, name) or {}).get('status')}",
        )

    def wait_ready(self, namespace: str, name: str, *, timeout: float = 15.0) -> dict[str, Any]:
        return self.wait_status(namespace, name, is_ready, timeout=timeout, what="Ready")

    def wait_gone(self, namespace: str, name: str, *, timeout: float = 15.0) -> None:
        wait_for(lambda: self.get_cr(namespace, name) is None, timeout=timeout)

    def events(self, namespace: str, name: str) -> list[dict[str, Any]]:
        items = self.kube.list(EVENTS, namespace).get("items") or []
        return [e for e in items if (e.get("involvedObject") or {}).get("name") == name]

    def event_messages(self, namespace: str, name: str, reason: str) -> list[str]:
        return [e.get("message", "") for e in self.events(namespace, name) if e["reason"] == reason]

    def event_count(self, namespace: str, name: str, reason: str) -> int:
        """How many times `reason` was emitted about the CR (repeats are aggregated)."""
        return sum(
            int(e.get("count") or 1) for e in self.events(namespace, name) if e["reason"] == reason
        )

    def wait_event(
        self, namespace: str, name: str, reason: str, *, contains: str = "", timeout: float = 15.0
    ) -> str:
        """The message of the first `reason` Event about the CR containing `contains`."""

        def probe() -> str | None:
            matching = [m for m in self.event_messages(namespace, name, reason) if contains in m]
            return matching[0] if matching else None

        return wait_for(
            probe,
            timeout=timeout,
            describe=lambda: f"event {reason!r} ({contains!r}); events: "
            f"{[(e['reason'], e.get('message')) for e in self.events(namespace, name)]}",
        )

    @staticmethod
    def reconcile_count() -> float:
        """Passes the BasetenModel controller finished so far (all results), from its metrics."""
        total = 0.0
        for family in metrics.REGISTRY.collect():
            if family.name != "controller_runtime_reconcile":
                continue
            for sample in family.samples:
                if sample.name.endswith("_total") and sample.labels.get("controller") == (
                    CONTROLLER_NAME
                ):
                    total += sample.value
        return total

    # ------------------------------------------------------------------ Baseten side

    def deployment(self, model_id: str, name: str) -> dict[str, Any] | None:
        matches = self.sim.engine.list_deployments(model_id, name)
        return matches[0] if matches else None

    def environment(self, model_id: str, env: str) -> dict[str, Any]:
        return self.sim.engine.get_environment(model_id, env)

    def age_deployment(self, deployment_id: str, days: float) -> None:
        """Backdate a seeded deployment's creation (the simulator seeds at "now")."""
        with self.sim.engine.lock:
            record = self.sim.engine.deployments[deployment_id]
            record.created_at = time.time() - days * 86400 * self.operator_time_scale

    def calls_for_model(self, model_id: str, since: float = 0.0) -> list[SeenRequest]:
        """Every request (reads and writes) the simulator received on this model's paths."""
        return self.requests.seen(path_contains=f"/models/{model_id}", since=since)

    def writes_for_model(self, model_id: str, since: float = 0.0) -> list[dict[str, Any]]:
        """Every mutating call the simulator answered on this model's paths."""
        return [
            entry
            for entry in self.sim.audit_log()
            if f"/models/{model_id}" in entry["path"] and entry["time"] >= since
        ]

    def promote_violations(self, model_id: str) -> list[str]:
        """Promotes that broke "at most one promotion per environment in flight": the
        simulator refuses (409) a promote while the environment's promotion is unfinished."""
        return [
            f"{entry['path']}: {entry['body']} refused, a promotion was in flight"
            for entry in self.writes_for_model(model_id)
            if entry["path"].endswith("/promote") and entry["status"] == 409
        ]


@contextmanager
def running_operator(**options: Any) -> Iterator[OperatorHarness]:
    harness = OperatorHarness(**options)
    harness.start()
    try:
        yield harness
    finally:
        harness.stop()


def reconcile_spec(model_name: str, source: str, env: str = "production", **extra: Any) -> dict:
    spec: dict[str, Any] = {
        "modelName": model_name,
        "sourceDeploymentName": source,
        "environment": {"name": env},
    }
    spec.update(copy.deepcopy(extra))
    return spec
