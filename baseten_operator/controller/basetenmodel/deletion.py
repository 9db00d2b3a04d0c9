"""Deletion (docs/contract.md section 7): what CR teardown does to the Baseten model."""

from __future__ import annotations

from typing import Any, NoReturn

import structlog

from baseten_operator.api.constants import (
    BASETENMODELS,
    DELETE_BLOCKED,
    DELETE_FAILED,
    DELETING,
    DeletionPolicy,
    EventReason,
    Mode,
)
from baseten_operator.api.types import BasetenModelSpec
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import EnvironmentV1
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.shared.endings import RequeueAfter
from baseten_operator.controller.shared.finalizers import set_finalizer_on
from baseten_operator.controller.shared.ports import KubeAPI

log = structlog.get_logger(__name__)


def set_finalizer(kube: KubeAPI, obj: dict[str, Any], present: bool) -> None:
    """Add or remove our finalizer on a BasetenModel, conditional on the version read."""
    set_finalizer_on(kube, BASETENMODELS, obj, present=present)


def retains_model(spec: BasetenModelSpec | None, model_id: str | None) -> bool:
    """Pause and Observe always retain; so does Retain, and an object never resolved."""
    if spec is None or not model_id:
        return True
    return spec.effective_mode != Mode.RECONCILE or spec.deletion_policy == DeletionPolicy.RETAIN


def finalize(p: Pass) -> None:
    """Delete the model per deletionPolicy, then let the object go. Ends the pass."""
    model_id = p.status.model_id
    assert model_id
    if p.spec.deletion_policy == DeletionPolicy.DELETE_WITH_GUARDRAILS:
        _check_guardrails(p, model_id)

    p.report(DELETING, messages.deleting(model_id))
    p.persist_intent()
    try:
        p.deps.baseten.delete_model(model_id)
    except BasetenAPIError as error:
        if not error.is_not_found:
            p.event(EventReason.MODEL_DELETE_FAILED, messages.delete_failed_event(model_id, error))
            p.report(DELETE_FAILED, messages.delete_failed(model_id, error))
            raise RequeueAfter(p.deps.timing.delete_blocked) from error
        p.event(EventReason.MODEL_DELETED, messages.model_already_deleted_event(model_id))
    else:
        p.event(EventReason.MODEL_DELETED, messages.model_deleted_event(model_id))
    set_finalizer(p.deps.kube, p.stored_obj, present=False)


def _check_guardrails(p: Pass, model_id: str) -> None:
    """Refuse while any environment of the model (not only this CR's) still serves, and
    whenever Baseten's answer leaves that uncertain: fail closed, never delete on a guess."""
    try:
        environments: list[EnvironmentV1] = p.deps.baseten.list_environments(model_id)
    except BasetenAPIError as error:
        # A malformed answer (an entry that does not parse) arrives here too.
        if error.is_not_found:
            return  # no model, nothing to protect
        _block(p, messages.delete_list_failed(model_id, error))
    if not environments:
        evidence = _known_environment(p, model_id)
        if evidence is not None:
            _block(p, messages.delete_no_environments_listed(model_id, *evidence))
        return
    blockers = []
    for env in sorted(environments, key=lambda env: env.name):
        load = _load(env)
        if isinstance(load, str):  # one unknown count outweighs every known one
            _block(p, messages.delete_replicas_unknown(env.name, load))
        minimum, active = load
        if minimum > 0 or active > 0:
            blockers.append((env.name, minimum, active))
    if blockers:
        _block(p, messages.delete_blocked(blockers))


def _block(p: Pass, message: str) -> NoReturn:
    """DELETE_BLOCKED with `message`; the Event when entering it or when the reason changes."""
    p.enter(DELETE_BLOCKED, message, EventReason.MODEL_DELETE_BLOCKED)
    raise RequeueAfter(p.deps.timing.delete_blocked)


def _load(env: EnvironmentV1) -> tuple[int, int] | str:
    """(min_replica, active replicas of current and candidate), or the member Baseten left
    out of its answer when one of them cannot be known."""
    settings = env.autoscaling_settings
    if settings is None:
        return "autoscaling_settings"
    if settings.min_replica is None:
        return "autoscaling_settings.min_replica"
    if not env.stated("current_deployment"):
        return "current_deployment"
    active = 0
    for member, deployment in (
        ("current_deployment", env.current_deployment),
        ("candidate_deployment", env.candidate_deployment),
    ):
        if deployment is None:
            continue
        if deployment.active_replica_count is None:
            return f"{member}.active_replica_count"
        active += deployment.active_replica_count
    return settings.min_replica, active


def _known_environment(p: Pass, model_id: str) -> tuple[str, str, str] | None:
    """(who, deployment, environment): a BasetenModel of this model whose status records a
    deployment in its environment, this one first; None when none does."""
    own = p.status.active_deployment_name or p.status.candidate_deployment_name
    if own:
        return "this BasetenModel", own, p.env
    for sibling in p.deps.siblings(p.spec.model_name):
        meta = sibling.get("metadata") or {}
        status = sibling.get("status") or {}
        recorded = status.get("activeDeploymentName") or status.get("candidateDeploymentName")
        if status.get("modelID") != model_id or not recorded:
            continue
        environment = ((sibling.get("spec") or {}).get("environment") or {}).get("name")
        who = f"BasetenModel {meta.get('namespace')}/{meta.get('name')}"
        return who, str(recorded), str(environment or "unknown")
    return None
