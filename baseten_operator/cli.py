"""`baseten-operator` command line: run | plan | sandbox | crd."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import fields

from baseten_operator.config import OperatorOptions
from baseten_operator.flags import (
    HEALTH_PROBE_BIND_ADDRESS,
    LOG_LEVEL,
    METRICS_BIND_ADDRESS,
    TIME_SCALE,
    add_bool_flag,
    namespace_or_all,
    positive_float,
    positive_int,
)


def add_operator_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of `run`, named like the Go operator's where they exist; each sets the
    OperatorOptions field of its dest, defaulting to that field's default."""
    d = OperatorOptions()
    METRICS_BIND_ADDRESS.add(parser, d.metrics_bind_address)
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
    HEALTH_PROBE_BIND_ADDRESS.add(parser, d.health_probe_bind_address)
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
        dest="namespace",
        metavar="WATCH_NAMESPACE",
        type=namespace_or_all,
        default=d.namespace,
        help="only reconcile BasetenModels in this namespace (empty: all)",
    )
    parser.add_argument(
        "--max-concurrent-reconciles", type=positive_int, default=d.max_concurrent_reconciles
    )
    parser.add_argument(
        "--max-concurrent-pushes", type=positive_int, default=d.max_concurrent_pushes
    )
    LOG_LEVEL.add(parser, d.log_level)
    parser.add_argument("--log-format", default=d.log_format, choices=["json", "console"])
    TIME_SCALE.add(parser, d.time_scale)
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
        default=d.kubeconfig,
        help="kubeconfig path (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
    )


def options_from_args(args: argparse.Namespace) -> OperatorOptions:
    """`run`'s parsed flags as options: each flag's dest names the field it sets; fields
    without a flag keep their defaults."""
    parsed = vars(args)
    return OperatorOptions(
        **{
            field.name: parsed[field.name]
            for field in fields(OperatorOptions)
            if field.name in parsed
        }
    )


# What the operator image leaves out (.dockerignore): `run` never needs them.
SANDBOX_PACKAGES = ("baseten_operator.sandbox", "baseten_operator.sim")
EXIT_USAGE = 2
SANDBOX_NOT_INSTALLED = (
    "the sandbox is not installed here: the operator image leaves it and the simulators out. "
    "Install the package with them: `pip install '.[sim]'` in a checkout of the repository "
    "(or `pip install 'baseten_operator-<version>-py3-none-any.whl[sim]'` with a wheel built "
    "there), or run `make sandbox` in the checkout."
)


def add_sandbox_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`sandbox`; where its package is not installed (the image), a `sandbox` that says how
    to get it instead of its flags."""
    summary = "the operator on an embedded Kubernetes emulator and Baseten simulator"
    try:
        from baseten_operator.sandbox.command import add_sandbox_arguments
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith(SANDBOX_PACKAGES):
            raise
        missing = commands.add_parser("sandbox", help=summary, description=SANDBOX_NOT_INSTALLED)
        missing.set_defaults(sandbox_installed=False)  # its flags are unknown: main says why
        return
    sandbox = commands.add_parser(
        "sandbox",
        help=summary,
        # Its defaults differ from `run`'s (loopback, a fast clock): show them.
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_sandbox_arguments(sandbox)
    sandbox.set_defaults(sandbox_installed=True)


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
    parser = build_parser()
    # parse_args, except that flags of a sandbox not installed get the reason, not a usage error.
    args, unknown = parser.parse_known_args(argv)
    if args.command == "sandbox" and not args.sandbox_installed:
        print(f"baseten-operator sandbox: {SANDBOX_NOT_INSTALLED}", file=sys.stderr)
        return EXIT_USAGE
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
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
