"""Wiring: the BasetenSecret controller on the Manager the BasetenModel controller runs on
(the same informers, leader election, write fence and tenancy rules), and the watches
that wake a BasetenSecret:

- its referenced Secret's data changes (one watch per referenced Secret, watches.py);
- its namespace's policy annotations change, or the API key Secret they name;
- another BasetenSecret starts or stops claiming its Baseten secret name;
- a BasetenModel starts or stops naming its Baseten secret (a blocked deletion goes on).

And the one way back: a BasetenSecret that wrote its value wakes the BasetenModels naming
it, so a model waiting for its secrets goes on at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from baseten_operator.api.constants import BASETENSECRETS
from baseten_operator.controller.basetensecret.context import OperatorIdentity, SecretDependencies
from baseten_operator.controller.basetensecret.ownership import (
    SECRET_CLAIM_INDEX,
    SECRET_REF_INDEX,
    secret_claim_index,
    secret_ref_index,
)
from baseten_operator.controller.basetensecret.reconciler import BasetenSecretReconciler
from baseten_operator.controller.basetensecret.telemetry import LAST_SYNC_AGES
from baseten_operator.controller.basetensecret.watches import ReferencedSecrets, secret_informer
from baseten_operator.controller.shared.namespace_policy import policy_changed
from baseten_operator.controller.shared.ports import KubeAPI, Recorder
from baseten_operator.controller.shared.tenancy import TenancySources
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.runtime.clock import Clock
from baseten_operator.runtime.controller import Controller, Request, ignore_status_only_updates
from baseten_operator.runtime.informer import Informer

SECRET_CONTROLLER_NAME = "basetensecret"
# BasetenSecrets by the Baseten secret name they write (deleting ones included).
SECRET_NAME_INDEX = "secret.name"
# BasetenModels by each Baseten secret name their trussConfig.secrets names.
MODEL_SECRETS_INDEX = "trussConfig.secrets"


def secret_name_index(obj: dict[str, Any]) -> list[str]:
    name = (obj.get("spec") or {}).get("name")
    return [name] if isinstance(name, str) and name else []


def model_secrets_index(obj: dict[str, Any]) -> list[str]:
    secrets = ((obj.get("spec") or {}).get("trussConfig") or {}).get("secrets")
    return sorted(name for name in secrets if isinstance(name, str)) if secrets else []


def _requests(objs: list[dict[str, Any]]) -> list[Request]:
    return list(dict.fromkeys(Request.for_object(obj) for obj in objs))


@dataclass(frozen=True)
class SecretWiring:
    """What the BasetenSecret controller shares with the BasetenModel one: the BasetenModel
    informer and controller (a model waiting for a secret goes on once it is written), and
    the tenancy rules with their informers."""

    models: Informer
    model_controller: Controller
    tenancy: TenancySources


def build_secret_controller(
    *,
    crs: Informer,
    wiring: SecretWiring,
    kube: KubeAPI,
    make_secret_informer: Callable[[str, str], Informer],
    recorder: Recorder,
    clock: Clock,
    timing: Timing,
    fingerprint_key: bytes,
    identity: OperatorIdentity,
    max_concurrent_reconciles: int = 2,
) -> tuple[Controller, ReferencedSecrets]:
    """The controller over informers not yet started (indexers must exist before the list)."""
    crs.add_indexer(SECRET_CLAIM_INDEX, secret_claim_index)
    crs.add_indexer(SECRET_NAME_INDEX, secret_name_index)
    crs.add_indexer(SECRET_REF_INDEX, secret_ref_index)
    models = wiring.models
    models.add_indexer(MODEL_SECRETS_INDEX, model_secrets_index)

    def wake_models(name: str) -> None:
        for model in models.by_index(MODEL_SECRETS_INDEX, name):
            wiring.model_controller.enqueue(Request.for_object(model))

    queue_holder: list[Controller] = []

    def wake_readers(namespace: str, name: str) -> None:
        for obj in crs.by_index(SECRET_REF_INDEX, f"{namespace}/{name}"):
            queue_holder[0].enqueue(Request.for_object(obj))

    referenced = ReferencedSecrets(kube, make_secret_informer, wake_readers)
    deps = SecretDependencies(
        kube=kube,
        baseten=wiring.tenancy.pool.default,
        recorder=recorder,
        clock=clock,
        timing=timing,
        crs=crs,
        secrets=referenced,
        claimants=lambda name: crs.by_index(SECRET_CLAIM_INDEX, name),
        models_naming=lambda name: models.by_index(MODEL_SECRETS_INDEX, name),
        fingerprint_key=fingerprint_key,
        identity=identity,
        ages=LAST_SYNC_AGES,
        on_synced=wake_models,
        tenancy=wiring.tenancy.tenancy,
    )
    controller = Controller(
        SECRET_CONTROLLER_NAME,
        crs,
        BasetenSecretReconciler(deps),
        max_concurrent_reconciles=max_concurrent_reconciles,
        clock=clock,
        update_filter=ignore_status_only_updates,
        for_resource=BASETENSECRETS,
    )
    queue_holder.append(controller)
    _track_references(crs, referenced)
    _watch_claims(controller, crs)
    _watch_models(controller, crs, models)
    _watch_tenancy(controller, crs, wiring)
    return controller, referenced


def _track_references(crs: Informer, referenced: ReferencedSecrets) -> None:
    """A Secret is watched while a BasetenSecret that is not being deleted names it."""

    def refer(obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or ''}/{meta.get('name')}"
        ref = ((obj.get("spec") or {}).get("secretRef") or {}).get("name")
        deleting = bool(meta.get("deletionTimestamp"))
        secret = None if deleting or not ref else (meta.get("namespace") or "", str(ref))
        referenced.refer(key, secret)

    def forget(obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        referenced.refer(f"{meta.get('namespace') or ''}/{meta.get('name')}", None)

    crs.add_event_handler(on_add=refer, on_update=lambda _old, new: refer(new), on_delete=forget)


def _watch_claims(controller: Controller, crs: Informer) -> None:
    """A BasetenSecret that stops (or starts) claiming a name wakes that name's others: the
    next in line takes over, or an owner younger than it stands down."""

    def claimants_of(obj: dict[str, Any]) -> list[Request]:
        return _requests(
            [
                other
                for name in secret_name_index(obj)
                for other in crs.by_index(SECRET_NAME_INDEX, name)
            ]
        )

    def claim_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
        return secret_claim_index(old) != secret_claim_index(new)

    controller.watch(crs, claimants_of, update_filter=claim_changed)


def _watch_models(controller: Controller, crs: Informer, models: Informer) -> None:
    """A BasetenModel that names (or stops naming) a Baseten secret wakes its BasetenSecrets:
    a blocked deletion is checked again at once."""

    def names_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
        deleting = [bool((o.get("metadata") or {}).get("deletionTimestamp")) for o in (old, new)]
        return model_secrets_index(old) != model_secrets_index(new) or deleting[0] != deleting[1]

    controller.watch(
        models,
        lambda model: _requests(
            [
                obj
                for name in model_secrets_index(model)
                for obj in crs.by_index(SECRET_NAME_INDEX, name)
            ]
        ),
        update_filter=names_changed,
    )


def _watch_tenancy(controller: Controller, crs: Informer, wiring: SecretWiring) -> None:
    """A namespace's policy, or the API key Secret it names, wakes its BasetenSecrets and
    those sharing their names (the team is part of a claim)."""
    sources = wiring.tenancy

    def for_namespace(namespace: dict[str, Any]) -> list[Request]:
        own = crs.list((namespace.get("metadata") or {}).get("name") or "")
        sharing = [
            other
            for obj in own
            for name in secret_name_index(obj)
            for other in crs.by_index(SECRET_NAME_INDEX, name)
        ]
        return _requests(own + sharing)

    controller.watch(sources.namespaces, for_namespace, update_filter=policy_changed)
    controller.watch(
        sources.secrets,
        lambda secret: [
            request
            for namespace in sources.namespaces_naming_key(secret)
            for request in for_namespace(namespace)
        ],
        update_filter=lambda old, new: old.get("data") != new.get("data"),
    )


def setup_secrets_with_manager(
    manager: Any,
    *,
    wiring: SecretWiring,
    kube: KubeAPI,
    recorder: Recorder,
    clock: Clock,
    timing: Timing,
    fingerprint_key: bytes,
    identity: OperatorIdentity,
) -> Controller:
    """`build_secret_controller` on the manager's shared informers, registered with it (the
    referenced Secrets' watches stopped with its informers)."""
    controller, referenced = build_secret_controller(
        # Optional: an operator upgraded before the BasetenSecret CRD (install.yaml's CRDs
        # not applied yet, a benchmark's cluster) keeps reconciling BasetenModels and is
        # ready; the kind is picked up by a later list once its CRD is installed.
        crs=manager.informer(BASETENSECRETS, optional=True),
        wiring=wiring,
        kube=kube,
        make_secret_informer=secret_informer(manager.client, clock),
        recorder=recorder,
        clock=clock,
        timing=timing,
        fingerprint_key=fingerprint_key,
        identity=identity,
    )
    manager.add(controller)
    manager.add_watches(referenced)
    return controller
