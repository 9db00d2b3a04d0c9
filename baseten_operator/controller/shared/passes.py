"""One pass over one object of either kind: the object, its spec, its status writer, and the
one way a step reports what it found (the status word and message, and an Event when they
change). Each kind's pass context adds what its steps record (basetenmodel/context.py,
basetensecret/context.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from baseten_operator.api.constants import EventReason, event_type
from baseten_operator.api.types import ConditionedStatus
from baseten_operator.controller.shared.ports import Recorder
from baseten_operator.controller.shared.status import ObjectStatusWriter


class PassDependencies(Protocol):
    """What every kind's dependencies have that a pass reads here."""

    @property
    def recorder(self) -> Recorder: ...


DepsT = TypeVar("DepsT", bound=PassDependencies)
SpecT = TypeVar("SpecT", bound=BaseModel)
StatusT = TypeVar("StatusT", bound=ConditionedStatus)


@dataclass
class ObjectPass(Generic[DepsT, SpecT, StatusT]):
    """`obj`, a namespaced object as the informer holds it, during one pass."""

    deps: DepsT
    obj: dict[str, Any]
    spec: SpecT
    writer: ObjectStatusWriter[StatusT]

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def status(self) -> StatusT:
        """The status as this pass has built it so far."""
        return self.writer.status

    @property
    def stored_obj(self) -> dict[str, Any]:
        """The object as last stored, after this pass's own writes (its newest version)."""
        return self.writer.obj

    def event(self, reason: EventReason, message: str) -> None:
        self.deps.recorder.event(self.stored_obj, event_type(reason), str(reason), message)

    def report(self, word: str, message: str) -> None:
        """The status word and message (a BasetenModel's deploymentStatus, a BasetenSecret's
        state)."""
        self.writer.report(word, message)

    def enter(self, word: str, message: str, reason: EventReason) -> None:
        """Report a state that holds the object up, with its Event (the same text) when
        entering the state or when the reason it holds (the message) changes: never on
        every pass."""
        if self.writer.report(word, message):
            self.event(reason, message)
