"""Observe mode (docs/contract.md section 6): read-only, never a Baseten write, never a push."""

from __future__ import annotations

from typing import NoReturn

from baseten_operator.api.constants import (
    FAILED,
    PENDING,
    RETRYABLE_FAILURES,
    TERMINAL_FAILURES,
)
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import DeploymentV1, EnvironmentV1
from baseten_operator.baseten.settings import Drift, detect_drift
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.analysis import observe_analysis
from baseten_operator.controller.basetenmodel.cancellation import unwanted_candidate
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.basetenmodel.environment import (
    attribute,
    promotion_traffic,
    spec_environment,
    steady_of,
)
from baseten_operator.controller.basetenmodel.failures import explain_failure
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
        said = p.status.message
        drift = detect_drift(spec_environment(p), environment, p.deps.clock.now())
        texts = _drift_texts(drift)
        unwanted = unwanted_candidate(p, environment, source)
        if unwanted is not None:
            # Kept on record: back in Reconcile the promotion is still known as this CR's.
            texts.append(messages.would_cancel(unwanted.name))
        else:
            p.clear_candidate()
        if texts:
            message = messages.observe_drift(
                message, texts, _attribution(p, model_id, environment, drift, texts, said)
            )
        elif current.status in TERMINAL_FAILURES:
            message = messages.observe_failing(message)
        _explain_if_failed(p, model_id, current)
        p.report(current.status, message)
    elif candidate is not None and matches_source(candidate.name, source):
        p.track_candidate(candidate)
        _explain_if_failed(p, model_id, candidate)
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


def _explain_if_failed(p: Pass, model_id: str, deployment: DeploymentV1) -> None:
    """Section 4's explanation of a failure, which only reads: Observe says why too."""
    if deployment.status in RETRYABLE_FAILURES:
        explain_failure(p, model_id, deployment)


def _drift_texts(drift: Drift) -> list[str]:
    """What Reconcile would correct, what the spec wants first (docs/contract.md section 6,
    unlike Reconcile), and a schedule collection of the spec's that did not decode."""
    texts = [change.desired_first() for change in drift.changes]
    if drift.unreadable_schedules is not None:
        texts.append(messages.SCHEDULES_UNREADABLE)
    return texts


def _attribution(
    p: Pass,
    model_id: str,
    environment: EnvironmentV1,
    drift: Drift,
    texts: list[str],
    said: str | None,
) -> str | None:
    """Who made the settings drift (None when only a promotion would be cancelled). The
    same drift already attributed by the last message is not read again: the audit log is
    asked once per drift, not once per Observe period (an unknown actor is asked again)."""
    if not drift:
        return None
    known = messages.observed_attribution(said, texts)
    if known is not None:
        return known
    return str(attribute(p, model_id, environment, drift))


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
