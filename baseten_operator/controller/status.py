"""Status accumulation and writing (docs/contract.md section 2).

A pass edits `StatusWriter.status` freely; nothing reaches the API server until
`commit()` at the end of the pass, or `flush()` for the few intents that must be
persisted before a Baseten call (first failure time, push launch, promotion, delete).
An intent is written against the resourceVersion the pass read: if the object moved
on meanwhile, the pass acted on stale data, so `flush()` raises `StaleRead` and the
irreversible call it precedes is not made.
A write happens only when the rendered status differs from the last one stored, so a
pass that changes nothing writes nothing (writes cause watch events, and needless
ones become hot loops).
"""

from __future__ import annotations

import copy
from typing import Any, Literal, Protocol

import structlog

from baseten_operator.api.constants import (
    BASETENMODELS,
    CONDITION_PROGRESSING,
    CONDITION_READY,
    PROGRESSING_STATUSES,
    READY_STATUSES,
)
from baseten_operator.api.types import BasetenModelStatus, Condition, to_wire
from baseten_operator.runtime.clock import Clock, rfc3339
from baseten_operator.runtime.errors import Conflict, NotFound
from baseten_operator.runtime.text import cut

log = structlog.get_logger(__name__)


class StaleRead(Exception):
    """The object changed since this pass read it: end the pass, redo it on fresh data."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} changed since this pass read it")


class StatusClient(Protocol):
    def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any]: ...

    def update_status(self, res: Any, body: dict[str, Any]) -> dict[str, Any]: ...


def parse_status(raw: Any) -> BasetenModelStatus:
    """The stored status; fields we cannot read (written by a foreign hand) are dropped.

    Only the unreadable fields go: dropping the whole status would lose
    modelIDResolvedTime, the one thing that stops a deletion policy's model from being
    recreated (section 3.6), along with the retry deadline's start.
    """
    if not isinstance(raw, dict):
        if raw is not None:
            log.warning("unreadable status, starting afresh", status=raw)
        return BasetenModelStatus()
    try:
        return BasetenModelStatus.model_validate(raw)
    except ValueError:
        readable = {key: value for key, value in raw.items() if _readable(key, value)}
        log.warning("unreadable status fields dropped", dropped=sorted(set(raw) - set(readable)))
        return BasetenModelStatus.model_validate(readable)


def _readable(key: str, value: Any) -> bool:
    try:
        BasetenModelStatus.model_validate({key: value})
    except ValueError:
        return False
    return True


def condition(
    type_: str,
    is_true: bool,
    status: BasetenModelStatus,
    generation: int | None,
    previous: Condition | None,
    now: str,
) -> Condition:
    value: Literal["True", "False"] = "True" if is_true else "False"
    unchanged = previous is not None and previous.status == value
    return Condition(
        type=type_,
        status=value,
        observed_generation=generation,
        last_transition_time=previous.last_transition_time if previous and unchanged else now,
        reason=status.deployment_status or "Unknown",
        message=status.message or "",
    )


def with_conditions(
    status: BasetenModelStatus, generation: int | None, now: str
) -> BasetenModelStatus:
    """Ready and Progressing derived from deploymentStatus (section 2)."""
    previous = {c.type: c for c in status.conditions or []}
    word = status.deployment_status
    rendered = status.model_copy(deep=True)
    rendered.observed_generation = generation
    rendered.conditions = [
        condition(
            CONDITION_READY,
            word in READY_STATUSES,
            status,
            generation,
            previous.get(CONDITION_READY),
            now,
        ),
        condition(
            CONDITION_PROGRESSING,
            word in PROGRESSING_STATUSES,
            status,
            generation,
            previous.get(CONDITION_PROGRESSING),
            now,
        ),
    ]
    return rendered


class StatusWriter:
    """The status of one object during one pass, and the writes that persist it."""

    def __init__(self, client: StatusClient, obj: dict[str, Any], clock: Clock) -> None:
        self._client = client
        self._clock = clock
        self._obj = obj
        self.status = parse_status(obj.get("status"))
        self._stored = to_wire(self.status)
        self.writes = 0

    @property
    def generation(self) -> int | None:
        generation = self._obj.get("metadata", {}).get("generation")
        return int(generation) if generation is not None else None

    def set(self, deployment_status: str, message: str) -> None:
        self.status.deployment_status = deployment_status
        # Cut: a message quoting an oversized input must not make the status unwritable.
        self.status.message = cut(message)
        if deployment_status in READY_STATUSES:
            # A healthy deployment ends any failure episode (section 2).
            self.clear_retries()

    def clear_retries(self) -> None:
        self.status.first_deployment_failure_time = None
        self.status.deployment_retry_count = None
        self.status.next_retry_time = None

    def flush(self) -> None:
        """Persist now: an intent that must be on record before the Baseten call it precedes.

        StaleRead when the stored object has changed since this pass read it.
        """
        self._commit(reapply_on_conflict=False)

    def commit(self) -> None:
        """Persist what the pass decided, merged onto the stored object if it moved on."""
        self._commit(reapply_on_conflict=True)

    def _commit(self, *, reapply_on_conflict: bool) -> None:
        complete = with_conditions(self.status, self.generation, rfc3339(self._clock))
        rendered = to_wire(complete)
        if rendered == self._stored:
            return
        self._write(rendered, reapply_on_conflict)
        self._stored = rendered
        # Later renders compare conditions against what is now stored (not a second render,
        # whose clock may have ticked past a second and moved lastTransitionTime).
        self.status.conditions = complete.conditions

    def _write(self, rendered: dict[str, Any], reapply_on_conflict: bool) -> None:
        body = copy.deepcopy(self._obj)
        body["status"] = rendered
        try:
            self._obj = self._client.update_status(BASETENMODELS, body)
        except NotFound:
            log.debug("object gone before its status write", name=_name(self._obj))
            return
        except Conflict as conflict:
            if not reapply_on_conflict:
                raise StaleRead(_name(self._obj)) from conflict
            # Our cached copy is stale: re-read and apply just the fields this pass changed.
            self._obj = self._reapply(rendered)
        self.writes += 1

    def _reapply(self, rendered: dict[str, Any]) -> dict[str, Any]:
        meta = self._obj["metadata"]
        fresh = self._client.get(BASETENMODELS, meta["name"], meta.get("namespace"))
        status = dict(fresh.get("status") or {})
        for key in set(rendered) | set(self._stored):
            if rendered.get(key) == self._stored.get(key):
                continue
            if key in rendered:
                status[key] = rendered[key]
            else:
                status.pop(key, None)
        fresh["status"] = status
        return self._client.update_status(BASETENMODELS, fresh)

    @property
    def obj(self) -> dict[str, Any]:
        """The object as last seen by this pass (after its own writes)."""
        return self._obj


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace')}/{meta.get('name')}"
