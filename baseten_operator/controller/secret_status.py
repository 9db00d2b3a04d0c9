"""A BasetenSecret's status (docs/contract.md 13.2): built during a pass, written once at
its end, by the same writer as a BasetenModel's (status.py)."""

from __future__ import annotations

from typing import Any

import structlog

from baseten_operator.api.constants import BASETENSECRETS, SecretState
from baseten_operator.api.secret_types import BasetenSecretStatus
from baseten_operator.controller.status import ObjectStatusWriter, condition, kstatus_truths
from baseten_operator.runtime.text import cut

log = structlog.get_logger(__name__)

# Waiting for a Secret (or its key) that something else (External Secrets, a person) is
# expected to create: work under way, not a failure.
PROGRESSING_STATES = frozenset({SecretState.WAITING_FOR_SECRET})


def parse_secret_status(raw: Any) -> BasetenSecretStatus:
    """The stored status; one that cannot be read (a foreign hand's) starts afresh: the
    next write puts the value again, which only costs one upsert."""
    if isinstance(raw, dict):
        try:
            return BasetenSecretStatus.model_validate(raw)
        except ValueError:
            log.warning("unreadable BasetenSecret status, starting afresh")
    return BasetenSecretStatus()


def report(status: BasetenSecretStatus, state: SecretState, message: str) -> None:
    status.state = str(state)
    # Cut: a message quoting a long error must not make the status unwritable.
    status.message = cut(message)


class SecretStatusWriter(ObjectStatusWriter[BasetenSecretStatus]):
    resource = BASETENSECRETS

    def _parse(self, raw: Any) -> BasetenSecretStatus:
        return parse_secret_status(raw)

    def _render(self, generation: int | None, now: str, *, stalled: bool) -> BasetenSecretStatus:
        status = self.status
        previous = {c.type: c for c in status.conditions or []}
        rendered = status.model_copy()
        rendered.observed_generation = generation
        truths = kstatus_truths(
            ready=status.state == SecretState.SYNCED,
            progressing=status.state in PROGRESSING_STATES,
            stalled=stalled,
        )
        rendered.conditions = [
            condition(
                type_, is_true, status.state, status.message, generation, previous.get(type_), now
            )
            for type_, is_true in truths.items()
        ]
        return rendered
