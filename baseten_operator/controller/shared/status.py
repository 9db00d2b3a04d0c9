"""A kind's status during one pass, and the two writes that persist it (docs/contract.md
section 2), the same for every kind.

A pass builds the status in memory (through its pass context's methods); the reconciler
writes it once, at the end (`write_outcome`), merged onto a newer stored object if the
object moved on meanwhile. Only when the rendered status differs from the stored one: a
pass that changes nothing writes nothing (writes cause watch events, and needless ones
become hot loops).

The few intents that must be on record before an irreversible Baseten call (a first failure
time, a push launch, a promotion, a delete, a secret's write) are written earlier
(`write_intent`), against the resourceVersion the pass read, changed or not: if the object
moved on meanwhile, the pass acted on stale data, so `write_intent` raises `StaleRead` and
the call it precedes is not made.

A kind supplies its resource, how its stored status is read, and its status word (a
BasetenModel's `deploymentStatus`, a BasetenSecret's `state`): which words are Ready and
which Progressing. The conditions are rendered from them here, for both.
"""

from __future__ import annotations

import copy
import re
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generic, Literal, TypeVar

import structlog

from baseten_operator.api.base import to_wire
from baseten_operator.api.constants import (
    CONDITION_PROGRESSING,
    CONDITION_READY,
    CONDITION_RECONCILING,
    CONDITION_STALLED,
)
from baseten_operator.api.types import CONDITION_REASON_PATTERN, Condition, ConditionedStatus
from baseten_operator.controller.shared.ports import KubeAPI
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


def condition(
    type_: str,
    is_true: bool,
    word: str | None,
    message: str | None,
    generation: int | None,
    previous: Condition | None,
    now: str,
) -> Condition:
    """One condition: its reason the status word, its message the status message; its
    transition time kept while it holds."""
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
    """The status word as a condition reason; Unknown when unset, or when a word Baseten
    made up does not fit metav1.Condition's reason pattern (the API server would refuse
    the whole status)."""
    if word and re.fullmatch(CONDITION_REASON_PATTERN, word):
        return word
    return "Unknown"


def conditioned(
    status: StatusT,
    word: str | None,
    message: str | None,
    *,
    ready: bool,
    progressing: bool,
    generation: int | None,
    now: str,
    stalled: bool,
) -> StatusT:
    """`status` with observedGeneration and its four conditions: Ready and Progressing from
    the status word, Reconciling and Stalled (kstatus's, which Flux reads health with) from
    how the pass ended too."""
    previous = {c.type: c for c in status.conditions or []}
    # Shallow: the rendering only replaces these two fields and is otherwise read, never
    # changed; a deep copy was most of a steady pass's status work.
    rendered = status.model_copy()
    rendered.observed_generation = generation
    truths = kstatus_truths(ready=ready, progressing=progressing, stalled=stalled)
    rendered.conditions = [
        condition(type_, is_true, word, message, generation, previous.get(type_), now)
        for type_, is_true in truths.items()
    ]
    return rendered


class ObjectStatusWriter(ABC, Generic[StatusT]):
    """The status of one object during one pass, its status word, and the two writes that
    persist it."""

    resource: ClassVar[Resource]

    def __init__(self, client: KubeAPI, obj: dict[str, Any], clock: Clock) -> None:
        self._client = client
        self._clock = clock
        self._obj = obj
        self.status: StatusT = self._parse(obj.get("status"))
        self._stored = to_wire(self.status)

    # --- what a kind supplies ----------------------------------------------------------

    @abstractmethod
    def _parse(self, raw: Any) -> StatusT:
        """The stored status, read as leniently as the kind can afford."""

    @abstractmethod
    def _said(self) -> tuple[str | None, str | None]:
        """The status word and message as they stand."""

    @abstractmethod
    def _set(self, word: str, message: str) -> None:
        """Put the status word and the (already cut) message in the status."""

    @abstractmethod
    def _render(self, generation: int | None, now: str, *, stalled: bool) -> StatusT:
        """The status with observedGeneration and its conditions (`conditioned`)."""

    # --- the same for every kind -------------------------------------------------------

    def report(self, word: str, message: str) -> bool:
        """The status word and message; True when either changed (as stored: cut)."""
        before = self._said()
        # Cut: a message quoting an oversized input must not make the status unwritable.
        self._set(word, cut(message))
        return self._said() != before

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


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace')}/{meta.get('name')}"
