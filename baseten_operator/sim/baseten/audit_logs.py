"""`GET /v1/models/{model_id}/audit_logs` (ListAuditLogsResponseV1): a page of a model's
audit log (audit_trail.py), newest first unless asked otherwise.

Filters as the spec lists them: event_type_groups, sources, deployment_ids,
environment_names, search (a case-insensitive substring of the entry's names and ids), a
window (start_epoch_millis from the beginning, end_epoch_millis to now, both included);
user_ids and chain_deployment_ids match nothing (the simulator has neither users with ids
nor chains). `limit` is 1..200 (20 by default). The cursor is opaque: it carries the
direction and the last entry served, so a next page continues after it (the direction
asked with a cursor is ignored, as the spec says); filters must be sent again unchanged.

*Inferred*: which event types each group holds (`GROUPS`), for the types the simulator
records.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from baseten_operator.sim.baseten import query_params as params
from baseten_operator.sim.baseten.errors import bad_request
from baseten_operator.sim.baseten.records import AuditEntry
from baseten_operator.sim.baseten.views import timestamp

GROUPS: dict[str, frozenset[str]] = {
    "DEPLOYED": frozenset({"MODEL_DEPLOYED", "MODEL_DEPLOYMENT_RETRIED"}),
    "PROMOTED": frozenset({"MODEL_DEPLOYMENT_PROMOTED", "MODEL_PROMOTION_CONTROL_ACTION"}),
    "ACTIVATED_DEACTIVATED": frozenset(
        {"MODEL_DEPLOYMENT_ACTIVATED", "MODEL_DEPLOYMENT_DEACTIVATED"}
    ),
    "AUTOSCALING_SETTINGS": frozenset({"MODEL_DEPLOYMENT_AUTOSCALING_SETTINGS_CHANGED"}),
    "REQUEST_BACKPRESSURE_SETTINGS": frozenset(
        {"MODEL_DEPLOYMENT_REQUEST_BACKPRESSURE_SETTINGS_CHANGED"}
    ),
    "INSTANCE_TYPE_CHANGED": frozenset({"MODEL_DEPLOYMENT_INSTANCE_TYPE_CHANGED"}),
    "ENVIRONMENT_SETTINGS": frozenset(
        {"ENVIRONMENT_CREATED", "ENVIRONMENT_UPDATED", "ENVIRONMENT_DELETED"}
    ),
    "REPLICA_TERMINATED": frozenset({"REPLICA_TERMINATED"}),
    "DELETED": frozenset({"MODEL_DEPLOYMENT_DELETED", "MODEL_DELETED"}),
    # Not about a model: none of a model's entries is in them.
    **dict.fromkeys(
        (
            "SECRETS",
            "API_KEYS",
            "GATEWAY",
            "WEBHOOK_SIGNING_SECRETS",
            "USER_MANAGEMENT",
            "DIRECTORY_GROUP_MANAGEMENT",
            "SSH",
        ),
        frozenset[str](),
    ),
}
SOURCES = frozenset({"UI", "API", "MCP", "SYSTEM", "OTHER"})
DIRECTIONS = ("DESC", "ASC")
DEFAULT_LIMIT = 20
MAX_LIMIT = 200


@dataclass(frozen=True)
class AuditQuery:
    limit: int = DEFAULT_LIMIT
    direction: str = "DESC"
    after: int | None = None  # the seq of the last entry a previous page served
    groups: frozenset[str] = frozenset()
    sources: frozenset[str] = frozenset()
    deployment_ids: frozenset[str] = frozenset()
    environment_names: frozenset[str] = frozenset()
    matches_nothing: bool = False  # user_ids or chain_deployment_ids
    search: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None

    @classmethod
    def parse(cls, query: dict[str, list[str]]) -> AuditQuery:
        limit = params.bounded(query, "limit", DEFAULT_LIMIT, MAX_LIMIT)
        direction = params.one(query, "direction") or "DESC"
        if direction not in DIRECTIONS:
            raise bad_request(f"direction must be DESC or ASC, not {direction!r}")
        after = None
        cursor = params.one(query, "cursor")
        if cursor:
            direction, after = _decode(cursor)
        return cls(
            limit=limit,
            direction=direction,
            after=after,
            groups=_members(query, "event_type_groups", frozenset(GROUPS)),
            sources=_members(query, "sources", SOURCES),
            deployment_ids=frozenset(query.get("deployment_ids", ())),
            environment_names=frozenset(query.get("environment_names", ())),
            matches_nothing=bool(query.get("user_ids") or query.get("chain_deployment_ids")),
            search=(params.one(query, "search") or "").lower() or None,
            start_ms=params.integer(query, "start_epoch_millis"),
            end_ms=params.integer(query, "end_epoch_millis"),
        )

    def matches(self, entry: AuditEntry, end_ms: int) -> bool:
        created = int(entry.created * 1000)
        return (
            not self.matches_nothing
            and (self.start_ms is None or created >= self.start_ms)
            and created <= end_ms
            and (not self.groups or any(entry.event_type in GROUPS[g] for g in self.groups))
            and (not self.sources or entry.actor.source in self.sources)
            and (not self.deployment_ids or entry.deployment_id in self.deployment_ids)
            and (not self.environment_names or entry.environment in self.environment_names)
            and (self.search is None or self.search in _searchable(entry))
        )


def audit_page(entries: list[AuditEntry], query: AuditQuery, now: float) -> dict[str, Any]:
    end_ms = query.end_ms if query.end_ms is not None else int(now * 1000)
    ordered = entries if query.direction == "ASC" else entries[::-1]
    if query.after is not None:
        ordered = [
            e
            for e in ordered
            if (e.seq > query.after if query.direction == "ASC" else e.seq < query.after)
        ]
    selected = [e for e in ordered if query.matches(e, end_ms)]
    page, rest = selected[: query.limit], selected[query.limit :]
    cursor = _encode(query.direction, page[-1].seq) if rest else None
    return {
        "items": [entry_view(e) for e in page],
        "pagination": {"has_more": bool(rest), "cursor": cursor},
    }


def entry_view(entry: AuditEntry) -> dict[str, Any]:
    """AuditLogEntryV1."""
    actor = entry.actor
    return {
        "id": entry.id,
        "created": timestamp(entry.created),
        "event_type": entry.event_type,
        "event_data": entry.event_data,
        "source": actor.source,
        "actor": {
            "type": actor.type,
            "email": actor.email,
            "api_key_prefix": actor.api_key_prefix,
            "api_key_name": actor.api_key_name,
        },
    }


def _searchable(entry: AuditEntry) -> str:
    names = ("model_id", "model_name", "deployment_id", "deployment_name", "environment_name")
    return " ".join(str(entry.event_data.get(key) or "") for key in names).lower()


def _members(query: dict[str, list[str]], name: str, allowed: frozenset[str]) -> frozenset[str]:
    values = frozenset(query.get(name, ()))
    unknown = sorted(values - allowed)
    if unknown:
        raise bad_request(f"Unknown {name} value {unknown[0]!r}; expected one of {sorted(allowed)}")
    return values


def _encode(direction: str, seq: int) -> str:
    raw = json.dumps({"direction": direction, "after": seq}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode(cursor: str) -> tuple[str, int]:
    try:
        state = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        direction, after = state["direction"], state["after"]
    except (ValueError, binascii.Error, KeyError, TypeError):
        raise bad_request("Invalid cursor") from None
    if direction not in DIRECTIONS or not isinstance(after, int):
        raise bad_request("Invalid cursor")
    return direction, after
