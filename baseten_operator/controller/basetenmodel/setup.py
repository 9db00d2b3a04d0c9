"""Wiring: the BasetenModel controller, its watches and its indexes, on a Manager."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from baseten_operator.api.constants import BASETENMODELS
from baseten_operator.controller.basetenmodel.context import Dependencies
from baseten_operator.controller.basetenmodel.ownership import CLAIM_INDEX, claim_index
from baseten_operator.controller.basetenmodel.reconciler import BasetenModelReconciler
from baseten_operator.controller.basetenmodel.truss_source import setup_script_configmap
from baseten_operator.controller.basetenmodel.watches import watch_tenancy
from baseten_operator.controller.shared.ports import (
    BasetenAPI,
    KubeAPI,
    PrometheusAPI,
    Pusher,
    Recorder,
    SecretSource,
)
from baseten_operator.controller.shared.secrets import DirectSecrets
from baseten_operator.controller.shared.tenancy import TenancySources
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.prometheus.client import PrometheusClient
from baseten_operator.runtime.clock import Clock
from baseten_operator.runtime.controller import Controller, Request, ignore_status_only_updates
from baseten_operator.runtime.fetched import FetchedObjects
from baseten_operator.runtime.informer import Informer
from baseten_operator.runtime.resource import CONFIGMAPS
from baseten_operator.runtime.workqueue import RateLimitingQueue
from baseten_operator.truss.pusher import PushOutcome

CONTROLLER_NAME = "basetenmodel"
# BasetenModels by spec.modelName: siblings protect each other's sources from orphan cleanup.
MODEL_NAME_INDEX = "spec.modelName"
# BasetenModels by the `ns/name` of the ConfigMap their setup script comes from.
SETUP_CONFIGMAP_INDEX = "setupScript.configMapRef"


def model_name_index(obj: dict[str, Any]) -> list[str]:
    name = (obj.get("spec") or {}).get("modelName")
    return [name] if isinstance(name, str) and name else []


def setup_configmap_index(obj: dict[str, Any]) -> list[str]:
    key = setup_script_configmap(
        obj.get("metadata", {}).get("namespace") or "", obj.get("spec") or {}
    )
    return [key] if key else []


def requests_for_configmap(models: Informer) -> Callable[[dict[str, Any]], list[Request]]:
    """A change to a ConfigMap re-enqueues every BasetenModel whose setup script it holds."""

    def map_fn(configmap: dict[str, Any]) -> list[Request]:
        meta = configmap.get("metadata", {})
        key = f"{meta.get('namespace') or ''}/{meta.get('name')}"
        return [Request.for_object(obj) for obj in models.by_index(SETUP_CONFIGMAP_INDEX, key)]

    return map_fn


def work_queue(clock: Clock) -> RateLimitingQueue:
    """The controller's queue, made before the controller: the pusher the controller's
    passes use reports into it from its construction on (`enqueue_push_outcome`)."""
    return RateLimitingQueue(CONTROLLER_NAME, clock=clock)


def enqueue_push_outcome(queue: RateLimitingQueue) -> Callable[[PushOutcome], None]:
    """The pusher's on_done: enqueue the CR so the reconciler (the only status writer)
    collects the outcome."""

    def enqueue(outcome: PushOutcome) -> None:
        namespace, _, name = outcome.key.partition("/")
        queue.add(Request(namespace, name))

    return enqueue


def build_controller(
    *,
    models: Informer,
    configmaps: Informer,
    kube: KubeAPI,
    baseten: BasetenAPI,
    recorder: Recorder,
    clock: Clock,
    timing: Timing,
    pusher: Pusher | None = None,
    queue: RateLimitingQueue | None = None,
    max_concurrent_reconciles: int = 5,
    rng: Callable[[], float] = random.random,
    tenancy: TenancySources | None = None,
    secrets: SecretSource | None = None,
    prometheus: PrometheusAPI | None = None,
) -> Controller:
    """The controller over informers not yet started (indexers must exist before the list).

    `configmaps` may cache metadata only: a pass reads a setup script's ConfigMap whole
    through `kube`.

    Without `tenancy` every CR is one tenant's: no namespace policy, no ownership rule.
    `queue` (default: a new one) is the `work_queue` the pusher reports into.
    """
    models.add_indexer(MODEL_NAME_INDEX, model_name_index)
    models.add_indexer(SETUP_CONFIGMAP_INDEX, setup_configmap_index)
    models.add_indexer(CLAIM_INDEX, claim_index)
    deps = Dependencies(
        kube=kube,
        baseten=baseten,
        recorder=recorder,
        clock=clock,
        timing=timing,
        models=models,
        # Only the setup scripts' ConfigMaps are read whole, when a pass asks (docs/design.md).
        configmaps=FetchedObjects(kube, CONFIGMAPS, configmaps),
        siblings=lambda model_name: models.by_index(MODEL_NAME_INDEX, model_name),
        claimants=lambda claim: models.by_index(CLAIM_INDEX, claim),
        pusher=pusher,
        random=rng,
        tenancy=tenancy.tenancy if tenancy is not None else None,
        secrets=secrets,
        prometheus=prometheus,
    )
    controller = Controller(
        CONTROLLER_NAME,
        models,
        BasetenModelReconciler(deps),
        max_concurrent_reconciles=max_concurrent_reconciles,
        queue=queue,
        clock=clock,
        # The reconciler is the only writer of status and always says when to look again.
        update_filter=ignore_status_only_updates,
        for_resource=BASETENMODELS,
    )
    controller.watch(configmaps, requests_for_configmap(models))
    if tenancy is not None:
        watch_tenancy(controller, models=models, sources=tenancy)
    return controller


def setup_with_manager(
    manager: Any,
    *,
    tenancy: TenancySources,
    kube: KubeAPI,
    recorder: Recorder,
    clock: Clock,
    timing: Timing,
    pusher: Pusher | None = None,
    queue: RateLimitingQueue | None = None,
    max_concurrent_reconciles: int = 5,
) -> Controller:
    """`build_controller` on the manager's shared informers, registered with it."""
    controller = build_controller(
        models=manager.informer(BASETENMODELS),
        # Metadata only: no copy of every ConfigMap in the cluster (their data is fetched).
        configmaps=manager.informer(CONFIGMAPS, metadata_only=True),
        kube=kube,
        baseten=tenancy.pool.default,
        recorder=recorder,
        clock=clock,
        timing=timing,
        pusher=pusher,
        queue=queue,
        max_concurrent_reconciles=max_concurrent_reconciles,
        tenancy=tenancy,
        # Section 14's Prometheus checks: their tokens' Secrets, read when a check runs.
        secrets=DirectSecrets(kube),
        prometheus=PrometheusClient(),
    )
    manager.add(controller)
    return controller
