"""trussConfig: the operator pushes the source deployment itself (docs/contract.md section 5).

The push runs in the background (truss/pusher.py); its outcome comes back here on a later
pass, and only this module turns it into status.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, NoReturn

from baseten_operator.api.base import to_wire
from baseten_operator.api.constants import (
    DEPLOYING,
    FAILED,
    PENDING,
    TRUSS_PUSH_DONE,
    TRUSS_PUSH_FAILED,
    TRUSS_PUSHING,
    EventReason,
)
from baseten_operator.api.types import TrussConfig
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.basetenmodel.model_id import raise_if_model_gone
from baseten_operator.controller.basetenmodel.push_preflight import push_problem
from baseten_operator.controller.basetenmodel.push_secrets import missing_secrets
from baseten_operator.controller.shared.endings import ReconcileError, RequeueAfter
from baseten_operator.controller.shared.ports import ObjectCache
from baseten_operator.controller.shared.timing import go_duration
from baseten_operator.runtime.clock import format_rfc3339, parse_rfc3339
from baseten_operator.runtime.controller import TerminalError
from baseten_operator.truss.naming import config_hash, name_for_hash
from baseten_operator.truss.pusher import PushOutcome, PushRequest


class SetupScriptError(Exception):
    """The setup script's ConfigMap or key is missing; str() is the status detail,
    `event_text` the Go operator's SetupScriptNotFound text."""

    def __init__(self, detail: str, event_text: str | None = None) -> None:
        super().__init__(detail)
        self.event_text = event_text or detail


@dataclass(frozen=True)
class TrussSource:
    """What a trussConfig pushes: the deployment name is a function of all of it."""

    config: dict[str, Any]
    setup_script: str
    hash: str
    name: str


def setup_script_configmap(namespace: str, spec: dict[str, Any]) -> str | None:
    """`ns/name` of the ConfigMap a raw BasetenModel spec reads its setup script from."""
    ref = ((spec.get("trussConfig") or {}).get("setupScript") or {}).get("configMapRef") or {}
    name = ref.get("name")
    return f"{namespace}/{name}" if name else None


def read_setup_script(configmaps: ObjectCache, namespace: str, truss_config: TrussConfig) -> str:
    script = truss_config.setup_script
    if script is None:
        return ""
    ref = script.config_map_ref
    if ref is None:
        return script.inline or ""
    configmap = configmaps.get(namespace, ref.name)
    if configmap is None:
        raise SetupScriptError(
            messages.configmap_not_found(ref.name), messages.configmap_not_found_event(ref.name)
        )
    return _configmap_text(configmap, ref.key, ref.name)


def _configmap_text(configmap: dict[str, Any], key: str, name: str) -> str:
    """The key's text: from `data`, else from `binaryData` (base64, as the API stores it)."""
    data = configmap.get("data") or {}
    if key in data:
        return str(data[key])
    binary = configmap.get("binaryData") or {}
    if key not in binary:
        raise SetupScriptError(messages.configmap_key_not_found(key, name))
    try:
        return base64.b64decode(str(binary[key]), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise SetupScriptError(messages.configmap_key_not_text(key, name)) from None


def truss_source_for(
    configmaps: ObjectCache, namespace: str, truss_config: TrussConfig
) -> TrussSource:
    """The deployment a trussConfig names (no push); SetupScriptError if its script is missing."""
    script = read_setup_script(configmaps, namespace, truss_config)
    config = to_wire(truss_config)
    hash_ = config_hash(config, script)
    return TrussSource(config, script, hash_, name_for_hash(truss_config.base_image.image, hash_))


def expected_truss_source(p: Pass) -> TrussSource:
    """The deployment this pass's trussConfig names."""
    assert p.spec.truss_config is not None
    return truss_source_for(p.deps.configmaps, p.namespace, p.spec.truss_config)


def resolve_truss_source(p: Pass) -> str:
    """The source deployment's name once it exists; until then the pass ends pushing it."""
    ap = messages.recorded_active_prefix(p.status.active_deployment_name)
    try:
        source = expected_truss_source(p)
    except SetupScriptError as error:
        message = messages.push_preparation_failed(ap, str(error))
        p.report(FAILED, message)
        p.event(EventReason.SETUP_SCRIPT_NOT_FOUND, error.event_text)
        raise ReconcileError(message) from error

    _collect_outcome(p, ap, source)
    status = p.status
    if (
        status.truss_config_hash == source.hash
        and status.truss_push_status == TRUSS_PUSH_DONE
        and status.source_deployment_name == source.name
    ):
        return source.name
    model_id = status.model_id  # resolved by step 6, or learnt from the push just collected
    if model_id:
        try:
            existing = p.deps.baseten.find_deployment(model_id, source.name)
        except BasetenAPIError as error:
            raise_if_model_gone(error)
            p.report(PENDING, messages.deployment_check_failed(ap, source.name, error))
            raise RequeueAfter(p.deps.timing.poll) from error
        if existing is not None:
            if status.truss_push_status == TRUSS_PUSHING:
                p.event(
                    EventReason.TRUSS_PUSH_COMPLETED, messages.push_completed_event(source.name)
                )
            _mark_pushed(p, source)
            return source.name
    _push(p, model_id, ap, source)


def _mark_pushed(p: Pass, source: TrussSource) -> None:
    p.track_source(source.name)
    p.record_pushed(source.hash)
    # Push failures are behind us; a failing deployment starts its own episode.
    p.clear_retries()


def _collect_outcome(p: Pass, ap: str, source: TrussSource) -> bool:
    """Take the outcome of this CR's finished push, if any: True when it succeeded (and is
    recorded); a failure ends the pass."""
    pusher = p.deps.pusher
    outcome: PushOutcome | None = pusher.take_outcome(p.key) if pusher is not None else None
    if outcome is None or outcome.deployment_name != source.name:
        return False  # nothing finished, or a push of a config the spec has since left
    if outcome.succeeded:
        if outcome.model_id and not p.status.model_id:
            p.record_model_id(outcome.model_id)
        if p.status.truss_push_status == TRUSS_PUSHING:
            # Unless a pass already found the deployment (and said so) while the push ran.
            p.event(EventReason.TRUSS_PUSH_COMPLETED, messages.push_completed_event(source.name))
        _mark_pushed(p, source)
        return True
    _push_failed(p, ap, source.name, outcome.error or "unknown error")


def _push_failed(p: Pass, ap: str, name: str, error: str) -> NoReturn:
    """Failure of a push: TRUSS_PUSH_FAILED, and another push of the name after a backoff
    that doubles with each failure (no deadline: only a config change pushes sooner)."""
    timing = p.deps.timing
    now = p.deps.clock.now()
    p.track_source(name)  # the failures counted are this name's
    attempt = (p.status.truss_push_failure_count or 0) + 1
    delay = timing.retry_delay(attempt, p.deps.random())
    p.record_push_failure(attempt, error, now + delay)
    backoff = go_duration(timing.nominal(delay))
    p.event(
        EventReason.TRUSS_PUSH_FAILED, messages.push_failed_event(name, attempt, backoff, error)
    )
    _back_off(p, ap, name, now)


def _backing_off(p: Pass, now: float) -> bool:
    """Whether the next push after a failed one is not due yet."""
    status = p.status
    next_retry = parse_rfc3339(status.truss_push_next_retry_time)
    return (
        status.truss_push_status == TRUSS_PUSH_FAILED
        and next_retry is not None
        and now < next_retry
    )


def _back_off(p: Pass, ap: str, name: str, now: float) -> NoReturn:
    """FAILED, saying why and until when; the pass comes back when the next push is due."""
    status = p.status
    next_retry = parse_rfc3339(status.truss_push_next_retry_time) or now
    message = messages.push_failed(
        ap,
        name,
        status.truss_push_failure_count or 0,
        status.truss_push_last_error or "",
        format_rfc3339(next_retry),
    )
    p.report(FAILED, message)
    raise RequeueAfter(max(next_retry - now, 0.0))


def _await_secrets(p: Pass, ap: str, name: str, truss_config: TrussConfig) -> None:
    """Return when Baseten has every secret the config names; else PENDING, no push, and
    a look again after the push poll (they may be created any time, by anyone)."""
    try:
        missing = missing_secrets(p.deps.baseten, truss_config.secrets or {})
    except BasetenAPIError as error:
        p.report(PENDING, messages.secrets_check_failed(ap, name, error))
        raise RequeueAfter(p.deps.timing.poll) from error
    if missing:
        p.report(PENDING, messages.waiting_for_secrets(ap, missing))
        raise RequeueAfter(p.deps.timing.push_poll)


def _push(p: Pass, model_id: str | None, ap: str, source: TrussSource) -> NoReturn:
    deps = p.deps
    timing = deps.timing
    pusher = deps.pusher
    status = p.status
    now = deps.clock.now()
    name = source.name
    ours = (
        status.truss_push_status == TRUSS_PUSHING
        and status.truss_config_hash == source.hash
        and status.source_deployment_name == name
    )
    truss_config = p.spec.truss_config
    assert truss_config is not None
    problem = push_problem(p.spec.model_name, p.env, truss_config)
    if problem is not None:
        # truss would refuse it minutes from now with a cryptic error; only a spec edit helps.
        message = messages.push_preparation_failed(ap, problem)
        p.report(FAILED, message)
        p.event(
            EventReason.TRUSS_PUSH_FAILED, messages.push_preparation_failed_event(name, problem)
        )
        raise TerminalError(message)
    if pusher is not None and pusher.in_flight(name):
        # Ours, or the same config in another environment: one push, one name.
        p.report(DEPLOYING, messages.push_in_progress(ap, name))
        raise RequeueAfter(timing.push_poll)
    if ours and _collect_outcome(p, ap, source):
        # It finished after this pass first looked (a failure ended the pass just now): the
        # success is recorded, and the status write brings the next pass, which goes on.
        raise RequeueAfter(timing.push_poll)
    if ours:
        # On record as pushing, yet no push of that name runs in this process, and the
        # lookup above found no deployment of that name: the replica that started it
        # stopped, and its push died with it (push_child.die_with_parent). Push again
        # now rather than wait for a timeout.
        p.event(EventReason.TRUSS_PUSH_FAILED, messages.push_interrupted_event(name))

    # The backoff below belongs to this name's failed pushes: a new name starts afresh.
    p.track_source(name)
    if _backing_off(p, now):
        _back_off(p, ap, name, now)
    if pusher is None or not pusher.has_capacity():
        p.report(PENDING, messages.waiting_for_push_capacity(ap, name))
        raise RequeueAfter(timing.push_poll)
    _await_secrets(p, ap, name, truss_config)

    p.record_push_launch(source.hash, now)
    p.report(DEPLOYING, messages.push_started(ap, name))
    # On record before the push: a restart finds it and does not push twice.
    p.persist_intent()
    request = PushRequest(
        key=p.key,
        model_name=p.spec.model_name,
        deployment_name=name,
        truss_config=source.config,
        setup_script=source.setup_script,
        model_id=model_id,
    )
    if not pusher.launch(request):
        p.record_no_push()
        p.report(PENDING, messages.waiting_for_push_capacity(ap, name))
        raise RequeueAfter(timing.push_poll)
    p.event(
        EventReason.TRUSS_PUSH_STARTED,
        messages.push_started_event(p.spec.model_name, name, creates_model=model_id is None),
    )
    raise RequeueAfter(timing.push_poll)
