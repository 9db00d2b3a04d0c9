"""Observe mode (docs/contract.md section 6): read-only, never a Baseten write, never a push."""

from __future__ import annotations

from typing import NoReturn

from baseten_operator.api.constants import FAILED, PENDING, TERMINAL_FAILURES
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import EnvironmentV1
from baseten_operator.baseten.settings import detect_drift
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.analysis import observe_analysis
from baseten_operator.controller.basetenmodel.cancellation import unwanted_candidate
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.basetenmodel.environment import (
    promotion_traffic,
    spec_environment,
    steady_of,
)
from baseten_operator.controller.basetenmodel.model_id import invalidate_model_id, lookup_model_id
from baseten_operator.controller.basetenmodel.source import matches_source
from baseten_operator.controller.basetenmodel.truss_source import (
    SetupScriptError,
    expected_truss_source,
)
from baseten_operator.controller.shared.endings import RequeueAfter


def observe(p: Pass) -> NoReturn:
    cached = bool(p.status.model_id)
    model_id = _model_id(p)
    source = _expected_source(p)
    environment = _environment(p, model_id, cached)
    p.record_environment(environment)
    current = environment.current_deployment
    candidate = environment.candidate_deployment
    if current is not None and matches_source(current.name, source):
        message = steady_of(p, current, environment)
        drift = _drift_texts(p, environment)
        unwanted = unwanted_candidate(p, environment, source)
        if unwanted is not None:
            # Kept on record: back in Reconcile the promotion is still known as this CR's.
            drift.append(messages.would_cancel(unwanted.name))
        else:
            p.clear_candidate()
        if drift:
            message = messages.observe_drift(message, drift)
        elif current.status in TERMINAL_FAILURES:
            message = messages.observe_failing(message)
        p.report(current.status, message)
    elif candidate is not None and matches_source(candidate.name, source):
        p.track_candidate(candidate)
        promoting = messages.promoting_candidate(
            messages.active_prefix(current), candidate, promotion_traffic(environment)
        )
        # Section 14: the analysis is computed and reported, never acted on.
        message, wait = observe_analysis(p, model_id, candidate, environment, promoting)
        p.report(candidate.status, message)
        _done(p, wait)
    else:
        p.report(PENDING, messages.observe_not_promoted(current, source))
    _done(p)


def _done(p: Pass, wait: float | None = None) -> NoReturn:
    """Look again after Observe's period, or sooner when an analysis check is due."""
    period = p.deps.timing.observe
    raise RequeueAfter(min(period, wait) if wait is not None else period)


def _fail(p: Pass, message: str) -> NoReturn:
    p.report(FAILED, message)
    _done(p)


def _drift_texts(p: Pass, environment: EnvironmentV1) -> list[str]:
    """What Reconcile would correct, what the spec wants first (docs/contract.md section 6,
    unlike Reconcile), and a schedule collection of the spec's that did not decode."""
    drift = detect_drift(spec_environment(p), environment, p.deps.clock.now())
    texts = [change.desired_first() for change in drift.changes]
    if drift.unreadable_schedules is not None:
        texts.append(messages.SCHEDULES_UNREADABLE)
    return texts


def _model_id(p: Pass) -> str:
    name = p.spec.model_name
    try:
        model_id = lookup_model_id(p)
    except BasetenAPIError as error:
        _fail(p, messages.model_check_failed(name, error))
    if model_id is None:
        _fail(p, messages.observe_model_not_found(name))
    return model_id


def _expected_source(p: Pass) -> str:
    if p.spec.source_deployment_name is not None:
        return p.spec.source_deployment_name
    try:
        return expected_truss_source(p).name
    except SetupScriptError as error:
        _fail(p, messages.observe_source_failed(error))


def _environment(p: Pass, model_id: str, cached: bool) -> EnvironmentV1:
    try:
        environment: EnvironmentV1 = p.deps.baseten.get_environment(model_id, p.env)
    except BasetenAPIError as error:
        if error.is_not_found:
            if cached and not _model_exists(p, model_id):
                # Section 3.15, read-only: the model behind the cached ID is gone (perhaps
                # recreated under a new ID); saying the environment is missing would mislead.
                invalidate_model_id(p)
            _fail(p, messages.observe_environment_missing(p.env))
        _fail(p, messages.environment_check_failed(p.env, error))
    return environment


def _model_exists(p: Pass, model_id: str) -> bool:
    """Whether the model name still resolves to `model_id` (a failed lookup proves nothing)."""
    try:
        model = p.deps.baseten.find_model(p.spec.model_name)
    except BasetenAPIError:
        return True
    return model is not None and model.id == model_id
