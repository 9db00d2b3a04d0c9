"""`make bench`: scale and latency figures of the operator on the two simulators (printed only).

Runs the real operator loop in-process (testsupport/operator_harness.py) and
measures:
- the time for N BasetenModels (default 1,000, one model each) to become Ready;
- p50/p99 from a spec change (the PATCH to the CR) to the matching Baseten write
  (the simulator's audit log timestamp of the environment PATCH);
- Baseten calls per CR over one steady period, and reconciles per second (ramp and steady);
- peak RSS of this process (operator + both simulators + the observer);
- that `truss` was never imported into the operator process.
Then the Kubernetes emulator's own figures (bench_kube.run()). It never asserts.

    make bench ARGS="[--crs 1000] [--time-scale 0.1] [--changes 100] [--skip-kube]"
    PYTHONPATH=test .venv/bin/python test/bench/run.py [--crs 1000] ...
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import bench_kube  # next to this script, whose folder Python puts on sys.path

from baseten_operator.api.constants import BASETENMODELS
from baseten_operator.controller.timing import Timing
from baseten_operator.runtime.logging import configure_logging
from testsupport.operator_harness import OperatorHarness, is_ready, reconcile_spec

Figure = tuple[str, float, str]
NAMESPACES = 10


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def wait_until(probe: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


class OperatorBench:
    def __init__(self, harness: OperatorHarness, crs: int, changes: int) -> None:
        self.h = harness
        self.crs = crs
        self.changes = changes
        self.namespaces = [harness.new_namespace("bench") for _ in range(NAMESPACES)]
        self.keys: list[tuple[str, str]] = []
        self.model_ids: dict[str, str] = {}
        self.figures: list[Figure] = []

    def ready_count(self) -> int:
        items = self.h.kube.list(BASETENMODELS).get("items") or []
        return sum(1 for obj in items if is_ready(obj))

    def scale_to_ready(self) -> None:
        for i in range(self.crs):
            name = f"bench-{i:04d}"
            model = self.h.sim.seed_model(name)
            self.h.sim.seed_deployment(model["id"], f"{name}-v1")
            self.model_ids[name] = model["id"]
        passes_before = self.h.reconcile_count()
        started = time.monotonic()
        for i, name in enumerate(self.model_ids):
            namespace = self.namespaces[i % NAMESPACES]
            spec = reconcile_spec(
                name,
                f"{name}-v1",
                environment={"name": "production", "autoscaling": {"maxReplicas": 2}},
            )
            self.h.create_model_cr(namespace, name, spec)
            self.keys.append((namespace, name))
        created = time.monotonic() - started
        done = wait_until(lambda: self.ready_count() >= self.crs, timeout=900.0, interval=0.5)
        elapsed = time.monotonic() - started
        passes = self.h.reconcile_count() - passes_before
        label = f"time for {self.crs} CRs to become Ready"
        self.figures += [
            (f"create {self.crs} CRs (API calls only)", created, "s"),
            (label if done else label + " (TIMED OUT, partial)", elapsed, "s"),
            ("reconciles/s while converging", passes / elapsed, "passes/s"),
        ]

    def steady_period(self) -> None:
        period = Timing.scaled(self.h.operator_time_scale).steady
        since = time.time()
        passes_before = self.h.reconcile_count()
        time.sleep(period)  # measuring a period of steady state: the wait is the measurement
        calls = self.h.requests.seen(path_contains="/v1/", since=since)
        passes = self.h.reconcile_count() - passes_before
        self.figures += [
            (
                f"Baseten calls per CR per steady period ({period:.0f}s)",
                len(calls) / self.crs,
                "calls",
            ),
            ("reconciles/s in steady state", passes / period, "passes/s"),
        ]

    def first_patch(self, model_id: str, since: float) -> float | None:
        """When the simulator answered the first environment PATCH on the model since `since`."""
        times = [
            e["time"]
            for e in self.h.writes_for_model(model_id, since=since)
            if e["method"] == "PATCH" and e["path"].endswith("/environments/production")
        ]
        return min(times) if times else None

    def patched_since(self, model_id: str, since: float) -> bool:
        return self.first_patch(model_id, since) is not None

    def change_latency(self) -> None:
        """Spec change -> Baseten write, one change at a time over a busy operator."""
        latencies: list[float] = []
        missed = 0
        for i in range(min(self.changes, len(self.keys))):
            namespace, name = self.keys[i]
            model_id = self.model_ids[name]
            patched_at = time.time()
            self.h.patch_spec(
                namespace, name, {"environment": {"autoscaling": {"maxReplicas": 3 + i % 5}}}
            )

            if not wait_until(
                partial(self.patched_since, model_id, patched_at),
                timeout=30.0,
                interval=0.005,
            ):
                missed += 1
                continue
            first = self.first_patch(model_id, patched_at)
            assert first is not None
            latencies.append(first - patched_at)
        if latencies:
            self.figures += [
                ("spec change -> Baseten write p50", percentile(latencies, 0.5) * 1000, "ms"),
                ("spec change -> Baseten write p99", percentile(latencies, 0.99) * 1000, "ms"),
                ("spec change -> Baseten write mean", statistics.fmean(latencies) * 1000, "ms"),
            ]
        self.figures.append(("spec changes without a write within 30s", missed, "changes"))


def print_table(title: str, figures: list[Figure]) -> None:
    width = max(len(name) for name, _, _ in figures)
    print(f"\n{title}\n{'-' * (width + 26)}")
    for name, value, unit in figures:
        print(f"{name:<{width}}  {value:>12.2f}  {unit}")


def run_operator_bench(crs: int, time_scale: float, changes: int) -> list[Figure]:
    with tempfile.TemporaryDirectory() as workdir:
        harness = OperatorHarness(
            operator_time_scale=time_scale,
            sim_time_scale=0.01,
            workdir=Path(workdir),
        )
        harness.start()
        try:
            # Client-side limits are the documented Baseten ones; the simulator's would only
            # measure themselves here.
            harness.sim.configure_rate_limits(enabled=False)
            bench = OperatorBench(harness, crs, changes)
            bench.scale_to_ready()
            bench.steady_period()
            bench.change_latency()
        finally:
            harness.stop()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return [
        *bench.figures,
        ("peak RSS (operator + both simulators, one process)", peak_kib / 1024, "MiB"),
        ("truss imported in the operator process (0 = no)", float("truss" in sys.modules), ""),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crs", type=int, default=1000)
    parser.add_argument("--time-scale", type=float, default=0.1)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--skip-kube", action="store_true", help="skip the emulator figures")
    args = parser.parse_args(argv)
    configure_logging("error", "console")
    figures: dict[str, Any] = {}
    figures["operator"] = run_operator_bench(args.crs, args.time_scale, args.changes)
    print_table(
        f"operator on the simulators ({args.crs} CRs, time scale {args.time_scale})",
        figures["operator"],
    )
    if not args.skip_kube:
        print("\nKubernetes API emulator")
        bench_kube.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
