"""`baseten-operator sandbox`: the operator on an embedded Kubernetes emulator and Baseten sim.

Interactive (the default): start everything, apply the samples (config/samples, packaged
with the sandbox), show the models converging live, print a kubeconfig, the simulator's URL
and ready-made commands to play with, and run until Ctrl-C. `--scenario tour`: the same, then
a scripted, narrated demo of every story that ends by itself with a summary.
"""

from __future__ import annotations

import argparse

from baseten_operator.flags import (
    HEALTH_PROBE_BIND_ADDRESS,
    LOG_LEVEL,
    METRICS_BIND_ADDRESS,
    TIME_SCALE,
    positive_float,
)
from baseten_operator.sandbox.settings import DEFAULT_SAMPLES, SandboxSettings


def add_sandbox_arguments(parser: argparse.ArgumentParser) -> None:
    """The sandbox's flags, defaulting to SandboxSettings' defaults; those it shares with
    `run` keep `run`'s definitions (flags.py), with the sandbox's defaults."""
    d = SandboxSettings()
    parser.add_argument(
        "--scenario",
        choices=["tour"],
        default=None,
        help="tour: run every story as a narrated demo that ends with a summary",
    )
    TIME_SCALE.add(parser, d.time_scale)
    parser.add_argument(
        "--work-dir", default=str(d.work_dir), help="where the kubeconfig and the operator's log go"
    )
    parser.add_argument("--samples", default=str(DEFAULT_SAMPLES), help="the samples directory")
    parser.add_argument(
        "--kube",
        choices=["emulator", "real"],
        default=d.kube,
        help="the Kubernetes API server: the embedded emulator, or a real kube-apiserver and "
        "etcd built from source (needs a checkout and Go; minutes the first time)",
    )
    parser.add_argument(
        "--kube-port", type=int, default=d.kube_port, help="Kubernetes API server port"
    )
    parser.add_argument(
        "--baseten-port", type=int, default=d.baseten_port, help="Baseten simulator port"
    )
    METRICS_BIND_ADDRESS.add(parser, d.metrics_bind_address)
    HEALTH_PROBE_BIND_ADDRESS.add(parser, d.health_probe_bind_address)
    parser.add_argument(
        "--step-timeout",
        type=positive_float,
        default=None,
        help="bound in seconds of each wait for an outcome; None: from the time scale",
    )
    LOG_LEVEL.add(parser, d.log_level)


def run_sandbox(args: argparse.Namespace) -> int:
    # Imported here, not at the top: the command line builds every command's flags, so what
    # this module imports, `run` imports too, and the simulators would cost every operator
    # process about 0.2 s to start and 10 MB.
    from baseten_operator.sandbox.session import run_session

    return run_session(args)
