"""Status accumulation and writing (docs/contract.md section 2).

A pass builds the status in memory through `context.Pass`'s methods; the reconciler writes
it once, at the end (`StatusWriter.write_outcome`), merged onto a newer stored object if
the object moved on meanwhile. Only when the rendered status differs from the stored one:
a pass that changes nothing writes nothing (writes cause watch events, and needless ones
become hot loops).

The few intents that must be on record before an irreversible Baseten call (first failure
time, push launch, promotion, delete) are written earlier (`write_intent`), against the
resourceVersion the pass read, changed or not: if the object moved on meanwhile, the pass
acted on stale data, so `write_intent` raises `StaleRead` and the call it precedes is not
made.
"""

from __future__ import annotations

import copy
import re
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generic, Literal, TypeVar

import structlog

from baseten_operator.api.constants import (
    BASETENMODELS,
    CONDITION_PROGRESSING,
    CONDITION_READY,
    CONDITION_RECONCILING,
    CONDITION_STALLED,
    PROGRESSING_STATUSES,
    READY_STATUSES,
)
from baseten_operator.api.types import (
    CONDITION_REASON_PATTERN,
    BasetenModelStatus,
    Condition,
    ConditionedStatus,
    to_wire,
)
from baseten_operator.controller.ports import KubeAPI
from baseten_operator.runtime.clock import Clock, rfc3339
from baseten_operator.runtime.errors import Conflict, NotFound
from baseten_operator.runtime.resource import Resource
from baseten_operator.runtime.text import cut

log = structlog.get_logger(__name__)

StatusT = TypeVar("StatusT", bound=ConditionedStatus)


class StaleRead(Exception):
    """The object changed since this pass read it: end the pass, redo it on fresh data."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} changed since this pass read it")


def report(status: BasetenModelStatus, deployment_status: str, message: str) -> None:
    """Set `deploymentStatus` and `message`; a healthy status ends any failure episode."""
    status.deployment_status = deployment_status
    # Cut: a message quoting an oversized input must not make the status unwritable.
    status.message = cut(message)
    if deployment_status in READY_STATUSES:
        clear_retries(status)


def clear_retries(status: BasetenModelStatus) -> None:
    """End the failure episode: its retry bookkeeping goes (section 4)."""
    status.first_deployment_failure_time = None
    status.deployment_retry_count = None
    status.next_retry_time = None


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
    word: str | None,
    message: str | None,
    generation: int | None,
    previous: Condition | None,
    now: str,
) -> Condition:
    """One condition: its reason the status word (`deploymentStatus`, a BasetenSecret's
    `state`), its message the status message; its transition time kept while it holds."""
    value: Literal["True", "False"] = "True" if is_true else "False"
    unchanged = previous is not None and previous.status == value
    return Condition(
        type=type_,
        status=value,
        observed_generation=generation,
        last_transition_time=previous.last_transition_time if previous and unchanged else now,
        reason=_reason(word),
        message=message or "",
    )


def kstatus_truths(*, ready: bool, progressing: bool, stalled: bool) -> dict[str, bool]:
    """Ready and Progressing, and kstatus's Reconciling (any work, retry or wait that goes
    on by itself) and Stalled (nothing moves on without a change)."""
    return {
        CONDITION_READY: ready,
        CONDITION_PROGRESSING: progressing,
        CONDITION_RECONCILING: not (ready or stalled),
        CONDITION_STALLED: stalled,
    }


def _reason(word: str | None) -> str:
    """The deploymentStatus as a condition reason; Unknown when unset, or when a word
    Baseten made up does not fit metav1.Condition's reason pattern (the API server would
    refuse the whole status)."""
    if word and re.fullmatch(CONDITION_REASON_PATTERN, word):
        return word
    return "Unknown"


def with_conditions(
    status: BasetenModelStatus, generation: int | None, now: str, *, stalled: bool
) -> BasetenModelStatus:
    """Ready and Progressing from deploymentStatus; Reconciling and Stalled, kstatus's
    conditions (Flux reads health with it), from how the pass ended too (section 2)."""
    previous = {c.type: c for c in status.conditions or []}
    word = status.deployment_status
    # Shallow: the rendering only replaces these two fields and is otherwise read, never
    # changed; a deep copy was most of a steady pass's status work.
    rendered = status.model_copy()
    rendered.observed_generation = generation
    truths = kstatus_truths(
        ready=word in READY_STATUSES, progressing=word in PROGRESSING_STATUSES, stalled=stalled
    )
    rendered.conditions = [
        condition(type_, is_true, word, status.message, generation, previous.get(type_), now)
        for type_, is_true in truths.items()
    ]
    return rendered


class ObjectStatusWriter(ABC, Generic[StatusT]):
    """The status of one object during one pass, and the two writes that persist it.

    A kind supplies its resource, how its stored status is read and how a status is
    rendered with its conditions; the writes are the same for every kind.
    """

    resource: ClassVar[Resource]

    def __init__(self, client: KubeAPI, obj: dict[str, Any], clock: Clock) -> None:
        self._client = client
        self._clock = clock
        self._obj = obj
        self.status: StatusT = self._parse(obj.get("status"))
        self._stored = to_wire(self.status)

    @abstractmethod
    def _parse(self, raw: Any) -> StatusT: ...

    @abstractmethod
    def _render(self, generation: int | None, now: str, *, stalled: bool) -> StatusT:
        """The status with observedGeneration and its conditions."""

    @property
    def generation(self) -> int | None:
        generation = self._obj.get("metadata", {}).get("generation")
        return int(generation) if generation is not None else None

    def write_intent(self) -> None:
        """Persist now: an intent that must be on record before the Baseten call it precedes.

        Conditional on the resourceVersion this pass read, and sent even when the status
        is unchanged (a pass repeating an interrupted promote or delete, a new leader
        inheriting an intent from a cache that lags): the write is what proves the object
        this pass acts on is current. The API server still checks the resourceVersion of
        an unchanged write, which is otherwise a no-op (same resourceVersion, no watch
        event). StaleRead when the object changed, or is gone, since this pass read it.
        """
        # Not stalled: the pass goes on to the call this intent precedes.
        self._persist(intent=True, stalled=False)

    def write_outcome(self, *, stalled: bool) -> None:
        """Persist what the pass decided, if anything changed, merged onto the stored object
        if it moved on. `stalled`: the pass ended unable to go on without a change."""
        self._persist(intent=False, stalled=stalled)

    def _persist(self, *, intent: bool, stalled: bool) -> None:
        complete = self._render(self.generation, rfc3339(self._clock), stalled=stalled)
        rendered = to_wire(complete)
        if rendered == self._stored and not intent:
            return
        self._write(rendered, intent=intent)
        self._stored = rendered
        # Later renders compare conditions against what is now stored (not a second render,
        # whose clock may have ticked past a second and moved lastTransitionTime).
        self.status.conditions = complete.conditions

    def _write(self, rendered: dict[str, Any], *, intent: bool) -> None:
        body = copy.deepcopy(self._obj)
        body["status"] = rendered
        try:
            self._obj = self._client.update_status(self.resource, body)
        except NotFound as gone:
            if intent:
                raise StaleRead(_name(self._obj)) from gone
            log.debug("object gone before its status write", name=_name(self._obj))
        except Conflict as conflict:
            if intent:
                raise StaleRead(_name(self._obj)) from conflict
            # Our cached copy is stale: re-read and apply just the fields this pass changed.
            self._obj = self._reapply(rendered)

    def _reapply(self, rendered: dict[str, Any]) -> dict[str, Any]:
        meta = self._obj["metadata"]
        fresh = self._client.get(self.resource, meta["name"], meta.get("namespace"))
        status = dict(fresh.get("status") or {})
        for key in set(rendered) | set(self._stored):
            if rendered.get(key) == self._stored.get(key):
                continue
            if key in rendered:
                status[key] = rendered[key]
            else:
                status.pop(key, None)
        fresh["status"] = status
        return self._client.update_status(self.resource, fresh)

    @property
    def obj(self) -> dict[str, Any]:
        """The object as last seen by this pass (after its own writes)."""
        return self._obj


class StatusWriter(ObjectStatusWriter[BasetenModelStatus]):
    """A BasetenModel's status (docs/contract.md section 2)."""

    resource = BASETENMODELS

    def _parse(self, raw: Any) -> BasetenModelStatus:
        return parse_status(raw)

    def _render(self, generation: int | None, now: str, *, stalled: bool) -> BasetenModelStatus:
        return with_conditions(self.status, generation, now, stalled=stalled)


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace')}/{meta.get('name')}"
