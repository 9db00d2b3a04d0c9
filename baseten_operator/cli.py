"""`baseten-operator` command line: run | plan | sandbox | crd."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

from baseten_operator.config import OperatorOptions
from baseten_operator.flags import (
    HEALTH_PROBE_BIND_ADDRESS,
    LOG_FORMATS,
    LOG_LEVEL,
    METRICS_BIND_ADDRESS,
    TIME_SCALE,
    add_bool_flag,
    duration,
    namespace_or_all,
    positive_float,
    positive_int,
    zap_level,
)
from baseten_operator.runtime.logging import STACKTRACE_LEVELS, TIME_ENCODINGS


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
    # kube-controller-manager's names and defaults (15s, 10s, 2s); never time-scaled.
    for flag, dest, what in (
        ("lease-duration", "lease_duration", "how long a Lease binds the others after a renewal"),
        ("renew-deadline", "renew_deadline", "how long the leader tries to renew, then stops"),
        ("retry-period", "retry_period", "how often the Lease is tried (taken or renewed)"),
    ):
        parser.add_argument(
            f"--leader-elect-{flag}", dest=dest, type=duration, default=getattr(d, dest), help=what
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
    # No default in the namespace: --zap-devel must know whether a level or format was given.
    LOG_LEVEL.add(parser, argparse.SUPPRESS)
    parser.add_argument(
        "--log-format", default=argparse.SUPPRESS, choices=LOG_FORMATS, help="(default: json)"
    )
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
    add_go_operator_flags(parser, d)


def add_go_operator_flags(parser: argparse.ArgumentParser, d: OperatorOptions) -> None:
    """The Go operator's flags that have no name of their own here, so its manifests run
    unchanged: zap's logging flags set the logging options; webhook flags are ignored."""
    zap = parser.add_argument_group("the Go operator's logging flags (zap)")
    zap.add_argument(
        "--zap-log-level",
        dest="log_level",
        type=zap_level,
        default=argparse.SUPPRESS,
        help="debug, info, warn, error, dpanic, panic, fatal, or a verbosity > 0 (debug)",
    )
    zap.add_argument(
        "--zap-encoder", dest="log_format", choices=LOG_FORMATS, default=argparse.SUPPRESS
    )
    add_bool_flag(
        zap,
        "--zap-devel",
        d.log_development,
        "development mode: console lines at debug level unless a level or encoder is given",
        dest="log_development",
    )
    zap.add_argument(
        "--zap-stacktrace-level",
        dest="log_stacktrace_level",
        choices=STACKTRACE_LEVELS,
        default=d.log_stacktrace_level,
        help="a logged exception's traceback is kept from this level up",
    )
    zap.add_argument(
        "--zap-time-encoding",
        dest="log_time_encoding",
        choices=TIME_ENCODINGS,
        default=d.log_time_encoding,
        help="how the `ts` of a JSON line is written",
    )
    webhooks = parser.add_argument_group("the Go operator's webhook flags (no webhooks here)")
    for flag in ("--webhook-cert-path", "--webhook-cert-name", "--webhook-cert-key"):
        webhooks.add_argument(
            flag,
            dest="ignored_flags",
            action=_Ignored,
            default=d.ignored_flags,
            help="accepted and ignored: this operator serves no webhook",
        )


class _Ignored(argparse.Action):
    """Takes the flag's value and remembers only that the flag was given."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = tuple(getattr(namespace, self.dest, ()))
        setattr(namespace, self.dest, (*given, option_string or self.dest))


def options_from_args(args: argparse.Namespace) -> OperatorOptions:
    """`run`'s parsed flags as options: each flag's dest names the field it sets; fields
    without a flag keep their defaults."""
    parsed = vars(args)
    options = OperatorOptions(
        **{
            field.name: parsed[field.name]
            for field in fields(OperatorOptions)
            if field.name in parsed
        }
    )
    if options.log_development:
        # zap's development defaults, under whatever level or format was given explicitly.
        options = replace(
            options,
            log_level=parsed.get("log_level", "debug"),
            log_format=parsed.get("log_format", "console"),
        )
    return options


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
    from baseten_operator.plan.flags import add_plan_arguments

    add_plan_arguments(plan)
    add_sandbox_command(commands)
    commands.add_parser(
        "crd", help="print the BasetenModel and BasetenSecret CustomResourceDefinitions (YAML)"
    )
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

        options = options_from_args(args)
        if not options.lease_duration > options.renew_deadline > options.retry_period:
            parser.error(
                "leader election needs --leader-elect-lease-duration > "
                "--leader-elect-renew-deadline > --leader-elect-retry-period"
            )
        return run_operator(options)
    if args.command == "plan":
        from baseten_operator.plan.command import run_plan

        return run_plan(args)
    if args.command == "sandbox":
        from baseten_operator.sandbox.command import run_sandbox

        return run_sandbox(args)
    if args.command == "crd":
        from baseten_operator.api.crds import all_crds_yaml

        sys.stdout.write(all_crds_yaml())
        return 0
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
