"""`make soak`: a chaos soak of two operator replicas on a Kubernetes API server and the simulator.

Two `baseten-operator run --leader-elect` processes share a Lease on a real kube-apiserver (the
emulator with TEST_KUBE=emulator), authenticated as the manager's ServiceAccount, and talk to
the Baseten simulator, all standalone processes. N BasetenModels (default 200):
Reconcile ones promoting their source (half then get a new source, half click-ops drift),
Observe ones, Pause-and-back ones (drifted while paused), DeleteWithGuardrails ones deleted
while serving then drained, Retain ones deleted; then a last drift and a steady minute.
Faults throughout (faults.py), two leader SIGKILLs (the replica restarted) and one leader
freeze longer than the Lease. Then the checks of checks.py, and on the real server that RBAC
refused none of the replicas' requests; the figures are printed and any violation exits 1.

    make soak ARGS="[--crs 200] [--short] [--workdir DIR]"
    PYTHONPATH=test .venv/bin/python -m testsupport.soak.run [--crs 200] [--short] [--workdir DIR]

`--short` is the bounded variant the test suite runs (test/soak/test_soak_short.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testsupport.e2e.harness import LEASE_DURATION, OPERATOR_USER, RENEW_DEADLINE, basetenmodel
from testsupport.polling import Timeout, wait_for
from testsupport.soak.checks import Evidence, Freeze, Tracked, run_checks
from testsupport.soak.faults import FaultDriver, FaultPlan
from testsupport.soak.stack import Stack

NAMESPACE = "soak"
ENV = "production"
# Cohort shares of the CRs, in the order they are numbered.
SHARES = (("reconcile", 0.4), ("observe", 0.15), ("pause", 0.15), ("guardrails", 0.15))
MIN_REPLICAS, MAX_REPLICAS, DRIFTED_MAX = 1, 2, 5


@dataclass(frozen=True)
class SoakConfig:
    crs: int = 200
    time_scale: float = 0.05
    kills: int = 2
    freeze_seconds: float = 20.0  # 0: no freeze
    settle: float = 8.0  # churn between phases (faults keep striking)
    steady: float = 60.0  # steady state under faults at the end, after a last click-ops drift
    phase_timeout: float = 180.0
    converge_timeout: float = 120.0
    # A bound on the whole story (the suite's variant must end even when phases time out).
    budget: float | None = None
    poll: float = 2.0
    faults: FaultPlan = field(default_factory=FaultPlan)


SHORT = SoakConfig(
    crs=10,
    time_scale=0.02,
    kills=1,
    freeze_seconds=0.0,
    settle=2.0,
    steady=0.0,
    phase_timeout=10.0,
    converge_timeout=10.0,
    budget=45.0,
    poll=0.5,
    # Fewer CRs, fewer requests: bursts and resets scaled down to keep their share.
    faults=FaultPlan(
        rate_limit_burst=4, slow_count=2, slow_seconds=50.0, resets=1, watch_cut_every=3
    ),
)


@dataclass
class SoakResult:
    violations: dict[str, list[str]]
    figures: dict[str, Any]
    workdir: Path

    @property
    def ok(self) -> bool:
        return not any(self.violations.values())

    def report(self) -> str:
        lines = [f"soak figures (logs in {self.workdir}):"]
        lines += [f"  {name}: {value}" for name, value in self.figures.items()]
        lines.append("checks:")
        for title, found in self.violations.items():
            lines.append(f"  [{'FAIL' if found else 'ok'}] {title}")
            lines += [f"    - {v}" for v in found]
        lines.append("soak: PASSED" if self.ok else "soak: FAILED")
        return "\n".join(lines)


def cohorts(n: int) -> list[str]:
    """The kind of each of n CRs: the shares above, Retain for the rest, each kind at least once."""
    counts = {kind: max(1, round(n * share)) for kind, share in SHARES}
    counts["retain"] = max(1, n - sum(counts.values()))
    return [kind for kind, count in counts.items() for _ in range(count)]


def spec_of(t: Tracked, mode: str = "Reconcile") -> dict[str, Any]:
    return {
        "modelName": t.name,
        "mode": "Observe" if t.kind == "observe" else mode,
        "deletionPolicy": "DeleteWithGuardrails" if t.kind == "guardrails" else "Retain",
        "sourceDeploymentName": t.source,
        "environment": {
            "name": ENV,
            "autoscaling": {"minReplicas": MIN_REPLICAS, "maxReplicas": MAX_REPLICAS},
        },
    }


def is_ready(obj: dict[str, Any] | None) -> bool:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def deployment_status(obj: dict[str, Any] | None) -> str | None:
    return ((obj or {}).get("status") or {}).get("deploymentStatus")


def serves(obj: dict[str, Any] | None, source: str) -> bool:
    status = (obj or {}).get("status") or {}
    return is_ready(obj) and status.get("activeDeploymentName") == source


def percentile(values: list[float], q: float) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.1f}s"


class Scenario:
    def __init__(self, stack: Stack, config: SoakConfig) -> None:
        self.stack = stack
        self.config = config
        self.tracked = [
            Tracked(f"{kind}-{i:03d}", kind) for i, kind in enumerate(cohorts(config.crs))
        ]
        self.faults = FaultDriver(stack, config.faults)
        self.freezes: list[Freeze] = []
        self.kills: list[str] = []
        self.timeouts: list[str] = []
        self.converged_after: float | None = None
        self.objects: dict[str, dict[str, Any]] = {}
        self.deadline = float("inf")
        self.ended_at = float("inf")  # leaderships after it are the shutdown's, not takeovers

    def of(self, *kinds: str) -> list[Tracked]:
        return [t for t in self.tracked if t.kind in kinds]

    # ------------------------------------------------------------------ the story

    def play(self) -> None:
        cfg = self.config
        if cfg.budget is not None:
            self.deadline = time.monotonic() + cfg.budget
        self.stack.start_replica()
        self.stack.start_replica()
        self.stack.leader()
        self._seed()
        self.faults.start()
        self._apply(self.tracked, created=True)
        self._churn(cfg.settle)
        if cfg.kills >= 1:
            self._kill_leader()
        self._await("first convergence", lambda: all(
            is_ready(self.objects.get(t.name)) for t in self.tracked if t.kind != "observe"
        ))  # fmt: skip

        changed = self.of("reconcile")
        for i, t in enumerate(changed):
            t.changed_at = time.time()
            if i % 2 == 0:
                t.source = "build-2"
            else:
                t.drift = True
                self._drift(t, max_replica=DRIFTED_MAX)
        self._apply([t for t in changed if not t.drift])
        self._apply(self.of("pause"), mode="Pause")
        self._churn(cfg.settle)
        if cfg.kills >= 2:
            self._kill_leader()
        self._await("sources changed and pauses taken", lambda: all(
            serves(self.objects.get(t.name), t.source) for t in changed
        ) and all(t.paused_at is not None for t in self.of("pause")))  # fmt: skip

        if cfg.freeze_seconds > 0:
            self._freeze_leader(during=self._delete_and_drift_paused)
        else:
            self._delete_and_drift_paused()
        self._await("guardrails blocking", lambda: all(
            t.blocked_at is not None for t in self.of("guardrails")
        ))  # fmt: skip
        for t in self.of("guardrails"):
            # Drained in the UI: no minimum and a minute's scale-down delay, so the deployment
            # scales to zero soon (1.2 s at the short soak's time scale).
            self._drift(t, min_replica=0, scale_down_delay=60)
            t.drained_at = time.time()
        for t in self.of("pause"):
            t.unpaused_at = time.time()
        self._apply(self.of("pause"))
        self._await("deleted CRs released", lambda: not any(
            t.name in self.objects for t in self.of("guardrails", "retain")
        ))  # fmt: skip
        if cfg.steady > 0:
            for t in changed:
                self._drift(t, max_replica=DRIFTED_MAX)
            self._churn(cfg.steady)
        self.faults.stop()
        stopped = time.time()
        if self._await(
            "final convergence",
            lambda: all(
                serves(self.objects.get(t.name), t.source) for t in self.of("reconcile", "pause")
            )
            and self._environments_match(),
            timeout=cfg.converge_timeout,
        ):
            self.converged_after = time.time() - stopped
        self.ended_at = time.time()

    def _seed(self) -> None:
        sim = self.stack.sim
        for t in self.tracked:
            t.model_id = sim.control("seed_model", name=t.name)["id"]
            for build in ("build-1", "build-2"):
                seeded = sim.control("seed_deployment", model_id=t.model_id, name=build)
                t.deployments[build] = seeded["id"]
            if t.kind == "observe":
                sim.control(
                    "seed_environment",
                    model_id=t.model_id,
                    name=ENV,
                    current_deployment_id=t.deployments["build-1"],
                    autoscaling_settings={"min_replica": MIN_REPLICAS, "max_replica": MAX_REPLICAS},
                )

    def _apply(
        self, tracked: list[Tracked], *, mode: str = "Reconcile", created: bool = False
    ) -> None:
        chunk = 50
        for start in range(0, len(tracked), chunk):
            batch = tracked[start : start + chunk]
            if created:
                for t in batch:
                    t.created_at = time.time()
            self.stack.kubectl.apply(
                *(basetenmodel(t.name, NAMESPACE, spec_of(t, mode)) for t in batch)
            )

    def _drift(self, t: Tracked, **autoscaling: int) -> None:
        """A change made in Baseten's UI behind the operator's back."""
        self.stack.sim.control(
            "ui_update_environment", model_id=t.model_id, env=ENV, autoscaling_settings=autoscaling
        )

    def _delete_and_drift_paused(self) -> None:
        doomed = self.of("guardrails", "retain")
        now = time.time()
        for t in doomed:
            t.deleted_at = now
        self.stack.kubectl.run(
            "delete", "bm", "-n", NAMESPACE, "--wait=false", *(t.name for t in doomed)
        )
        for t in self.of("pause"):
            self._drift(t, max_replica=DRIFTED_MAX)

    def _churn(self, seconds: float) -> None:
        """Let the replicas work under faults for a while (the faults' pace, not a sync)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._observe()
            time.sleep(self.config.poll)

    # ------------------------------------------------------------------ disruptions

    def _kill_leader(self) -> None:
        leader = self.stack.leader()
        leader.kill()
        self.kills.append(leader.label)
        self.stack.start_replica()
        # A SIGKILLed leader never releases the Lease: the others wait for it to expire.
        self.stack.leader(timeout=LEASE_DURATION + 15.0)

    def _freeze_leader(self, during: Callable[[], None]) -> None:
        leader = self.stack.leader()
        identity = leader.identity or ""
        leader.signal(signal.SIGSTOP)
        freeze = Freeze(leader.label, identity, time.time())
        self.freezes.append(freeze)
        during()
        others = [r for r in self.stack.replicas if r is not leader]
        try:
            freeze.takeover_at = wait_for(
                lambda: min(
                    (t for r in others for t in r.became_leader() if t > freeze.stopped_at),
                    default=None,
                ),
                timeout=LEASE_DURATION + self.config.freeze_seconds,
                interval=0.2,
            )
        except Timeout:
            self.timeouts.append("no replica took over from the frozen leader")
        while time.time() < freeze.stopped_at + self.config.freeze_seconds:
            self._observe()
            time.sleep(min(self.config.poll, 0.5))
        leader.signal(signal.SIGCONT)
        freeze.resumed_at = time.time()
        freeze.exit_code = leader.wait_exit(RENEW_DEADLINE + 1)
        if freeze.exit_code is None:
            freeze.exit_code = leader.wait_exit(30.0)  # late: reported, then the real code
        if freeze.exit_code is None:
            leader.kill()
        freeze.exited_at = leader.stopped_at
        self.stack.start_replica()

    # ------------------------------------------------------------------ observing

    def _observe(self) -> None:
        """One `kubectl get` of every CR; first sightings of each state are stamped."""
        listing = self.stack.kubectl.json("get", "basetenmodels", "-n", NAMESPACE)
        now = time.time()
        self.objects = {o["metadata"]["name"]: o for o in listing.get("items") or []}
        for t in self.tracked:
            obj = self.objects.get(t.name)
            if t.ready_at is None and is_ready(obj):
                t.ready_at = now
            changed = t.changed_at is not None and not t.drift
            if changed and t.reconverged_at is None and serves(obj, t.source):
                t.reconverged_at = now
            if t.kind == "pause" and t.paused_at is None and deployment_status(obj) == "PAUSED":
                t.paused_at = now
            blocked = deployment_status(obj) == "DELETE_BLOCKED"
            if t.deleted_at is not None and t.blocked_at is None and blocked:
                t.blocked_at = now

    def _await(self, what: str, done: Callable[[], bool], timeout: float | None = None) -> bool:
        def probe() -> bool:
            self._observe()
            return done()

        left = self.deadline - time.monotonic()
        if left <= 0:
            self.timeouts.append(f"{what}: not awaited, the soak's time budget is spent")
            return False
        timeout = min(timeout or self.config.phase_timeout, left)
        try:
            wait_for(probe, timeout=timeout, interval=self.config.poll)
        except Timeout as error:
            self.timeouts.append(f"{what}: {error}")
            return False
        return True

    def _environments_match(self) -> bool:
        for t in self.of("reconcile", "pause"):
            env = self._environment(t)
            settings = (env or {}).get("autoscaling_settings") or {}
            current = ((env or {}).get("current_deployment") or {}).get("name")
            if current != t.source or settings.get("max_replica") != MAX_REPLICAS:
                return False
        return True

    def _environment(self, t: Tracked) -> dict[str, Any] | None:
        response = self.stack.baseten_get(f"/models/{t.model_id}/environments/{ENV}")
        return response.json() if response.status_code == 200 else None

    # ------------------------------------------------------------------ evidence

    def evidence(self) -> Evidence:
        self._observe()
        sim = self.stack.sim
        return Evidence(
            tracked=self.tracked,
            audit=sim.audit_log(),
            requests=self.stack.operator_requests(),
            kube_writes=self.stack.kube_writes(),
            replicas=self.stack.replicas,
            freezes=self.freezes,
            final_objects=self.objects,
            environments={t.name: self._environment(t) for t in self.tracked},
            models_present={
                t.name: self.stack.baseten_get(f"/models/{t.model_id}").status_code == 200
                for t in self.tracked
            },
            events_json=self.stack.kubectl.run("get", "events", "-A", "-o", "json").stdout,
            logs={},
            api_key=self.stack.api_key,
        )

    def figures(self, ev: Evidence, started: float) -> dict[str, Any]:
        first = [t.ready_at - t.created_at for t in self.tracked if t.ready_at]
        again = [
            t.reconverged_at - t.changed_at
            for t in self.tracked
            if t.reconverged_at and t.changed_at
        ]
        struck = Counter(str(e["fault"]) for e in ev.requests if e.get("fault"))
        writes = [e for e in ev.requests if e["method"] != "GET"]
        leaderships = [t for r in ev.replicas for t in r.became_leader() if t < self.ended_at]

        def per_cr(count: int) -> str:
            return f"{count} ({count / len(self.tracked):.1f})"

        return {
            "CRs": dict(Counter(t.kind for t in self.tracked)),
            "duration": f"{time.time() - started:.0f}s",
            "time to first Ready p50/p95/max": (
                f"{percentile(first, 0.5)} / {percentile(first, 0.95)} / {percentile(first, 1.0)}"
            ),
            "time to serve a new source p50/max": (
                f"{percentile(again, 0.5)} / {percentile(again, 1.0)}"
            ),
            "final convergence after faults stopped": (
                f"{self.converged_after:.1f}s" if self.converged_after is not None else "never"
            ),
            "Baseten requests (per CR)": per_cr(len(ev.requests)),
            "Baseten writes (per CR)": per_cr(len(writes)),
            "promotes": sum(1 for e in ev.audit if e.get("endpoint") == "promote"),
            "faults injected": dict(self.faults.injected),
            "faults struck (Baseten)": dict(struck),
            "leader SIGKILLs": self.kills,
            "freezes": [dataclasses.asdict(f) for f in self.freezes],
            "takeovers": max(0, len(leaderships) - 1),
            "phase timeouts": self.timeouts,
        }


def run_soak(config: SoakConfig, workdir: Path | None = None) -> SoakResult:
    workdir = workdir or Path(tempfile.mkdtemp(prefix="soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    stack = Stack.start(
        workdir, api_key=f"soak-key-{uuid.uuid4().hex}", time_scale=config.time_scale
    )
    scenario = Scenario(stack, config)
    try:
        scenario.stack.kubectl.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        scenario.play()
        evidence = scenario.evidence()
        refused = stack.kube.forbidden(OPERATOR_USER)
    finally:
        scenario.faults.stop()
        exit_codes = stack.stop()
    evidence.logs = {
        process.name: process.log_path.read_text(errors="replace")
        for process in [*stack.services, *(r.process for r in stack.replicas)]
    }
    for name, entries in (
        ("baseten-audit.json", evidence.audit),
        ("baseten-requests.json", evidence.requests),
        ("kube-writes.json", evidence.kube_writes),
    ):
        (workdir / name).write_text(json.dumps(entries, indent=1))
    violations = run_checks(evidence)
    violations["every phase completed in time"] = scenario.timeouts
    # On a real API server: the replicas have exactly config/rbac's permissions.
    violations["no request of the operator refused by RBAC"] = refused
    figures = scenario.figures(evidence, started)
    figures["replica exit codes at the end"] = exit_codes
    return SoakResult(violations, figures, workdir)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m testsupport.soak.run", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--short", action="store_true", help="the bounded variant of the suite")
    parser.add_argument("--crs", type=int, help="number of BasetenModels")
    parser.add_argument("--workdir", type=Path, help="where the logs go (default: a temp dir)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    config = SHORT if args.short else SoakConfig()
    if args.crs:
        config = dataclasses.replace(config, crs=args.crs)
    result = run_soak(config, args.workdir)
    report = result.report()
    (result.workdir / "report.txt").write_text(report + "\n")
    print(report)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
