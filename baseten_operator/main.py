"""`baseten-operator run`: build every piece from the options and run the manager."""

from __future__ import annotations

import gc
import os
import sys
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version

import structlog

from baseten_operator.api.constants import BASETENMODELS
from baseten_operator.baseten.client import API_KEY_ENV, DEFAULT_TIMEOUT, BasetenClient
from baseten_operator.baseten.errors import ConfigError
from baseten_operator.baseten.pool import BasetenClientPool, MakeClient
from baseten_operator.config import OperatorOptions
from baseten_operator.controller.basetenmodel.setup import (
    enqueue_push_outcome,
    setup_with_manager,
    work_queue,
)
from baseten_operator.controller.basetensecret.context import OperatorIdentity
from baseten_operator.controller.basetensecret.fingerprint import fingerprint_key
from baseten_operator.controller.basetensecret.setup import SecretWiring, setup_secrets_with_manager
from baseten_operator.controller.shared.tenancy import TenancySources
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.fence import WriteFence
from baseten_operator.runtime.kubeconfig import KubeConfigError
from baseten_operator.runtime.logging import configure_logging, register_secret
from baseten_operator.runtime.manager import Manager, default_identity, install_signal_handlers
from baseten_operator.runtime.recorder import EventRecorder
from baseten_operator.truss.pusher import TrussPusher

log = structlog.get_logger(__name__)

EXIT_CONFIG_ERROR = 2
COMPONENT = "baseten-operator"
# A replica that lost its Lease is gone this long after noticing, stopped or not.
LOST_LEASE_EXIT_GRACE = 1.0
# A pass running longer than this many Baseten deadlines is stuck: /healthz fails.
STUCK_PASS_DEADLINES = 2
# Stop budgets of the services the controller uses, after its drain: the Events still
# queued, and the push children to kill and their supervisors to wait for.
RECORDER_FLUSH_TIMEOUT = 5.0
PUSHER_STOP_TIMEOUT = 10.0


def release() -> str:
    """The installed operator's version ("dev" when running from a bare source tree)."""
    try:
        return version("baseten-operator")
    except PackageNotFoundError:
        return "dev"


def user_agent(identity: str) -> str:
    """Names the replica in every Baseten and Kubernetes request: audit logs tell replicas apart."""
    return f"{COMPONENT}/{release()} ({identity})"


def remote_url(api_base_url: str) -> str:
    """truss talks to the Baseten root (its /graphql/), not to the REST API under /v1."""
    return api_base_url.rstrip("/").removesuffix("/v1")


def operator_namespace() -> str:
    """The namespace the operator runs in (its Lease's default, its API key Secrets')."""
    return os.environ.get("POD_NAMESPACE") or "default"


# The ServiceAccount the manifests give the operator (config/rbac, the chart's default).
DEFAULT_SERVICE_ACCOUNT = "baseten-operator-controller-manager"


def operator_identity() -> OperatorIdentity:
    """Who a namespace grants Secret reads to, when the API server's refusal does not say
    (SERVICE_ACCOUNT_NAME, set by the Deployment, else the manifests' name)."""
    return OperatorIdentity(
        operator_namespace(), os.environ.get("SERVICE_ACCOUNT_NAME") or DEFAULT_SERVICE_ACCOUNT
    )


def client_factory(
    base_url: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    user_agent: str | None = None,
    time_scale: float = 1.0,
) -> MakeClient:
    """The one place every namespace's Baseten client is built, like the operator's own."""
    return lambda api_key: BasetenClient(
        api_key, base_url, timeout=timeout, user_agent=user_agent, time_scale=time_scale
    )


def fenced_clients(make_client: MakeClient, fence: WriteFence) -> MakeClient:
    """`make_client`, with every client it builds writing only through `fence`."""

    def make(api_key: str) -> BasetenClient:
        client: BasetenClient = make_client(api_key)
        client.fence_writes(fence)
        return client

    return make


def manager_options(options: OperatorOptions) -> OperatorOptions:
    """The options as the Manager takes them (they are ManagerOptions): an empty Lease
    namespace is the operator's own."""
    return replace(
        options,
        leader_election_namespace=options.leader_election_namespace or operator_namespace(),
    )


def build_operator(
    options: OperatorOptions,
    *,
    kube: KubeClient,
    baseten: BasetenClient,
    clock: Clock,
    identity: str | None = None,
    make_client: MakeClient | None = None,
) -> Manager:
    """Every piece of the operator wired on a Manager that is ready to start (not started).

    `baseten` is the client of the operator's own key; `make_client` builds the client of a
    namespace's key (default: one like `baseten`). The truss pusher's child processes get
    the operator's API key from BASETEN_API_KEY. Every write (Baseten with any key,
    status, finalizers, Events, push launches) passes the manager's write fence; the
    Lease itself is served without connection retries.
    """
    api_key = os.environ[API_KEY_ENV].strip()
    # The key must not reach a log line in any form, whoever logs it (truss, urllib3, us).
    register_secret(api_key)
    timing = Timing.scaled(options.time_scale)
    manager = Manager(
        kube,
        manager_options(options),
        clock=clock,
        identity=identity,
        lease_client=kube.without_connect_retries(),
    )
    baseten.fence_writes(manager.fence)
    writer = kube.fenced(manager.fence)

    recorder = EventRecorder(writer, COMPONENT, clock=clock)
    manager.add(recorder, stop_timeout=RECORDER_FLUSH_TIMEOUT)
    # The queue first: the pusher reports each outcome straight into it.
    queue = work_queue(clock)
    pusher = TrussPusher(
        api_key,
        remote_url(baseten.base_url),
        max_concurrent=options.max_concurrent_pushes,
        on_done=enqueue_push_outcome(queue),
        clock=clock,
        fence=manager.fence,
    )
    manager.add(pusher, stop_timeout=PUSHER_STOP_TIMEOUT)
    pool = BasetenClientPool(
        baseten,
        fenced_clients(
            make_client or client_factory(baseten.base_url, time_scale=options.time_scale),
            manager.fence,
        ),
    )
    # One set of tenancy rules for both kinds: each Namespace's policy is read once.
    tenancy = TenancySources.on_manager(
        manager,
        pool=pool,
        operator_namespace=operator_namespace(),
        require_policy=options.require_namespace_policy,
    )
    controller = setup_with_manager(
        manager,
        tenancy=tenancy,
        kube=writer,
        recorder=recorder,
        clock=clock,
        timing=timing,
        pusher=pusher,
        queue=queue,
        max_concurrent_reconciles=options.max_concurrent_reconciles,
    )
    secret_controller = setup_secrets_with_manager(
        manager,
        wiring=SecretWiring(manager.informer(BASETENMODELS), controller, tenancy),
        kube=writer,
        recorder=recorder,
        clock=clock,
        timing=timing,
        fingerprint_key=fingerprint_key(api_key),
        identity=operator_identity(),
    )
    stuck_after = STUCK_PASS_DEADLINES * options.baseten_timeout
    manager.add_liveness_check(
        "workers-responsive",
        lambda: max(controller.longest_running_pass(), secret_controller.longest_running_pass())
        <= stuck_after,
    )
    return manager


def run_operator(options: OperatorOptions) -> int:
    configure_logging(
        options.log_level,
        "console" if options.log_format == "console" else "json",
        time_encoding=options.log_time_encoding,
        stacktrace_level=options.log_stacktrace_level,
    )
    if options.ignored_flags:
        log.warning(
            "flags accepted for compatibility with the Go operator and ignored: this "
            "operator serves no webhook",
            flags=sorted(set(options.ignored_flags)),
        )
    identity = default_identity()
    try:
        baseten = BasetenClient.from_env(
            timeout=options.baseten_timeout,
            user_agent=user_agent(identity),
            time_scale=options.time_scale,
        )
    except ConfigError as error:
        print(f"baseten-operator: {error}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    make_client = client_factory(
        baseten.base_url,
        timeout=options.baseten_timeout,
        user_agent=user_agent(identity),
        time_scale=options.time_scale,
    )
    try:
        kube = (
            KubeClient.from_kubeconfig(options.kubeconfig)
            if options.kubeconfig
            else KubeClient.auto()
        )
    except KubeConfigError as error:
        print(f"baseten-operator: {error}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    if options.enable_http2:
        log.warning("--enable-http2 is accepted but not implemented: serving HTTP/1.1")
    # Kubernetes writes name the replica too (audit logs, the soak's fencing checks).
    kube.user_agent = user_agent(identity)
    manager = build_operator(
        options,
        kube=kube,
        baseten=baseten,
        clock=RealClock(),
        identity=identity,
        make_client=make_client,
    )
    install_signal_handlers(manager)
    log.info(
        "starting baseten-operator",
        version=release(),
        watch_namespace=options.namespace or "(all)",
        time_scale=options.time_scale,
        leader_elect=options.leader_elect,
        require_namespace_policy=options.require_namespace_policy,
    )
    # Everything made so far (imported code, pydantic's schemas, the wiring) lives as long
    # as the process: frozen out of the collector's generations, a full collection walks
    # only what the work allocates (25 ms less per full collection, measured).
    gc.freeze()
    return manager.run(lost_lease_grace=LOST_LEASE_EXIT_GRACE)
