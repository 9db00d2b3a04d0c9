"""What Flux sees of a BasetenSecret (docs/contract.md 13.2): every state, produced by real
passes of its reconciler, judged by kstatus itself (sigs.k8s.io/cli-utils, through
test/kstatus), as test_s2_kstatus.py does for BasetenModel."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.controller.shared.endings import ReconcileError
from baseten_operator.runtime.controller import TerminalError
from testsupport.kstatus import verdicts


def run(sh: Any, name: str = "hf-token") -> None:
    """One pass, whatever its ending: the situation is in the status it wrote."""
    with contextlib.suppress(ReconcileError, TerminalError):
        sh.run(name)


def synced(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "v"})
    sh.create()
    run(sh)


def waiting_for_secret(sh: Any) -> None:
    sh.create()
    run(sh)


def forbidden(sh: Any) -> None:
    sh.secrets.forbidden.add("default")
    sh.create()
    run(sh)


def conflict(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "v"})
    sh.create(name="older", created="2026-01-01T00:00:00Z")
    run(sh, "older")
    sh.create(created="2026-01-02T00:00:00Z")
    run(sh)


def failed_bad_input(sh: Any) -> None:
    sh.secrets.put("hf", {"token": ""})
    sh.create()
    run(sh)


def failed_invalid_spec(sh: Any) -> None:
    sh.create(secretRef={"name": "hf"})  # no key
    run(sh)


def failed_write_retried(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "v"})
    sh.create()
    sh.baseten.fail("upsert_secret", BasetenAPIError(500, "internal error"))
    run(sh)


def paused(sh: Any) -> None:
    synced(sh)
    sh.edit(lambda obj: obj["spec"].update(mode="Pause"))
    run(sh)


def observe_in_sync(sh: Any) -> None:
    synced(sh)
    sh.edit(lambda obj: obj["spec"].update(mode="Observe"))
    run(sh)


def observe_out_of_sync(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "v"})
    sh.create(mode="Observe", finalizer=False)
    run(sh)


def delete_blocked(sh: Any) -> None:
    synced(sh)
    sh.add_model("llm", "hf_token")
    sh.edit(lambda obj: obj["spec"].update(deletionPolicy="Delete"))
    sh.delete()
    run(sh)


def stale_generation(sh: Any) -> None:
    synced(sh)
    # The spec changed; no pass has seen it yet.
    sh.edit(lambda obj: obj["metadata"].update(generation=2))


SITUATIONS: dict[str, tuple[Callable[[Any], None], str, str]] = {
    # name: (situation, state it leaves, kstatus's verdict)
    "SYNCED": (synced, "SYNCED", "Current"),
    # Goes on by itself once the Secret (or its key) exists: its watch brings the CR back.
    "WAITING_FOR_SECRET": (waiting_for_secret, "WAITING_FOR_SECRET", "InProgress"),
    "stale observedGeneration": (stale_generation, "SYNCED", "InProgress"),
    # Cannot go on until someone grants the RoleBinding, edits the Secret or the spec.
    "FORBIDDEN": (forbidden, "FORBIDDEN", "Failed"),
    "CONFLICT": (conflict, "CONFLICT", "Failed"),
    "FAILED, bad input": (failed_bad_input, "FAILED", "Failed"),
    "FAILED, invalid spec": (failed_invalid_spec, "FAILED", "Failed"),
    # A failed write is retried with backoff by itself, as a BasetenModel's unreachable
    # Baseten is: InProgress, not Failed.
    "FAILED, write retried": (failed_write_retried, "FAILED", "InProgress"),
    # Hands off until the spec changes: said at once, as a BasetenModel's PAUSED.
    "PAUSED": (paused, "PAUSED", "Failed"),
    "Observe, in sync": (observe_in_sync, "SYNCED", "Current"),
    # Observe reports, it never waits (as a BasetenModel in Observe with drift): Flux must
    # not wait for someone to act on the report until its timeout.
    "Observe, out of sync": (observe_out_of_sync, "OUT_OF_SYNC", "Current"),
    # kstatus looks at nothing else once an object is being deleted.
    "DELETE_BLOCKED": (delete_blocked, "DELETE_BLOCKED", "Terminating"),
}


@pytest.mark.parametrize("situation", SITUATIONS)
def test_kstatus_verdict(sh: Any, situation: str) -> None:
    make, state, expected = SITUATIONS[situation]
    make(sh)
    status = sh.status()
    assert status["state"] == state
    [(verdict, message)] = verdicts([sh.kube.get(None, "hf-token", "default")])
    assert verdict == expected, message
    if expected in ("Failed", "InProgress") and situation != "stale observedGeneration":
        # Flux shows kstatus's message: the status message, not a generic one.
        assert message == status["message"]


def test_a_forbidden_cr_is_current_once_granted(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "v"})
    forbidden(sh)
    sh.secrets.forbidden.clear()
    run(sh)
    assert verdicts([sh.kube.get(None, "hf-token", "default")])[0][0] == "Current"
