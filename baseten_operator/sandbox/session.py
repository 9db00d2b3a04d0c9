"""A `baseten-operator sandbox` session: start everything, apply the samples, show them live,
then the narrated tour or the interactive playbook, until it ends or Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from pathlib import Path
from types import FrameType

from baseten_operator.sandbox.cluster import apply_samples, load_samples
from baseten_operator.sandbox.console import Console
from baseten_operator.sandbox.display import LiveDisplay
from baseten_operator.sandbox.events import EventLog
from baseten_operator.sandbox.playbook import (
    GUARDED_CR,
    PRODUCTION_CR,
    STAGING_CR,
    PlaybookIds,
    build_playbook,
    render_playbook,
)
from baseten_operator.sandbox.seed import VLLM_MODEL
from baseten_operator.sandbox.settings import SandboxSettings
from baseten_operator.sandbox.stack import Sandbox
from baseten_operator.sandbox.tour import SAMPLE_CRS, Tour, ready, summary_lines
from baseten_operator.sandbox.waiting import Interrupted, WaitTimeout, wait_until
from baseten_operator.sim.realkube import BuildError, ControlPlaneError

EXIT_OK = 0
EXIT_TOUR_FAILED = 1
EXIT_USAGE = 2
EXIT_NO_KUBE = 3  # --kube real: the API server could not be built or started
EXIT_INTERRUPTED = 130


def step_timeout(time_scale: float) -> float:
    """Room for a few operator passes (5 minutes each, scaled) plus process start-up."""
    return 20.0 + 2400.0 * time_scale


class Shutdown:
    """SIGINT/SIGTERM ask for a clean stop; a second one exits at once."""

    def __init__(self) -> None:
        self.requested = threading.Event()

    def install(self) -> None:
        signal.signal(signal.SIGINT, self._handle)
        signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, _signum: int, _frame: FrameType | None) -> None:
        if self.requested.is_set():
            os._exit(EXIT_INTERRUPTED)
        self.requested.set()


def run_session(args: argparse.Namespace) -> int:
    console = Console()
    shutdown = Shutdown()
    shutdown.install()
    settings = SandboxSettings(
        work_dir=Path(args.work_dir).resolve(),
        time_scale=args.time_scale,
        kube=args.kube,
        kube_port=args.kube_port,
        baseten_port=args.baseten_port,
        metrics_bind_address=args.metrics_bind_address,
        health_probe_bind_address=args.health_probe_bind_address,
        log_level=args.log_level,
    )
    samples_dir = Path(args.samples)
    if not (samples_dir / "kustomization.yaml").is_file():
        console.line(f"sandbox: no kustomization.yaml in {samples_dir} (see --samples)")
        return EXIT_USAGE
    samples = load_samples(samples_dir)
    timeout = args.step_timeout or step_timeout(args.time_scale)
    sandbox = Sandbox(settings)
    events = EventLog()
    display: LiveDisplay | None = None
    started = time.monotonic()
    console.line(f"Starting the sandbox (time scale {settings.time_scale}) ...")
    try:
        try:
            sandbox.start()
        except (BuildError, ControlPlaneError) as error:
            console.line(f"sandbox: the real Kubernetes API server did not start: {error}")
            return EXIT_NO_KUBE
        _banner(console, sandbox)
        display = LiveDisplay(sandbox.kube, console, events)
        display.start()
        apply_samples(sandbox.kube, samples)
        if args.scenario == "tour":
            return _tour(sandbox, display, events, console, timeout, shutdown, started)
        return _interactive(sandbox, display, console, timeout, shutdown)
    finally:
        console.line("")
        console.line("Shutting down: operator (drain, release the lease), then the simulators ...")
        if display is not None:
            display.stop()
        sandbox.stop()
        lease = {True: "released", False: "NOT released", None: "unknown"}[sandbox.lease_released]
        console.line(f"Stopped. Leader election lease: {lease}.")


def _banner(console: Console, sandbox: Sandbox) -> None:
    settings = sandbox.settings
    console.lines(
        [
            "",
            f"Kubernetes {settings.kube:<9} {sandbox.kube_server.url}",
            f"Baseten simulator    {sandbox.simulator.url}   (control API: "
            f"{sandbox.simulator.url}/_sim/)",
            f"Operator metrics     {sandbox.metrics_url}",
            f"Operator readiness   {sandbox.health_url}",
            f"Operator log         {settings.operator_log}",
            f"Use kubectl:         export KUBECONFIG={settings.kubeconfig}",
            "",
        ]
    )


def _tour(
    sandbox: Sandbox,
    display: LiveDisplay,
    events: EventLog,
    console: Console,
    timeout: float,
    shutdown: Shutdown,
    started: float,
) -> int:
    tour = Tour(sandbox, display, events, console, step_timeout=timeout, stop=shutdown.requested)
    results = tour.run()
    console.lines(
        summary_lines(results, time.monotonic() - started, len(sandbox.simulator.audit_log()))
    )
    if shutdown.requested.is_set():
        return EXIT_INTERRUPTED
    return EXIT_OK if all(result.outcome == "ok" for result in results) else EXIT_TOUR_FAILED


def _interactive(
    sandbox: Sandbox,
    display: LiveDisplay,
    console: Console,
    timeout: float,
    shutdown: Shutdown,
) -> int:
    try:
        wait_until(
            lambda: all(ready(display.model("default", name)) for name in SAMPLE_CRS),
            timeout,
            "the samples to be Ready",
            stop=shutdown.requested,
        )
    except WaitTimeout as error:
        console.line(f"warning: {error}; the commands below may need other IDs")
    except Interrupted:
        return EXIT_OK
    ids = PlaybookIds(
        llm_model_id=sandbox.account.llm_model_id,
        vllm_model_id=sandbox.simulator.engine.find_model_id(VLLM_MODEL) or "<not created yet>",
        staging_deployment_id=_staging_deployment_id(sandbox),
        bad_model_deployment_id=sandbox.account.bad_model_deployment_id,
    )
    plays = build_playbook(
        str(sandbox.settings.kubeconfig),
        sandbox.simulator.url,
        ids,
        time_scale=sandbox.settings.time_scale,
    )
    console.lines(
        [
            "",
            f"The samples are up ({PRODUCTION_CR}, {STAGING_CR}, {GUARDED_CR}). Play with them "
            "from another terminal; changes show up here live.",
            *render_playbook(plays),
            "",
            "Ctrl-C stops everything.",
            "",
        ]
    )
    shutdown.requested.wait()
    return EXIT_OK


def _staging_deployment_id(sandbox: Sandbox) -> str:
    try:
        env = sandbox.simulator.engine.get_environment(sandbox.account.llm_model_id, "staging")
    except Exception:  # the environment may not exist yet when convergence timed out
        return "<not created yet>"
    current = env.get("current_deployment") or {}
    return str(current.get("id") or "<not created yet>")
