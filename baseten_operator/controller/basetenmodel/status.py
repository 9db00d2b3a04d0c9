"""A BasetenModel's status (docs/contract.md section 2): its status word is
`deploymentStatus`, and a healthy one ends any failure episode. Written by the writer both
kinds share (shared/status.py)."""

from __future__ import annotations

from typing import Any

import structlog

from baseten_operator.api.constants import BASETENMODELS, PROGRESSING_STATUSES, READY_STATUSES
from baseten_operator.api.types import BasetenModelStatus
from baseten_operator.controller.shared.status import ObjectStatusWriter, conditioned

log = structlog.get_logger(__name__)


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


def with_conditions(
    status: BasetenModelStatus, generation: int | None, now: str, *, stalled: bool
) -> BasetenModelStatus:
    """The status as written: its conditions from deploymentStatus and how the pass ended."""
    word = status.deployment_status
    return conditioned(
        status,
        word,
        status.message,
        ready=word in READY_STATUSES,
        progressing=word in PROGRESSING_STATUSES,
        generation=generation,
        now=now,
        stalled=stalled,
    )


class StatusWriter(ObjectStatusWriter[BasetenModelStatus]):
    resource = BASETENMODELS

    def _parse(self, raw: Any) -> BasetenModelStatus:
        return parse_status(raw)

    def _said(self) -> tuple[str | None, str | None]:
        return self.status.deployment_status, self.status.message

    def _set(self, word: str, message: str) -> None:
        self.status.deployment_status = word
        self.status.message = message
        if word in READY_STATUSES:
            clear_retries(self.status)

    def _render(self, generation: int | None, now: str, *, stalled: bool) -> BasetenModelStatus:
        return with_conditions(self.status, generation, now, stalled=stalled)
