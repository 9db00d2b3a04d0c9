"""`make bench`: the operator's figures, as the side-by-side benchmark measures them, for the
project alone (printed, never asserted).

The Kubernetes emulator, the Baseten simulator and the operator (`baseten-operator run`) each
run as their own process. The phases and the rows are those of the side-by-side benchmark
against kopf (its README has the method):
1. seed N models, each with an ACTIVE source deployment `bench-img-1.0` and a `production`
   environment serving an older `bench-img-0.9`; start the operator; one warm-up CR to Ready
   (not counted; "start to first CR Ready" is from the operator's start to that moment);
2. convergence: N CRs created from 16 threads, each asking to promote the source, until all
   are Ready at once, then one settle period;
3. a steady window (`--steady-periods` x 5 minutes, scaled): nothing changes; with
   `--restart` the operator is restarted first, so the window's first period shows how a
   restart's passes (all at once) spread their next re-checks over the period;
4. spec changes: `minReplicas` 1 -> 2 on M CRs at `--change-rate` a second, each timed to
   the matching Baseten PATCH, then every CR Ready again at its new generation.
CPU and peak RSS come from /proc; Baseten calls from the simulator's request log; Kubernetes
writes from the driver's own watches. The simulator's rate limits are off (the client keeps
its own) and its promotions take the simulated time they take, scaled.
Then the Kubernetes emulator's own figures (bench_kube.run()), unless --skip-kube.

    make bench ARGS="[--crs 1000] [--time-scale 0.05] [--changes 100] [--skip-kube] ..."
    PYTHONPATH=test .venv/bin/python test/bench/run.py [--crs 1000] ...
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import bench_kube  # next to this script, whose folder Python puts on sys.path
import yaml
from stack import Stack, StackError

from baseten_operator.api.constants import BASETENMODELS
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.informer import Informer
from baseten_operator.runtime.logging import configure_logging
from baseten_operator.runtime.resource import CRDS, EVENTS, NAMESPACES
from testsupport.paths import REPO

NAMESPACE = "bench"
SOURCE, PREVIOUS, ENV = "bench-img-1.0", "bench-img-0.9", "production"
WARMUP = "warmup"
CRD_FILE = REPO / "config" / "crd" / "bases" / "models.baseten.com_basetenmodels.yaml"
AUTOSCALING = {"min_replica": 1, "max_replica": 2}


def percentile(values: list[float], q: float) -> float | None:
    """Linear interpolation between closest ranks, as the side-by-side benchmark computes it."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def cr_name(i: int) -> str:
    return f"bm-{i:04d}"


def is_ready(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def changed_parts(old: dict[str, Any], new: dict[str, Any]) -> str:
    parts = [k for k in ("spec", "status") if old.get(k) != new.get(k)]
    bookkeeping = ("resourceVersion", "managedFields")
    meta = [{k: v for k, v in (o.get("metadata") or {}).items() if k not in bookkeeping}
            for o in (old, new)]  # fmt: skip
    if meta[0] != meta[1]:
        parts.append("metadata")
    return "+".join(parts) or "nothing"


class Observed:
    """What the driver's watches of BasetenModels and Events see, with arrival times."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.objects: dict[str, dict[str, Any]] = {}
        self.ready_at: dict[str, float] = {}  # the last turn to Ready
        self.acted_at: dict[str, float] = {}  # the first status.deploymentStatus
        self.unready: list[tuple[float, str]] = []
        self.cr_writes: list[tuple[float, str, str]] = []
        self.event_writes: list[tuple[float, str, str]] = []

    def on_cr(self, obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        now = time.time()
        name = obj["metadata"]["name"]
        with self.cond:
            self.objects[name] = obj
            if old is not None and old["metadata"].get("resourceVersion") != obj["metadata"].get(
                "resourceVersion"
            ):
                self.cr_writes.append((now, name, changed_parts(old, obj)))
            if (obj.get("status") or {}).get("deploymentStatus"):
                self.acted_at.setdefault(name, now)
            was_ready = old is not None and is_ready(old)
            if is_ready(obj) and not was_ready:
                self.ready_at[name] = now
            elif was_ready and not is_ready(obj):
                self.unready.append((now, name))
            self.cond.notify_all()

    def on_event(self, event: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        involved = event.get("involvedObject") or {}
        if involved.get("kind") != "BasetenModel":
            return
        with self.cond:
            self.event_writes.append((time.time(), involved.get("name", ""), event["reason"]))

    def ready(self) -> set[str]:
        return {name for name, obj in self.objects.items() if is_ready(obj)}

    def wait_for(self, predicate: Callable[[], bool], timeout: float, stack: Stack) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                if time.monotonic() > deadline:
                    return False
                stack.check_alive()
                self.cond.wait(0.5)
        return True

    def writes(self, since: float, until: float, names: set[str]) -> tuple[int, int]:
        with self.cond:
            crs = sum(1 for t, n, _ in self.cr_writes if since <= t < until and n in names)
            events = sum(1 for t, n, _ in self.event_writes if since <= t < until and n in names)
        return crs, events

    def event_lags(self, reason: str, names: set[str]) -> list[float]:
        """Per CR: its first `reason` Event's arrival after the CR's last turn to Ready (the
        pass that turned it Ready emitted that Event)."""
        with self.cond:
            first: dict[str, float] = {}
            for t, name, seen in self.event_writes:
                if seen == reason and name in names:
                    first.setdefault(name, t)
            return [t - self.ready_at[n] for n, t in first.items() if n in self.ready_at]

    def lost_ready(self, since: float, until: float, names: set[str]) -> int:
        with self.cond:
            return sum(1 for t, n in self.unready if since <= t < until and n in names)


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.scale = args.time_scale
        self.poll, self.period = 30 * self.scale, 300 * self.scale
        self.stack = Stack(self.scale)
        self.seen = Observed()
        self.names = [cr_name(i) for i in range(args.crs)]
        self.measured = set(self.names)
        self.model_ids: dict[str, str] = {}
        self.figures: dict[str, Any] = {}
        self.kube: KubeClient | None = None
        self.informers: list[Informer] = []

    # -- set-up -------------------------------------------------------------------------

    def setup(self) -> None:
        self.stack.start_servers()
        self.kube = KubeClient.from_kubeconfig(str(self.stack.kubeconfig))
        self.kube.create(CRDS, yaml.safe_load(CRD_FILE.read_text()))
        self.kube.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        self._wait_for_crd()
        with ThreadPoolExecutor(8) as pool:
            ids = pool.map(self._seed_model, [*self.names, WARMUP])
            self.model_ids = dict(zip([*self.names, WARMUP], ids, strict=True))
        models = Informer(self.kube, BASETENMODELS, NAMESPACE)
        models.add_event_handler(
            on_add=self.seen.on_cr, on_update=lambda old, new: self.seen.on_cr(new, old)
        )
        events = Informer(self.kube, EVENTS, NAMESPACE)
        events.add_event_handler(
            on_add=self.seen.on_event, on_update=lambda old, new: self.seen.on_event(new, old)
        )
        self.informers = [models, events]
        for informer in self.informers:
            informer.start()
            if not informer.wait_for_sync(60):
                raise StackError(f"the driver's {informer.resource.plural} watch never synced")

    def _wait_for_crd(self) -> None:
        assert self.kube is not None
        name = f"{BASETENMODELS.plural}.{BASETENMODELS.group}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            crd = self.kube.get(CRDS, name)
            conditions = (crd.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return
            time.sleep(0.05)
        raise StackError("the BasetenModel CRD was never Established")

    def _seed_model(self, name: str) -> str:
        """A model serving PREVIOUS in production, with SOURCE ready to be promoted."""
        control = self.stack.control
        model = control("seed_model", name=f"bench-model-{name}")
        for deployment in (SOURCE, PREVIOUS):
            seeded = control(
                "seed_deployment",
                model_id=model["id"],
                name=deployment,
                autoscaling_settings=AUTOSCALING,
            )
        control(
            "seed_environment",
            model_id=model["id"],
            name=ENV,
            current_deployment_id=seeded["id"],
            autoscaling_settings=AUTOSCALING,
        )
        return str(model["id"])

    def create(self, name: str) -> float:
        assert self.kube is not None
        manifest = {
            "apiVersion": f"{BASETENMODELS.group}/{BASETENMODELS.version}",
            "kind": BASETENMODELS.kind,
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "modelName": f"bench-model-{name}",
                "sourceDeploymentName": SOURCE,
                "environment": {"name": ENV, "autoscaling": {"minReplicas": 1, "maxReplicas": 2}},
            },
        }
        sent = time.time()
        self.kube.create(BASETENMODELS, manifest, NAMESPACE)
        return sent

    def cpu(self) -> dict[str, float]:
        return {name: usage.cpu_seconds() for name, usage in self.stack.usage.items()}

    def baseten_calls(self, since: float, until: float) -> int:
        return sum(
            1
            for entry in self.stack.control("request_log")
            if entry["path"].startswith("/v1/") and since <= entry["time"] <= until
        )

    def steady_read_burst(self, since: float, until: float) -> float | None:
        """The share of steady Baseten reads falling in the busiest tenth of the period, the
        times folded onto one period: 10% when the reads are even, 100% for one burst."""
        phases = [
            ((entry["time"] - since) % self.period) / self.period
            for entry in self.stack.control("request_log")
            if entry["path"].startswith("/v1/")
            and entry["method"] == "GET"
            and since <= entry["time"] <= until
        ]
        if not phases:
            return None
        tenths = [0] * 10
        for phase in phases:
            tenths[min(int(phase * 10), 9)] += 1
        return 100 * max(tenths) / len(phases)

    # -- phases ---------------------------------------------------------------------------

    def warmup(self) -> None:
        self.stack.start_operator(self.args.operator_arg or [])
        self.create(WARMUP)
        if not self.seen.wait_for(lambda: WARMUP in self.seen.ready(), 60, self.stack):
            raise StackError("the warm-up CR never became Ready")
        self.figures["start to first CR Ready"] = (
            self.seen.ready_at[WARMUP] - self.stack.operator_started_at
        )

    def converge(self) -> None:
        cpu0, t0 = self.cpu(), time.time()
        with ThreadPoolExecutor(16) as pool:
            created = dict(zip(self.names, pool.map(self.create, self.names), strict=True))
        done = self.seen.wait_for(
            lambda: self.measured <= self.seen.ready(), self.args.ready_timeout, self.stack
        )
        cpu1 = self.cpu()
        with self.seen.cond:
            ready = {n: self.seen.ready_at[n] for n in self.names if n in self.seen.ready_at}
            acted = {n: self.seen.acted_at[n] for n in self.names if n in self.seen.acted_at}
        if not done:
            raise StackError(f"only {len(ready)} of {len(self.names)} CRs became Ready")
        t_last = max(ready.values())
        settle = max(1.0, self.poll)
        time.sleep(max(0.0, t_last + settle - time.time()))
        latencies = [ready[n] - created[n] for n in self.names]
        first = [acted[n] - created[n] for n in self.names]
        crs, events = self.seen.writes(t0, t_last + settle, self.measured)
        lags = self.seen.event_lags("DeploymentActive", self.measured)
        n = len(self.names)
        self.figures.update(
            {
                "time to all Ready": t_last - t0,
                "throughput to Ready": n / (t_last - t0),
                "time to all first status": max(acted.values()) - t0,
                "create->first status p99": percentile(first, 0.99),
                "create->Ready p50": percentile(latencies, 0.5),
                "create->Ready p99": percentile(latencies, 0.99),
                "Baseten calls/CR to Ready": self.baseten_calls(t0, t_last) / n,
                "K8s CR writes/CR to Ready": crs / n,
                "K8s Event writes/CR to Ready": events / n,
                "DeploymentActive Event after Ready p99": percentile(lags, 0.99) if lags else None,
                "DeploymentActive Event after Ready max": max(lags) if lags else None,
                "operator CPU to Ready": cpu1["operator"] - cpu0["operator"],
                "emulator CPU to Ready": cpu1["emulator"] - cpu0["emulator"],
            }
        )
        self._lost = self.seen.lost_ready(t0, t_last + settle, self.measured)

    def restart(self) -> None:
        """A new operator process, then its first passes: one read of Baseten per CR, all
        at once, the burst a restart (or a failover) makes. The steady window starts once
        they are done."""
        t0 = time.time()
        self.stack.restart_operator(self.args.operator_arg or [])
        n = len(self.names)
        if not self.seen.wait_for(
            lambda: self.baseten_calls(t0, time.time()) >= n, self.args.ready_timeout, self.stack
        ):
            raise StackError("the restarted operator never passed every CR")
        self.figures["restart to every CR passed"] = time.time() - t0

    def steady(self) -> None:
        cpu0, t0 = self.cpu(), time.time()
        end = t0 + self.args.steady_periods * self.period
        while time.time() < end:
            self.stack.check_alive()
            time.sleep(min(0.5, max(0.0, end - time.time())))
        t1 = time.time()
        cpu1 = self.cpu()
        per = len(self.names) * self.args.steady_periods
        crs, events = self.seen.writes(t0, t1, self.measured)
        self.figures.update(
            {
                "steady Baseten calls/CR/period": self.baseten_calls(t0, t1) / per,
                "steady reads in busiest tenth of period": self.steady_read_burst(t0, t1),
                "steady K8s writes/CR/period": (crs + events) / per,
                "steady operator CPU/period": (cpu1["operator"] - cpu0["operator"])
                / self.args.steady_periods,
                "Ready lost after Ready (no spec change)": self._lost
                + self.seen.lost_ready(t0, t1, self.measured),
            }
        )

    def spec_changes(self) -> None:
        assert self.kube is not None
        kube = self.kube
        m = min(self.args.changes, len(self.names))
        chosen = [self.names[int(i * len(self.names) / m)] for i in range(m)]
        sent: dict[str, float] = {}
        generations: dict[str, int] = {}
        t0 = time.time()

        def send(name: str) -> None:
            at = time.time()
            patch = {"spec": {"environment": {"autoscaling": {"minReplicas": 2}}}}
            out = kube.patch(BASETENMODELS, name, patch, NAMESPACE)
            sent[name] = at
            generations[name] = out["metadata"].get("generation", 0)

        with ThreadPoolExecutor(4) as pool:
            for i, name in enumerate(chosen):
                time.sleep(max(0.0, t0 + i / self.args.change_rate - time.time()))
                pool.submit(send, name)
        by_model = {self.model_ids[name]: name for name in chosen}
        matched: dict[str, float] = {}
        deadline = time.time() + 30 + 3 * self.poll
        while len(matched) < len(sent) and time.time() < deadline:
            for entry in self.stack.control("audit_log"):
                name = by_model.get(_model_id(entry["path"]))
                body = entry.get("body") or {}
                if (
                    name in sent
                    and name not in matched
                    and entry["method"] == "PATCH"
                    and entry["path"].endswith(f"/environments/{ENV}")
                    and entry["time"] >= sent[name]
                    and (body.get("autoscaling_settings") or {}).get("min_replica") == 2
                ):
                    matched[name] = entry["time"]
            time.sleep(0.2)
        latencies = [(matched[n] - sent[n]) * 1000 for n in matched]

        def ready_again() -> bool:
            return all(
                is_ready(self.seen.objects.get(n) or {})
                and _ready_generation(self.seen.objects[n]) >= generations[n]
                for n in sent
            )

        self.seen.wait_for(ready_again, 30 + 3 * self.poll, self.stack)
        self.figures.update(
            {
                "spec->Baseten PATCH p50": percentile(latencies, 0.5),
                "spec->Baseten PATCH p99": percentile(latencies, 0.99),
                "spec changes reaching Baseten": f"{len(matched)}/{m}",
            }
        )

    def run(self) -> dict[str, Any]:
        finished = False
        try:
            self.setup()
            self.warmup()
            self.converge()
            if self.args.restart:
                self.restart()
            self.steady()
            self.spec_changes()
            finished = True
        finally:
            for informer in self.informers:
                informer.stop()
            self.stack.stop(keep_logs=not finished)
            operator = self.stack.usage.get("operator")
            if operator is not None:
                self.figures["operator peak RSS"] = operator.peak_rss_mb()
                self.figures["operator CPU total"] = operator.cpu_seconds()
        return self.figures


def _model_id(path: str) -> str:
    """The model of a `/v1/models/{id}/...` path ("" for any other)."""
    parts = path.split("/")
    return parts[3] if len(parts) > 3 and parts[2] == "models" else ""


def _ready_generation(obj: dict[str, Any]) -> int:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return int(condition.get("observedGeneration") or 0)
    return 0


# The side-by-side benchmark's rows, in its order (label, unit).
ROWS = [
    ("time to all Ready", "s"),
    ("throughput to Ready", "CR/s"),
    ("time to all first status", "s"),
    ("create->first status p99", "s"),
    ("create->Ready p50", "s"),
    ("create->Ready p99", "s"),
    ("Baseten calls/CR to Ready", ""),
    ("K8s CR writes/CR to Ready", ""),
    ("K8s Event writes/CR to Ready", ""),
    # Not one of the side-by-side rows: the goal "every Event within 2 s of its pass".
    ("DeploymentActive Event after Ready p99", "s"),
    ("DeploymentActive Event after Ready max", "s"),
    ("operator CPU to Ready", "s"),
    ("emulator CPU to Ready", "s"),
    ("steady Baseten calls/CR/period", ""),
    # Not a side-by-side row: how evenly the steady re-checks spread (10% is even).
    ("restart to every CR passed", "s"),
    ("steady reads in busiest tenth of period", "%"),
    ("steady K8s writes/CR/period", ""),
    ("steady operator CPU/period", "s"),
    ("spec->Baseten PATCH p50", "ms"),
    ("spec->Baseten PATCH p99", "ms"),
    ("spec changes reaching Baseten", ""),
    ("Ready lost after Ready (no spec change)", ""),
    ("start to first CR Ready", "s"),
    ("operator peak RSS", "MB"),
    ("operator CPU total", "s"),
]


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def print_table(title: str, figures: dict[str, Any]) -> None:
    width = max(len(label) for label, _ in ROWS)
    print(f"\n{title}\n")
    print(f"{'metric':<{width}}  {'unit':<4}  {'project':>8}")
    print(f"{'-' * width}  ----  {'-' * 8}")
    for label, unit in ROWS:
        print(f"{label:<{width}}  {unit:<4}  {fmt(figures.get(label)):>8}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crs", type=int, default=1000, help="CRs to create (N)")
    parser.add_argument("--time-scale", type=float, default=0.05)
    parser.add_argument("--changes", type=int, default=100, help="CRs whose minReplicas changes")
    parser.add_argument("--change-rate", type=float, default=100.0, help="spec patches a second")
    parser.add_argument(
        "--steady-periods", type=float, default=2.0, help="steady window, in 5-minute periods"
    )
    parser.add_argument(
        "--restart",
        action="store_true",
        help="restart the operator before the steady window (its first period then shows "
        "how a restart's passes spread over the period)",
    )
    parser.add_argument("--ready-timeout", type=float, default=600.0)
    parser.add_argument(
        "--operator-arg", action="append", help="extra `baseten-operator run` flag (repeatable)"
    )
    parser.add_argument("--skip-kube", action="store_true", help="skip the emulator figures")
    args = parser.parse_args(argv)
    if args.crs < 1 or args.changes < 0 or args.change_rate <= 0 or args.steady_periods < 1:
        parser.error("--crs and --change-rate must be positive, --steady-periods at least 1")
    configure_logging("error", "console")
    started = time.monotonic()
    figures = Bench(args).run()
    print_table(
        f"baseten-operator: N={args.crs}, time scale {args.time_scale:g}, "
        f"{time.monotonic() - started:.0f}s",
        figures,
    )
    if not args.skip_kube:
        print("\nKubernetes API emulator")
        bench_kube.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
