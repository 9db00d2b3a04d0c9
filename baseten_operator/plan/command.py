"""`baseten-operator plan`: the run from inputs to output and exit code (its flags: flags.py)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from baseten_operator.baseten.client import API_KEY_ENV
from baseten_operator.baseten.errors import ConfigError
from baseten_operator.controller.shared.secrets import DirectSecrets
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.main import operator_identity, operator_namespace
from baseten_operator.plan.inputs import (
    ConfigMaps,
    InputError,
    PlanInputs,
    context_namespace,
    from_manifests,
    in_namespace,
    read_manifests,
    with_live_state,
)
from baseten_operator.plan.planner import ModelPlan, Planner
from baseten_operator.plan.render import has_changes, has_errors, to_json, to_table
from baseten_operator.plan.secret_planner import PlanSecrets, SecretPlan, SecretPlanner
from baseten_operator.plan.tenancy import TenancyView
from baseten_operator.plan.world import (
    RecordingBaseten,
    read_only_client_from_env,
    read_only_clients,
)
from baseten_operator.prometheus.client import PrometheusClient
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.errors import ApiError
from baseten_operator.runtime.kubeconfig import KubeConfigError
from baseten_operator.runtime.logging import configure_logging

# Like `terraform plan -detailed-exitcode`.
EXIT_NO_CHANGES = 0
EXIT_ERROR = 1
EXIT_CHANGES = 2


def _kube(args: argparse.Namespace) -> KubeClient | None:
    if not args.cluster:
        return None
    return KubeClient.from_kubeconfig(args.kubeconfig) if args.kubeconfig else KubeClient.auto()


def _tenancy(args: argparse.Namespace, kube: KubeClient | None) -> TenancyView:
    if kube is None:
        return TenancyView.unknown()
    return TenancyView.from_cluster(
        kube,
        args.operator_namespace or operator_namespace(),
        require_policy=args.require_namespace_policy,
    )


def gather_inputs(
    args: argparse.Namespace, namespace: str, kube: Any, tenancy: TenancyView
) -> PlanInputs:
    """The manifests (on their live objects' state), else the live BasetenModels in scope."""
    if args.filename:
        inputs = from_manifests(read_manifests(args.filename), namespace, kube)
        live = {
            (o["metadata"]["namespace"], o["metadata"]["name"]): o
            for o in (*tenancy.live_models, *tenancy.live_secrets)
        }
        inputs.models = [with_live_state(obj, live) for obj in inputs.models]
        inputs.basetensecrets = [with_live_state(obj, live) for obj in inputs.basetensecrets]
        return inputs
    scope = None if args.all_namespaces else namespace
    return PlanInputs(
        in_namespace(tenancy.live_models, scope),
        ConfigMaps(kube=kube),
        in_namespace(tenancy.live_secrets, scope),
    )


def _usage_error(args: argparse.Namespace) -> str | None:
    if not args.filename and not args.cluster:
        return "give -f PATH or --cluster"
    if args.require_namespace_policy and not args.cluster:
        return "--require-namespace-policy needs --cluster: namespace policies are read there"
    return None


def run_plan(args: argparse.Namespace, clock: Clock | None = None) -> int:
    """`clock`: the wall clock the passes read (the machine's; a test pins one to hold the
    plan to a pass at the same instant)."""
    # Logs go to stderr, warnings only: stdout is the plan.
    configure_logging("warning", "console", stream=sys.stderr)
    problem = _usage_error(args)
    if problem is not None:
        print(f"baseten-operator plan: {problem}", file=sys.stderr)
        return EXIT_ERROR
    try:
        client = read_only_client_from_env(args.baseten_timeout)
        kube = _kube(args)
        tenancy = _tenancy(args, kube)
        namespace = args.namespace or context_namespace(args.kubeconfig)
        inputs = gather_inputs(args, namespace, kube, tenancy)
        planner = Planner(
            RecordingBaseten(client),
            inputs.configmaps,
            clock or RealClock(),
            Timing.scaled(args.time_scale),
            tenancy=tenancy,
            namespace_client=read_only_clients(client.base_url, args.baseten_timeout),
            secrets=DirectSecrets(kube) if kube is not None else None,
            prometheus=PrometheusClient(),
        )
        plans = planner.plan(inputs.models, destroy=args.destroy)
        secret_plans = SecretPlanner(
            planner.baseten,
            planner.rules(),
            PlanSecrets(inputs.secrets, kube),
            planner.clock,
            os.environ[API_KEY_ENV].strip(),  # the client above checked it is set
            operator_identity(),  # named only in FORBIDDEN, which a plan never reaches
            planner.timing,
        ).plan(
            inputs.basetensecrets,
            live=tenancy.live_secrets,
            models=[*tenancy.live_models, *inputs.models],
            destroy=args.destroy,
        )
    except (ConfigError, KubeConfigError, InputError, ApiError, OSError) as error:
        print(f"baseten-operator plan: {error}", file=sys.stderr)
        return EXIT_ERROR
    notes = tenancy.notes()
    render = to_json if args.output == "json" else to_table
    sys.stdout.write(render(plans, notes, secret_plans))
    for kind, planned in (("BasetenModels", plans), ("BasetenSecrets", secret_plans)):
        failed = [plan for plan in planned if plan.error]
        if failed:
            print(
                f"baseten-operator plan: {len(failed)} of {len(planned)} {kind} could not be "
                f"planned; {failed[0].key}: {failed[0].error}",
                file=sys.stderr,
            )
    return exit_code([*plans, *secret_plans], detailed=args.detailed_exitcode)


def exit_code(plans: Sequence[ModelPlan | SecretPlan], *, detailed: bool) -> int:
    if has_errors(plans):
        return EXIT_ERROR
    if detailed and has_changes(plans):
        return EXIT_CHANGES
    return EXIT_NO_CHANGES
