"""The live view: a `kubectl get bm -w`-style table plus new Events, as they happen.

A BasetenModel prints a new row only when one of its shown columns changed, and an
Event prints once per occurrence, so the output stays calm and reads the same in a
terminal and in a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from baseten_operator.api.constants import BASETENMODELS, KIND, SHORT_NAME, Mode
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.informer import Informer
from baseten_operator.runtime.resource import EVENTS
from baseten_operator.sandbox.console import Console, trim
from baseten_operator.sandbox.events import EventLog, Occurrence

SYNC_TIMEOUT = 10.0
# (title, width) of the columns before MESSAGE, which takes what the line has left.
COLUMNS: tuple[tuple[str, int], ...] = (
    ("NAME", 26),
    ("MODEL", 14),
    ("ENV", 11),
    ("ACTIVE", 28),
    ("REPLICAS", 9),
    ("STATUS", 21),
    ("MODE", 10),
)
MIN_MESSAGE_WIDTH = 30
EVENT_PREFIX = "  event"
DELETED = "(deleted)"


@dataclass(frozen=True)
class Row:
    name: str
    model: str
    env: str
    active: str
    replicas: str
    status: str
    mode: str
    message: str

    def cells(self) -> tuple[str, ...]:
        return (self.name, self.model, self.env, self.active, self.replicas, self.status, self.mode)


def row_of(obj: dict[str, Any], *, deleted: bool = False) -> Row:
    """The printer columns of one BasetenModel (MESSAGE is the wide output's)."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    replicas = status.get("activeReplicaCount")
    mode = Mode.PAUSE.value if spec.get("paused") else spec.get("mode") or Mode.RECONCILE.value
    return Row(
        name=obj["metadata"]["name"],
        model=spec.get("modelName") or "",
        env=(spec.get("environment") or {}).get("name") or "",
        active=status.get("activeDeploymentName") or "",
        replicas="" if replicas is None else str(replicas),
        status=DELETED if deleted else status.get("deploymentStatus") or "",
        mode=mode,
        message=status.get("message") or "",
    )


def _fit(text: str, width: int) -> str:
    return trim(text, width - 1).ljust(width)


class LiveDisplay:
    def __init__(self, kube: KubeClient, console: Console, events: EventLog) -> None:
        self._console = console
        self._events = events
        self._models = Informer(kube, BASETENMODELS)
        self._event_informer = Informer(kube, EVENTS)
        self._shown: dict[str, Row] = {}
        self._message_width = max(
            console.width - sum(width for _, width in COLUMNS), MIN_MESSAGE_WIDTH
        )

    def start(self) -> None:
        """Header first, then rows and events from now on (both lists start empty)."""
        self._console.line(self._format([title for title, _ in COLUMNS], "MESSAGE"))
        self._models.add_event_handler(
            on_add=self._show_model,
            on_update=lambda _old, new: self._show_model(new),
            on_delete=lambda obj: self._show_model(obj, deleted=True),
        )
        self._event_informer.add_event_handler(
            on_add=self._show_event, on_update=lambda _old, new: self._show_event(new)
        )
        self._models.start()
        self._event_informer.start()
        self._models.wait_for_sync(SYNC_TIMEOUT)
        self._event_informer.wait_for_sync(SYNC_TIMEOUT)

    def stop(self) -> None:
        self._models.stop()
        self._event_informer.stop()

    def model(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The cached BasetenModel (read-only), for the tour's waits."""
        return self._models.get(namespace, name)

    def _show_model(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        row = row_of(obj, deleted=deleted)
        if self._shown.get(row.name) == row:
            return
        self._shown[row.name] = row
        self._console.line(self._format(list(row.cells()), row.message))

    def _show_event(self, event: dict[str, Any]) -> None:
        occurrence = self._events.record(event)
        if occurrence is not None:
            self._console.line(self._format_event(occurrence))

    def _format(self, cells: list[str], message: str) -> str:
        fitted = "".join(_fit(cell, width) for cell, (_, width) in zip(cells, COLUMNS, strict=True))
        return (fitted + trim(message, self._message_width)).rstrip()

    def _format_event(self, occurrence: Occurrence) -> str:
        kind = SHORT_NAME if occurrence.kind == KIND else occurrence.kind.lower()
        repeat = f" (x{occurrence.count})" if occurrence.count > 1 else ""
        text = (
            f"{EVENT_PREFIX} {occurrence.type:<8} {occurrence.reason:<26} "
            f"{kind}/{occurrence.name:<26} "
        )
        return text + trim(occurrence.message + repeat, max(self._console.width - len(text), 30))
