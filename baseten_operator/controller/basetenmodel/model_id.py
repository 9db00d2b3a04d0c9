"""The Baseten model ID of a pass (docs/contract.md sections 3.6 and 3.15).

`ModelGone` is not an ending a step chooses: it is how a 404 on a call made with the cached
model ID reaches the reconciler, which then invalidates the ID (section 3.15).

`status.modelID` is the one source of truth: `lookup_model_id` fills it in from a lookup by
name when it is empty, and every later step reads it from the status.
"""

from __future__ import annotations

from typing import NoReturn

from baseten_operator.api.constants import FAILED, DeletionPolicy, EventReason
from baseten_operator.baseten.errors import AmbiguousModelName, BasetenAPIError
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.shared.endings import ReconcileError, RequeueAfter


def lookup_model_id(p: Pass) -> str | None:
    """`status.modelID`, else the ID of the model of the spec's name, recorded in the status;
    None when Baseten has no model of that name. A failed lookup raises (BasetenAPIError,
    AmbiguousModelName): each mode says so in its own words."""
    if p.status.model_id:
        return p.status.model_id
    model = p.deps.baseten.find_model(p.spec.model_name)
    if model is None:
        return None
    p.record_model_id(model.id)
    return model.id


def resolve_model_id(p: Pass) -> str | None:
    """Step 6: the model ID; None only for a trussConfig model not yet pushed."""
    name = p.spec.model_name
    try:
        model_id = lookup_model_id(p)
    except AmbiguousModelName as error:
        # Names are unique per team only: guessing could drive someone else's model.
        p.report(FAILED, str(error))
        raise RequeueAfter(p.steady_period, stalled=True) from error
    except BasetenAPIError as error:
        # No ModelNotFound Warning: a failed lookup says nothing about whether it exists.
        message = messages.model_check_failed(name, error)
        p.report(FAILED, message)
        raise ReconcileError(message) from error
    if model_id is None:
        _model_missing(p)
    return model_id


def _model_missing(p: Pass) -> None:
    name = p.spec.model_name
    policy = p.spec.deletion_policy
    if policy != DeletionPolicy.RETAIN and p.status.model_id_resolved_time:
        # The model existed once: recreating it would bring back an empty shell that a
        # deletion policy is meant to tear down with everything else.
        p.report(FAILED, messages.recreation_blocked(name, policy))
        p.event(EventReason.MODEL_NOT_FOUND, messages.recreation_blocked_event(name, policy))
        raise RequeueAfter(p.deps.timing.recreation_blocked, stalled=True)
    if p.spec.truss_config is not None:
        return  # the push creates the model
    message = messages.model_not_found(name)
    p.report(FAILED, message)
    p.event(EventReason.MODEL_NOT_FOUND, messages.model_not_found_event(name))
    # Looked for again (rate-limited), but only someone creating it in Baseten ends this.
    raise ReconcileError(message, stalled=True)


def invalidate_model_id(p: Pass) -> NoReturn:
    """Section 3.15: forget the cached ID (never its resolved time) and resolve again soon."""
    model_id = p.status.model_id
    p.forget_model_id()
    if model_id:
        p.event(EventReason.MODEL_NOT_FOUND, messages.invalidating_model_id(model_id))
    raise RequeueAfter(p.deps.timing.model_id_invalidated)


class ModelGone(Exception):
    """A call on the cached model ID answered 404: the model must be resolved again."""


def raise_if_model_gone(error: BasetenAPIError) -> None:
    """Section 3.15: a 404 on a call that used the model ID means the model is gone."""
    if error.is_not_found:
        raise ModelGone() from error
