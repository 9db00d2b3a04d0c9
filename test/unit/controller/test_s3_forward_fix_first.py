"""Section 3 step 8's last part, on every path a forward fix can take: when the spec's
source no longer names the candidate this CR is promoting, the cancel comes first, before
the new source is resolved or pushed, whether the push can start, waits (for secrets, for
capacity, in backoff), is refused by the preflight, or the source simply does not exist
yet."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from baseten_operator.api.base import to_wire
from baseten_operator.api.types import TrussConfig
from baseten_operator.controller.shared.endings import ReconcileError
from baseten_operator.runtime.clock import format_rfc3339
from baseten_operator.runtime.controller import TerminalError
from baseten_operator.truss.naming import config_hash, name_for_hash

RAMPING = {"status": "RAMPING_UP", "percent_traffic_to_new_version": 30}
FIX = {"resources": {"accelerator": "L4"}, "baseImage": {"image": "vllm:2"}}


def fix_name(truss: dict[str, Any]) -> str:
    """The deployment name a trussConfig is pushed as (no setup script)."""
    config = TrussConfig.model_validate(truss)
    return name_for_hash(config.base_image.image, config_hash(to_wire(config), ""))


def bad_ramping(h, spec: dict[str, Any], **status: Any) -> None:
    """Production serves `good` and ramps this CR's own `bad` up; the spec now asks for a fix."""
    h.baseten.add_model()
    good = h.baseten.add_deployment(name="good", active_replica_count=3, environment="production")
    bad = h.baseten.add_deployment(name="bad", id="bad-id", active_replica_count=1)
    h.baseten.add_environment(current=good, candidate=bad, in_progress=RAMPING)
    recorded = {"candidateDeploymentID": "bad-id", "candidateDeploymentName": "bad"}
    h.create(
        {"modelName": "my-llm", "environment": {"name": "production"}, **spec},
        status={"modelID": "m1", **recorded, **status},
    )


def launched_after_cancel(h) -> list[bool]:
    """For each push launch: had the cancel already been sent?"""
    seen: list[bool] = []
    launch = h.pusher.launch

    def watching(request: Any) -> bool:
        seen.append(bool(h.baseten.called("cancel_promotion")))
        return bool(launch(request))

    h.pusher.launch = watching
    return seen


def missing_secret(h) -> dict[str, Any]:
    return {"trussConfig": {**FIX, "secrets": {"new_token": ""}}}


def no_capacity(h) -> dict[str, Any]:
    h.pusher.capacity = False
    return {"trussConfig": FIX}


def refused_by_preflight(h) -> dict[str, Any]:
    return {"trussConfig": {**FIX, "dockerServer": {"startCommand": "serve"}}}


def in_backoff(h) -> dict[str, Any]:
    """The fix's push failed before: its retry is not due for minutes."""
    h.backoff_status = {
        "sourceDeploymentName": fix_name(FIX),
        "trussPushStatus": "TRUSS_PUSH_FAILED",
        "trussPushFailureCount": 1,
        "trussPushLastError": "boom",
        "trussPushNextRetryTime": format_rfc3339(h.clock.now() + 600),
    }
    return {"trussConfig": FIX}


def not_pushed_yet(h) -> dict[str, Any]:
    return {"sourceDeploymentName": "fix"}  # CI has not pushed it yet


WAITS: list[Callable[[Any], dict[str, Any]]] = [
    missing_secret,
    no_capacity,
    refused_by_preflight,
    in_backoff,
    not_pushed_yet,
]


def run_to_its_end(h) -> None:
    """One pass, whichever way the waiting for the fix ends it."""
    with contextlib.suppress(ReconcileError, TerminalError):
        h.run()


@pytest.mark.parametrize("fix", WAITS, ids=lambda f: f.__name__)
def test_the_cancel_goes_out_even_when_the_fix_cannot_be_pushed_or_found(h, fix) -> None:
    h.backoff_status = {}
    spec = fix(h)
    bad_ramping(h, spec, **h.backoff_status)
    run_to_its_end(h)
    assert h.baseten.called("cancel_promotion") == [("m1", "production")]
    assert h.pusher.launched == []
    assert h.baseten.called("promote") == []
    assert "PromotionCancelled" in h.reasons()
    for key in ("candidateDeploymentID", "cancellingDeploymentID"):
        assert key not in h.status()
    # And never again, whatever the fix still waits for.
    h.clock.advance(h.timing.push_poll)
    run_to_its_end(h)
    assert len(h.baseten.called("cancel_promotion")) == 1


def test_a_fix_that_can_be_pushed_is_pushed_only_after_the_cancel(h) -> None:
    seen = launched_after_cancel(h)
    bad_ramping(h, {"trussConfig": FIX})
    h.run()
    assert seen == [True]
    assert [r.deployment_name for r in h.pusher.launched] == [fix_name(FIX)]


def test_a_setup_script_that_cannot_be_read_cancels_nothing(h) -> None:
    """The fix's name is unknown without its script: not enough to call the candidate
    unwanted (fail closed); the pass says why the push cannot be prepared."""
    script = {"setupScript": {"configMapRef": {"name": "missing", "key": "k"}}}
    bad_ramping(h, {"trussConfig": {**FIX, **script}})
    run_to_its_end(h)
    assert h.baseten.called("cancel_promotion") == []
    assert h.word() == "FAILED"
    assert "missing" in h.message()


def test_the_same_source_again_reads_nothing_more(h) -> None:
    """A candidate the spec still names costs no early read of the environment."""
    bad_ramping(h, {"sourceDeploymentName": "bad"})
    h.run()
    assert h.baseten.called("cancel_promotion") == []
    assert len(h.baseten.called("get_environment")) == 1
