"""Who made a drift: the model's audit log, read for the settings that drifted
(docs/contract.md 3.8).

One call per drift found: the newest `ATTRIBUTION_LIMIT` entries of the groups that record
environment changes (and, when the autoscaling drifted, deployments' autoscaling changes).
The change named is the newest entry of this environment (or of its current deployment)
that set a drifted field to the value Baseten has now, and, where the entry says what the
value was before, changed it; a drifted schedule is named by the newest entry that changed
any schedule. No such entry, or a log that cannot be read: an unknown actor. Attribution
only names; it never decides whether a correction happens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import AuditLogActorV1, AuditLogEntryV1, AuditLogPage
from baseten_operator.baseten.settings import (
    AUTOSCALING_FIELDS,
    PROMOTION_FIELDS,
    ROLLING_DEPLOY_FIELDS,
    Change,
    Drift,
    zero_like,
)
from baseten_operator.runtime.clock import format_rfc3339

# Enough for the few changes a drift follows; one page, never a second.
ATTRIBUTION_LIMIT = 20
ENVIRONMENT_SETTINGS = "ENVIRONMENT_SETTINGS"
AUTOSCALING_SETTINGS = "AUTOSCALING_SETTINGS"
_ENVIRONMENT_EVENTS = frozenset({"ENVIRONMENT_CREATED", "ENVIRONMENT_UPDATED"})
_DEPLOYMENT_AUTOSCALING_EVENT = "MODEL_DEPLOYMENT_AUTOSCALING_SETTINGS_CHANGED"
_SCHEDULE_EDITS = frozenset({"CREATED", "UPDATED", "DELETED"})
# Baseten's audit sources (AuditLogSourceV1); anything else is counted as OTHER.
SOURCES = frozenset({"UI", "API", "MCP", "SYSTEM", "OTHER"})
# A drifted field by the name its change is reported under, to its key in an audit entry
# (environment entries are flat: the rolling deploy config's fields sit beside the rest).
_AUDIT_KEYS = {
    f.name: f.api for f in (*AUTOSCALING_FIELDS, *PROMOTION_FIELDS, *ROLLING_DEPLOY_FIELDS)
}


@dataclass(frozen=True)
class Attribution:
    """The change a drift is attributed to; `actor` None: unknown."""

    actor: str | None = None  # a user's email, an API key's prefix, or Baseten
    source: str | None = None  # UI, API, MCP, SYSTEM, OTHER
    at: str | None = None  # RFC 3339
    own_key: bool = False  # this operator's key: a previous spec of the resource

    def __str__(self) -> str:
        if self.actor is None:
            return "changed by an unknown actor"
        # This operator's own key is not even shown by prefix: a change it made was a
        # previous spec's, and the key is nobody's business.
        who = "this operator's key (a previous spec)" if self.own_key else self.actor
        return f"changed by {who} via {self.source or 'OTHER'} at {self.at or 'an unknown time'}"

    @property
    def metric_source(self) -> str:
        """The drift metric's `source` label: never an email or a key."""
        if self.actor is None:
            return "unknown"
        if self.own_key:
            return "operator"
        return self.source if self.source in SOURCES else "OTHER"


UNKNOWN = Attribution()


def names_an_actor(text: str) -> bool:
    """Whether `text` is an Attribution's that names its actor."""
    return text.startswith("changed by ") and text != str(UNKNOWN)


class AuditLogReader(Protocol):
    def list_audit_logs(
        self, model_id: str, /, *, event_type_groups: Sequence[str] = (), limit: int = 20
    ) -> AuditLogPage: ...

    def is_own_key(self, prefix: str | None, /) -> bool: ...


def attribute_drift(
    reader: AuditLogReader,
    model_id: str,
    env: str,
    current_deployment_id: str | None,
    drift: Drift,
) -> tuple[Attribution, BasetenAPIError | None]:
    """The drift's attribution, and the error that left it unknown (None when the log was
    read)."""
    groups = [ENVIRONMENT_SETTINGS]
    if drift.autoscaling:
        groups.append(AUTOSCALING_SETTINGS)
    try:
        page = reader.list_audit_logs(model_id, event_type_groups=groups, limit=ATTRIBUTION_LIMIT)
    except BasetenAPIError as error:
        return UNKNOWN, error
    entry = newest_cause(page.items, drift, env, current_deployment_id)
    if entry is None:
        return UNKNOWN, None
    return _attribution(entry, reader), None


def newest_cause(
    entries: Iterable[AuditLogEntryV1],
    drift: Drift,
    env: str,
    current_deployment_id: str | None,
) -> AuditLogEntryV1 | None:
    """The newest entry that made (part of) `drift`, if any."""
    settings = [*drift.autoscaling, *drift.promotion]
    newest_first = sorted(entries, key=_created, reverse=True)
    for entry in newest_first:
        data = entry.event_data
        if entry.event_type in _ENVIRONMENT_EVENTS:
            if data.get("environment_name", env) != env:
                continue
            if any(_set_to_actual(data, c) for c in settings):
                return entry
            if drift.schedules and _edits_schedules(data):
                return entry
        elif entry.event_type == _DEPLOYMENT_AUTOSCALING_EVENT:
            if current_deployment_id is None or data.get("deployment_id") != current_deployment_id:
                continue
            if any(_set_to_actual(data, c) for c in drift.autoscaling):
                return entry
    return None


def _created(entry: AuditLogEntryV1) -> float:
    return entry.created.timestamp() if entry.created is not None else 0.0


def _set_to_actual(data: Mapping[str, Any], change: Change) -> bool:
    """Whether the entry left the field at the value Baseten has now, having changed it (an
    entry that does not say what came before counts as a change)."""
    key = _AUDIT_KEYS.get(change.field)
    if key is None or key not in data:
        return False
    actual = _comparable(change.actual, change)
    if _comparable(data[key], change) != actual:
        return False
    previous = data.get("previous_settings")
    if not isinstance(previous, Mapping) or key not in previous:
        return True
    return _comparable(previous[key], change) != actual


def _comparable(value: Any, change: Change) -> Any:
    """An absent value counts as the zero the drift compared it as."""
    return zero_like(change.desired) if value is None else value


def _edits_schedules(data: Mapping[str, Any]) -> bool:
    schedules = data.get("schedules")
    return isinstance(schedules, list) and any(
        isinstance(s, Mapping) and s.get("action") in _SCHEDULE_EDITS for s in schedules
    )


def _attribution(entry: AuditLogEntryV1, reader: AuditLogReader) -> Attribution:
    actor = entry.actor
    at = format_rfc3339(entry.created.timestamp()) if entry.created is not None else None
    own = actor.api_key_prefix is not None and reader.is_own_key(actor.api_key_prefix)
    return Attribution(_actor_name(actor), entry.source, at, own)


def _actor_name(actor: AuditLogActorV1) -> str:
    if actor.email:
        return actor.email
    if actor.api_key_prefix:
        return actor.api_key_prefix
    if actor.api_key_name:
        return f"API key {actor.api_key_name}"
    if actor.type in ("BASETEN_SYSTEM", "BASETEN_USER"):
        return "Baseten"
    return "a removed user" if actor.type == "TOMBSTONE_USER" else "an unnamed actor"
