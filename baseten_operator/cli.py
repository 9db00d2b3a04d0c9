"""`baseten-operator` command line: run | plan | sandbox | crd."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from baseten_operator.config import OperatorOptions


def positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def flag_bool(text: str) -> bool:
    """Go flag syntax for booleans: `--flag`, `--flag=true`, `--flag=false`."""
    lowered = text.strip().lower()
    if lowered in ("true", "1", "t", "yes"):
        return True
    if lowered in ("false", "0", "f", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text}")


def add_bool_flag(parser: argparse.ArgumentParser, name: str, default: bool, help: str) -> None:
    parser.add_argument(
        name, type=flag_bool, nargs="?", const=True, default=default, metavar="BOOL", help=help
    )


def add_operator_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of `run`, named like the Go operator's where they exist."""
    d = OperatorOptions()
    parser.add_argument(
        "--metrics-bind-address",
        default=d.metrics_bind_address,
        help="address of the Prometheus /metrics endpoint ('0' disables it)",
    )
    add_bool_flag(
        parser,
        "--metrics-secure",
        d.metrics_secure,
        "serve metrics over HTTPS to callers the API server authorizes for GET /metrics "
        "(--metrics-secure=false: plain HTTP, for local runs)",
    )
    parser.add_argument(
        "--metrics-cert-path",
        default=d.metrics_cert_path,
        help="directory of the metrics serving certificate (default: self-signed at start)",
    )
    parser.add_argument("--metrics-cert-name", default=d.metrics_cert_name)
    parser.add_argument("--metrics-cert-key", default=d.metrics_cert_key)
    add_bool_flag(
        parser,
        "--enable-http2",
        d.enable_http2,
        "accepted for compatibility; metrics are served over HTTP/1.1 only",
    )
    parser.add_argument(
        "--health-probe-bind-address",
        default=d.health_probe_bind_address,
        help="address of /healthz and /readyz ('0' disables them)",
    )
    parser.add_argument(
        "--leader-elect",
        action="store_true",
        default=d.leader_elect,
        help="elect a leader through a Lease; only the leader reconciles",
    )
    parser.add_argument("--leader-election-id", default=d.leader_election_id)
    parser.add_argument(
        "--leader-election-namespace",
        default=d.leader_election_namespace,
        help="namespace of the Lease (default: the pod's, else 'default')",
    )
    parser.add_argument(
        "--watch-namespace",
        default=d.watch_namespace,
        help="only reconcile BasetenModels in this namespace (empty: all)",
    )
    parser.add_argument(
        "--max-concurrent-reconciles", type=positive_int, default=d.max_concurrent_reconciles
    )
    parser.add_argument(
        "--max-concurrent-pushes", type=positive_int, default=d.max_concurrent_pushes
    )
    parser.add_argument(
        "--log-level", default=d.log_level, choices=["debug", "info", "warning", "error"]
    )
    parser.add_argument("--log-format", default=d.log_format, choices=["json", "console"])
    parser.add_argument(
        "--time-scale",
        type=positive_float,
        default=d.time_scale,
        help="multiply every delay the operator waits (tests, sandbox)",
    )
    parser.add_argument(
        "--baseten-timeout",
        type=positive_float,
        default=d.baseten_timeout,
        help="total deadline in seconds of one Baseten call, retries included "
        "(a pass stuck for twice this fails /healthz)",
    )
    parser.add_argument(
        "--require-namespace-policy",
        action="store_true",
        default=d.require_namespace_policy,
        help="a namespace without the models.baseten.com/allowed-models annotation manages "
        "no model (deny by default)",
    )
    parser.add_argument(
        "--kubeconfig",
        default=None,
        help="kubeconfig path (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
    )


def options_from_args(args: argparse.Namespace) -> OperatorOptions:
    return OperatorOptions(
        metrics_bind_address=args.metrics_bind_address,
        metrics_secure=args.metrics_secure,
        metrics_cert_path=args.metrics_cert_path,
        metrics_cert_name=args.metrics_cert_name,
        metrics_cert_key=args.metrics_cert_key,
        enable_http2=args.enable_http2,
        health_probe_bind_address=args.health_probe_bind_address,
        leader_elect=args.leader_elect,
        leader_election_id=args.leader_election_id,
        leader_election_namespace=args.leader_election_namespace,
        watch_namespace=args.watch_namespace,
        max_concurrent_reconciles=args.max_concurrent_reconciles,
        max_concurrent_pushes=args.max_concurrent_pushes,
        log_level=args.log_level,
        log_format=args.log_format,
        time_scale=args.time_scale,
        kubeconfig=args.kubeconfig,
        baseten_timeout=args.baseten_timeout,
        require_namespace_policy=args.require_namespace_policy,
    )


SOURCE_ONLY_PACKAGES = ("baseten_operator.sandbox", "baseten_operator.sim")


def add_sandbox_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`sandbox`, in a source checkout only: the wheel (the image) leaves the sandbox and
    the simulators out (pyproject.toml), and `run` must not need them."""
    try:
        from baseten_operator.sandbox.command import add_sandbox_arguments
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith(SOURCE_ONLY_PACKAGES):
            raise
        return
    sandbox = commands.add_parser(
        "sandbox", help="the operator on an embedded Kubernetes emulator and Baseten simulator"
    )
    add_sandbox_arguments(sandbox)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="baseten-operator", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the operator against a cluster")
    add_operator_flags(run)
    plan = commands.add_parser(
        "plan", help="print what the next Reconcile pass would do, and do nothing"
    )
    from baseten_operator.plan.command import add_plan_arguments

    add_plan_arguments(plan)
    add_sandbox_command(commands)
    commands.add_parser("crd", help="print the BasetenModel CustomResourceDefinition (YAML)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run":
        from baseten_operator.main import run_operator

        return run_operator(options_from_args(args))
    if args.command == "plan":
        from baseten_operator.plan.command import run_plan

        return run_plan(args)
    if args.command == "sandbox":
        from baseten_operator.sandbox.command import run_sandbox

        return run_sandbox(args)
    if args.command == "crd":
        from baseten_operator.api.crd import crd_yaml

        sys.stdout.write(crd_yaml())
        return 0
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
