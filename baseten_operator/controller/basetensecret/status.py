"""A BasetenSecret's status (docs/contract.md 13.2): its status word is `state`. Written by
the writer both kinds share (shared/status.py)."""

from __future__ import annotations

from typing import Any

import structlog

from baseten_operator.api.constants import BASETENSECRETS, SecretState
from baseten_operator.api.secret_types import BasetenSecretStatus
from baseten_operator.controller.shared.status import ObjectStatusWriter, conditioned

log = structlog.get_logger(__name__)

# Waiting for a Secret (or its key) that something else (External Secrets, a person) is
# expected to create: work under way, not a failure.
PROGRESSING_STATES = frozenset({SecretState.WAITING_FOR_SECRET})
# Ready: the value is in Baseten; or, in Observe, what differs is reported (Observe reports,
# it never waits, as a BasetenModel in Observe with drift).
READY_STATES = frozenset({SecretState.SYNCED, SecretState.OUT_OF_SYNC})


def parse_secret_status(raw: Any) -> BasetenSecretStatus:
    """The stored status; one that cannot be read (a foreign hand's) starts afresh: the
    next write puts the value again, which only costs one upsert."""
    if isinstance(raw, dict):
        try:
            return BasetenSecretStatus.model_validate(raw)
        except ValueError:
            log.warning("unreadable BasetenSecret status, starting afresh")
    return BasetenSecretStatus()


class SecretStatusWriter(ObjectStatusWriter[BasetenSecretStatus]):
    resource = BASETENSECRETS

    def _parse(self, raw: Any) -> BasetenSecretStatus:
        return parse_secret_status(raw)

    def _said(self) -> tuple[str | None, str | None]:
        return self.status.state, self.status.message

    def _set(self, word: str, message: str) -> None:
        self.status.state = str(word)
        self.status.message = message

    def _render(self, generation: int | None, now: str, *, stalled: bool) -> BasetenSecretStatus:
        state = self.status.state
        return conditioned(
            self.status,
            state,
            self.status.message,
            ready=state in READY_STATES,
            progressing=state in PROGRESSING_STATES,
            generation=generation,
            now=now,
            stalled=stalled,
        )
