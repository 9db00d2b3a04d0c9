"""Both simulators, a `plan` CLI call against them, and one real Reconcile pass after it.

`PlanWorld` starts a Kubernetes API server (the real one, or the emulator with
TEST_KUBE=emulator; with the CRD) and the Baseten simulator.
`plan(...)` runs `baseten-operator plan` (the real CLI entry point, in-process) with
the same credentials rules as `run` (BASETEN_API_KEY, BASETEN_API_BASE_URL, POD_NAMESPACE
for the namespaces' key Secrets). `next_pass(...)` then runs the operator's own pass
(`BasetenModelReconciler`, the real KubeClient, BasetenClient, EventRecorder and
TrussPusher, under the run's tenancy rules), so a test can hold the plan's actions
against the writes the simulator's audit log shows that pass made.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from baseten_operator.api.constants import BASETENMODELS, BASETENSECRETS, FINALIZER
from baseten_operator.api.crds import all_crds
from baseten_operator.baseten.client import API_KEY_ENV, BASE_URL_ENV, BasetenClient
from baseten_operator.baseten.pool import BasetenClientPool
from baseten_operator.cli import build_parser
from baseten_operator.controller.basetenmodel.context import Dependencies
from baseten_operator.controller.basetenmodel.ownership import claim_index
from baseten_operator.controller.basetenmodel.reconciler import BasetenModelReconciler
from baseten_operator.controller.shared.endings import ReconcileError
from baseten_operator.controller.shared.tenancy import Tenancy
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.main import client_factory, remote_url
from baseten_operator.plan.command import run_plan
from baseten_operator.plan.render import SCHEMA_PATH
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.controller import Request, TerminalError
from baseten_operator.runtime.errors import ApiError, NotFound
from baseten_operator.runtime.recorder import EventRecorder
from baseten_operator.runtime.resource import CONFIGMAPS, CRDS, NAMESPACES, SECRETS
from baseten_operator.sim.baseten import BasetenSimulator
from baseten_operator.sim.baseten.engine import LifecycleDurations
from baseten_operator.sim.baseten.http import Request as SimRequest
from baseten_operator.sim.baseten.http import Response as SimResponse
from baseten_operator.sim.baseten.keys import KeyRing
from baseten_operator.truss.pusher import TrussPusher
from testsupport.clocks import PinnedClock
from testsupport.clusters import Cluster, start_kube
from testsupport.polling import wait_for

API_KEY = "plan-key"
# Where namespaces' API key Secrets live: the operator's namespace (POD_NAMESPACE).
OPERATOR_NAMESPACE = "baseten-operator-system"
PUSH_MUTATIONS = ("graphql:create_model_from_truss", "graphql:create_model_version_from_truss")


@dataclass(frozen=True)
class Seen:
    """One request the simulator received (reads too), and the label of the key it carried."""

    time: float
    method: str
    path: str
    key: str | None


class KeyedRequestLog:
    """Wraps the simulator's app to remember every request with its key's label (the audit
    log keeps only writes): a test sees which key each read of a plan carried."""

    def __init__(self, app: Callable[[SimRequest], SimResponse | None], keys: KeyRing) -> None:
        self._app = app
        self._keys = keys
        self._lock = threading.Lock()
        self._seen: list[Seen] = []

    def __call__(self, request: SimRequest) -> SimResponse | None:
        if not request.path.startswith("/_sim/"):
            _, _, token = request.headers.get("authorization", "").partition(" ")
            known = self._keys.lookup(token) if token.strip() else None
            label = known.label if known is not None else None
            seen = Seen(time.time(), request.method, request.path, label)
            with self._lock:
                self._seen.append(seen)
        return self._app(request)

    def seen(self, since: float) -> list[Seen]:
        with self._lock:
            return [r for r in self._seen if r.time >= since]


class _LiveCache:
    """What an informer would hold once synced: the emulator's objects, read fresh."""

    def __init__(self, kube: KubeClient, res: Any) -> None:
        self._kube = kube
        self._res = res

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            return self._kube.get(self._res, name, namespace)
        except NotFound:
            return None


@dataclass
class PlanWorld:
    workdir: Path
    # The one wall clock of the simulator, `plan` and the pass: real time until a test pins
    # an instant (autoscaling schedules' windows then read the test's hour and weekday).
    clock: PinnedClock = field(default_factory=PinnedClock)
    cluster: Cluster = field(init=False)
    kube: KubeClient = field(init=False)
    kubeconfig: Path = field(init=False)
    sim: BasetenSimulator = field(init=False)
    requests: KeyedRequestLog = field(init=False)
    recorder: EventRecorder = field(init=False)
    pusher: TrussPusher = field(init=False)
    _saved_env: dict[str, str | None] = field(init=False, default_factory=dict)

    def start(self) -> None:
        self.cluster = start_kube(self.workdir / "kube")
        self.kubeconfig = self.cluster.kubeconfig
        self.kube = KubeClient.from_kubeconfig(str(self.kubeconfig))
        for crd in all_crds():
            self.kube.create(CRDS, crd)
        wait_for(self._crd_served, timeout=10.0)
        # Baseten's TTL deactivation is quick here; every other lifecycle takes its time,
        # so the state a test sets up stays put while it plans and passes.
        self.sim = BasetenSimulator(
            API_KEY, clock=self.clock, durations=LifecycleDurations(deactivate=0.05)
        )
        self.requests = KeyedRequestLog(self.sim.app, self.sim.keys)
        self.sim.app = self.requests  # type: ignore[assignment]
        self.sim.start()
        environment = {
            API_KEY_ENV: API_KEY,
            BASE_URL_ENV: self.sim.api_url,
            "POD_NAMESPACE": OPERATOR_NAMESPACE,
        }
        for name, value in environment.items():
            self._saved_env[name] = os.environ.get(name)
            os.environ[name] = value
        self.create_namespace(OPERATOR_NAMESPACE)
        self.recorder = EventRecorder(self.kube, "baseten-operator", clock=self.clock)
        self.recorder.start()
        self.pusher = TrussPusher(API_KEY, remote_url(self.sim.api_url), max_concurrent=2)
        self.pusher.start()

    def stop(self) -> None:
        self.pusher.stop(10.0)
        self.recorder.stop(5.0)
        self.sim.stop()
        self.cluster.stop()
        self.kube.close()
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def _crd_served(self) -> bool:
        try:
            for crs in (BASETENMODELS, BASETENSECRETS):
                self.kube.list(crs, "default", limit=1)
        except ApiError:
            return False
        return True

    # ------------------------------------------------------------------ Kubernetes side

    def new_namespace(self) -> str:
        return self.create_namespace(f"plan-{uuid.uuid4().hex[:6]}")

    def create_namespace(self, name: str, **annotations: str) -> str:
        """A Namespace; `annotations` as the platform team sets them (`team=`,
        `allowed_models=`, ... for models.baseten.com/team, /allowed-models)."""
        full = {f"models.baseten.com/{k.replace('_', '-')}": v for k, v in annotations.items()}
        metadata: dict[str, Any] = {"name": name, "annotations": full}
        self.kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}
        )
        return name

    def create_key_secret(self, name: str, api_key: str) -> None:
        """An API key Secret in the operator's namespace, as a namespace's annotation names it."""
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
            "data": {"api-key": base64.b64encode(api_key.encode()).decode()},
        }
        self.kube.create(SECRETS, body, OPERATOR_NAMESPACE)

    def create_cr(self, namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return self.kube.create(BASETENMODELS, manifest(namespace, name, spec), namespace)

    def create_configmap(self, namespace: str, name: str, data: dict[str, str]) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        }
        self.kube.create(CONFIGMAPS, body, namespace)

    def get_cr(self, namespace: str, name: str) -> dict[str, Any]:
        return self.kube.get(BASETENMODELS, name, namespace)

    def set_status(self, namespace: str, name: str, **fields: Any) -> None:
        obj = self.get_cr(namespace, name)
        obj["status"] = {**(obj.get("status") or {}), **fields}
        self.kube.update_status(BASETENMODELS, obj)

    def deactivate(self, deployment_id: str) -> None:
        """Baseten's inactivity TTL, waited out until the deployment is INACTIVE."""
        self.sim.deactivate(deployment_id)

        def inactive() -> bool:
            self.sim.tick()
            return bool(self.sim.engine.deployments[deployment_id].status == "INACTIVE")

        wait_for(inactive, timeout=10.0)

    # ------------------------------------------------------------------ the real pass

    def _every_model(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.kube.list(BASETENMODELS).get("items") or []
        return items

    def real_pass(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """One pass of the operator's reconciler, under the run's tenancy rules (namespace
        policy, one owner per environment, namespaces' keys and teams); the Baseten writes
        it made (audit log)."""
        baseten = BasetenClient(API_KEY, self.sim.api_url)

        def siblings(model_name: str) -> list[dict[str, Any]]:
            return [
                o
                for o in self._every_model()
                if (o.get("spec") or {}).get("modelName") == model_name
            ]

        tenancy = Tenancy(
            namespaces=_LiveCache(self.kube, NAMESPACES),
            secrets=_LiveCache(self.kube, SECRETS),
            pool=BasetenClientPool(baseten, client_factory(self.sim.api_url)),
            operator_namespace=OPERATOR_NAMESPACE,
        )
        deps = Dependencies(
            kube=self.kube,
            baseten=baseten,
            recorder=self.recorder,
            clock=self.clock,
            timing=Timing(),
            models=_LiveCache(self.kube, BASETENMODELS),
            configmaps=_LiveCache(self.kube, CONFIGMAPS),
            siblings=siblings,
            claimants=lambda claim: [o for o in self._every_model() if claim in claim_index(o)],
            pusher=self.pusher,
            tenancy=tenancy,
        )
        before = len(self.sim.audit_log())
        with contextlib.suppress(ReconcileError, TerminalError):  # passes that end so
            BasetenModelReconciler(deps).reconcile(Request(namespace, name))
        return self.sim.audit_log()[before:]

    def next_pass(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """The writes of the next pass that does more than add the finalizer."""
        if FINALIZER not in (self.get_cr(namespace, name)["metadata"].get("finalizers") or []):
            assert self.real_pass(namespace, name) == []  # adds the finalizer, nothing else
        return self.real_pass(namespace, name)

    def wait_push_audited(self, deployment: str, since: int) -> list[dict[str, Any]]:
        """The push mutations of `deployment` (the pusher runs truss in the background)."""

        def pushed() -> list[dict[str, Any]] | None:
            entries = [
                e
                for e in self.sim.audit_log()[since:]
                if e["endpoint"] in PUSH_MUTATIONS
                and deployment in (e["body"]["args"].get(k) for k in ("version_name", "name"))
            ]
            return entries or None

        found: list[dict[str, Any]] = wait_for(pushed, timeout=60.0)
        return found

    # ------------------------------------------------------------------ plan

    def plan(self, *args: str) -> tuple[int, dict[str, Any], list[Seen]]:
        """`baseten-operator plan -o json ARGS`: exit code, document, and every request it
        sent to Baseten (with the key it carried)."""
        started = time.time()
        audited = len(self.sim.audit_log())
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = self._run_plan("-o", "json", *args)
        assert len(self.sim.audit_log()) == audited, "plan made a Baseten write"
        seen = self.requests.seen(since=started)
        document = json.loads(out.getvalue())
        jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
        return code, document, seen

    def plan_table(self, *args: str) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = self._run_plan(*args)
        return code, out.getvalue()

    def _run_plan(self, *args: str) -> int:
        """`baseten-operator plan ARGS` as the CLI parses it, on this world's clock."""
        return run_plan(build_parser().parse_args(["plan", *args]), clock=self.clock)


def manifest(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": BASETENMODELS.api_version,
        "kind": BASETENMODELS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def expected_writes(items: list[dict[str, Any]], model_id: str) -> list[tuple[str, str, Any]]:
    """What each action of a plan is on the wire (the API reference's requests)."""
    writes = []
    base = f"/v1/models/{model_id}"
    for item in items:
        for action in item["actions"]:
            kind = action["type"]
            settings = {
                key: value
                for key, value in (
                    ("autoscaling_settings", action.get("autoscalingSettings")),
                    ("promotion_settings", action.get("promotionSettings")),
                    ("autoscaling_schedule_settings", action.get("autoscalingScheduleSettings")),
                )
                if value is not None
            }
            if kind == "create-environment":
                body = {"name": action["environment"], **settings}
                writes.append(("POST", f"{base}/environments", body))
            elif kind == "update-environment":
                writes.append(("PATCH", f"{base}/environments/{action['environment']}", settings))
            elif kind == "promote":
                body = {
                    "deployment_id": action["deploymentId"],
                    "scale_down_previous_deployment": action["scaleDownPreviousDeployment"],
                    "preserve_env_instance_type": action["preserveEnvInstanceType"],
                }
                writes.append(
                    ("POST", f"{base}/environments/{action['environment']}/promote", body)
                )
            elif kind == "cancel-promotion":
                path = f"{base}/environments/{action['environment']}/cancel_promotion"
                writes.append(("POST", path, None))
            elif kind in ("retry", "activate", "deactivate"):
                path = f"{base}/deployments/{action['deploymentId']}/{kind}"
                writes.append(("POST", path, None))
            elif kind == "scale-in-orphan":
                path = f"{base}/deployments/{action['deploymentId']}/autoscaling_settings"
                writes.append(("PATCH", path, action["autoscalingSettings"]))
            elif kind == "delete-orphan":
                writes.append(("DELETE", f"{base}/deployments/{action['deploymentId']}", None))
            elif kind == "delete-model":
                writes.append(("DELETE", base, None))
            else:
                raise AssertionError(f"no wire form for {kind}")
    return writes


def made_writes(entries: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    return [(e["method"], e["path"], e["body"]) for e in entries if e["status"] < 300]


def only_gets(seen: list[Seen]) -> bool:
    return bool(seen) and all(request.method == "GET" for request in seen)
