"""The Baseten model ID of a pass (docs/contract.md sections 3.6 and 3.15)."""

from __future__ import annotations

from typing import NoReturn

from baseten_operator.api.constants import FAILED, DeletionPolicy, EventReason
from baseten_operator.baseten.errors import AmbiguousModelName, BasetenAPIError
from baseten_operator.controller import messages
from baseten_operator.controller.context import Pass, ReconcileError, Requeue
from baseten_operator.runtime.clock import rfc3339


def resolve_model_id(p: Pass) -> str | None:
    """The cached ID, else a lookup by name; None only for a trussConfig model not yet pushed."""
    if p.status.model_id:
        return p.status.model_id
    name = p.spec.model_name
    try:
        model = p.deps.baseten.find_model(name)
    except AmbiguousModelName as error:
        # Names are unique per team only: guessing could drive someone else's model.
        p.set(FAILED, str(error))
        raise Requeue(p.deps.timing.steady) from error
    except BasetenAPIError as error:
        # No ModelNotFound Warning: a failed lookup says nothing about whether it exists.
        message = messages.model_check_failed(name, error)
        p.set(FAILED, message)
        raise ReconcileError(message) from error

    if model is None:
        _model_missing(p)
        return None
    remember_model_id(p, model.id)
    return model.id


def _model_missing(p: Pass) -> None:
    name = p.spec.model_name
    policy = p.spec.deletion_policy
    if policy != DeletionPolicy.RETAIN and p.status.model_id_resolved_time:
        # The model existed once: recreating it would bring back an empty shell that a
        # deletion policy is meant to tear down with everything else.
        p.set(FAILED, messages.recreation_blocked(name, policy))
        p.event(EventReason.MODEL_NOT_FOUND, messages.recreation_blocked_event(name, policy))
        raise Requeue(p.deps.timing.recreation_blocked)
    if p.spec.truss_config is not None:
        return None  # the push creates the model
    message = messages.model_not_found(name)
    p.set(FAILED, message)
    p.event(EventReason.MODEL_NOT_FOUND, messages.model_not_found_event(name))
    raise ReconcileError(message)


def remember_model_id(p: Pass, model_id: str) -> None:
    p.status.model_id = model_id
    if not p.status.model_id_resolved_time:
        p.status.model_id_resolved_time = rfc3339(p.deps.clock)


def invalidate_model_id(p: Pass) -> NoReturn:
    """Section 3.15: forget the cached ID (never its resolved time) and resolve again soon."""
    model_id = p.status.model_id
    p.status.model_id = None
    if model_id:
        p.event(EventReason.MODEL_NOT_FOUND, messages.invalidating_model_id(model_id))
    raise Requeue(p.deps.timing.model_id_invalidated)
