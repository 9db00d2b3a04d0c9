"""Deletion (docs/contract.md section 7): what CR teardown does to the Baseten model."""

from __future__ import annotations

from typing import Any

import structlog

from baseten_operator.api.constants import (
    BASETENMODELS,
    DELETE_BLOCKED,
    DELETE_FAILED,
    DELETING,
    FINALIZER,
    DeletionPolicy,
    EventReason,
    Mode,
)
from baseten_operator.api.types import BasetenModelSpec
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import EnvironmentV1
from baseten_operator.controller import messages
from baseten_operator.controller.context import Pass, Requeue
from baseten_operator.runtime.client import NotFound

log = structlog.get_logger(__name__)


def has_finalizer(obj: dict[str, Any]) -> bool:
    return FINALIZER in (obj.get("metadata", {}).get("finalizers") or [])


def set_finalizer(kube: Any, obj: dict[str, Any], present: bool) -> None:
    """Add or remove our finalizer, conditional on the version this pass read."""
    meta = obj["metadata"]
    finalizers = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
    if present:
        finalizers.append(FINALIZER)
    patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
    try:
        kube.patch(BASETENMODELS, meta["name"], patch, meta.get("namespace"))
    except NotFound:
        if present:
            raise
        # Removing the finalizer of an object already gone is success.


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

    p.set(DELETING, messages.deleting(model_id))
    p.writer.flush()
    try:
        p.deps.baseten.delete_model(model_id)
    except BasetenAPIError as error:
        if not error.is_not_found:
            p.event(EventReason.MODEL_DELETE_FAILED, messages.delete_failed_event(model_id, error))
            p.set(DELETE_FAILED, messages.delete_failed(model_id, error))
            raise Requeue(p.deps.timing.delete_blocked) from error
        p.event(EventReason.MODEL_DELETED, messages.model_already_deleted_event(model_id))
    else:
        p.event(EventReason.MODEL_DELETED, messages.model_deleted_event(model_id))
    set_finalizer(p.deps.kube, p.writer.obj, present=False)


def _check_guardrails(p: Pass, model_id: str) -> None:
    """Refuse while any environment of the model (not only this CR's) still serves."""
    try:
        environments: list[EnvironmentV1] = p.deps.baseten.list_environments(model_id)
    except BasetenAPIError as error:
        if error.is_not_found:
            return  # no model, nothing to protect
        p.set(DELETE_BLOCKED, messages.delete_list_failed(model_id, error))
        raise Requeue(p.deps.timing.delete_blocked) from error
    blockers = sorted(
        (env.name, minimum, active)
        for env in environments
        for minimum, active in [_load(env)]
        if minimum > 0 or active > 0
    )
    if not blockers:
        return
    message = messages.delete_blocked(blockers)
    entering = p.status.deployment_status != DELETE_BLOCKED
    p.set(DELETE_BLOCKED, message)
    if entering:
        p.event(EventReason.MODEL_DELETE_BLOCKED, message)
    raise Requeue(p.deps.timing.delete_blocked)


def _load(env: EnvironmentV1) -> tuple[int, int]:
    minimum = (env.autoscaling_settings.min_replica or 0) if env.autoscaling_settings else 0
    active = sum(
        deployment.active_replica_count
        for deployment in (env.current_deployment, env.candidate_deployment)
        if deployment is not None
    )
    return minimum, active
