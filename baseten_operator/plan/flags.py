"""`baseten-operator plan`'s flags, apart from its code: every command's parser is built at
each start, and `run` should not import the planner to describe a command it does not run."""

from __future__ import annotations

import argparse

from baseten_operator.baseten.client import DEFAULT_TIMEOUT


def add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="PATH",
        help="manifests to plan: a YAML/JSON file, a directory, or - for stdin (repeatable)",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="read the cluster: the live BasetenModels (without -f), their recorded status "
        "(with -f), and the setup-script ConfigMaps the manifests lack",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        default=None,
        help="namespace of the manifests without one, and of the live BasetenModels to plan "
        "(default: the kubeconfig context's, as for kubectl)",
    )
    parser.add_argument(
        "-A", "--all-namespaces", action="store_true", help="with --cluster: every namespace"
    )
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig path")
    parser.add_argument(
        "--operator-namespace",
        default=None,
        help="with --cluster: the operator's namespace, where the API key Secrets that "
        "namespaces name live (default: $POD_NAMESPACE, else default)",
    )
    parser.add_argument(
        "--require-namespace-policy",
        action="store_true",
        help="with --cluster: plan as an operator run with --require-namespace-policy (a "
        "namespace without the models.baseten.com/allowed-models annotation manages no model)",
    )
    parser.add_argument("-o", "--output", choices=["table", "json"], default="table")
    parser.add_argument(
        "--detailed-exitcode",
        action="store_true",
        help="exit 0 with no changes, 2 with changes pending, 1 on error",
    )
    parser.add_argument(
        "--destroy", action="store_true", help="plan the deletion of the given BasetenModels"
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="the operator's --time-scale (tests, sandbox): durations it decides by",
    )
    parser.add_argument("--baseten-timeout", type=float, default=DEFAULT_TIMEOUT)
