"""Section 2: what Flux sees. Every contract situation, produced by real passes, judged by
kstatus itself (sigs.k8s.io/cli-utils, through test/kstatus): InProgress while work goes on by
itself, Failed when it cannot go on without a change (paused too), Current when Ready,
Terminating while deleted."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.controller.shared.endings import ReconcileError
from baseten_operator.runtime.controller import TerminalError
from testsupport.kstatus import verdicts

OLDER, YOUNGER = "2025-01-01T00:00:00Z", "2025-06-01T00:00:00Z"
TRUSS = {"resources": {"accelerator": "L4"}, "baseImage": {"image": "vllm:1"}}


def run(h) -> None:
    """One pass, whatever its ending: the situation is in the status it wrote."""
    with contextlib.suppress(ReconcileError, TerminalError):
        h.run()


def serving_old(h, source_status: str | None) -> None:
    """Production serves `old`; the spec's source `src` is in `source_status`."""
    h.baseten.add_model()
    old = h.baseten.add_deployment(name="old", active_replica_count=3, environment="production")
    if source_status is not None:
        h.baseten.add_deployment(name="src", status=source_status)
    h.baseten.add_environment(current=old, autoscaling={"min_replica": 1})


def active(h) -> None:
    h.steady_world()
    h.create()
    run(h)


def promoting(h) -> None:
    h.baseten.add_model()
    old = h.baseten.add_deployment(name="old", active_replica_count=3)
    candidate = h.baseten.add_deployment(name="src", status="BUILDING", id="c1")
    h.baseten.add_environment(current=old, candidate=candidate)
    h.create()
    run(h)


def pushing(h) -> None:
    h.baseten.add_model()
    h.create(sourceDeploymentName=None, trussConfig=TRUSS)
    h.edit(lambda o: o["spec"].pop("sourceDeploymentName"))
    run(h)


def waiting_for_secrets(h) -> None:
    """The push waits for a Baseten secret someone has yet to create."""
    h.baseten.add_model()
    h.create(sourceDeploymentName=None, trussConfig={**TRUSS, "secrets": {"hf_token": ""}})
    h.edit(lambda o: o["spec"].pop("sourceDeploymentName"))
    run(h)


def waiting_for_a_build(h) -> None:
    serving_old(h, "BUILDING")
    h.create()
    run(h)


def failed_retry_scheduled(h) -> None:
    serving_old(h, "BUILD_FAILED")
    h.baseten.fail("retry_deployment", BasetenAPIError(429, "Rate limit exceeded"))
    h.create()
    run(h)


def failed_baseten_unreachable(h) -> None:
    h.create()
    h.baseten.fail("find_model", BasetenAPIError(503, "down"))
    run(h)


def retries_exhausted(h) -> None:
    serving_old(h, "BUILD_FAILED")
    # Failing since two hours before the pass: the deadline (section 4) is past.
    first_failure = {"firstDeploymentFailureTime": "2025-12-31T22:00:00Z"}
    h.create(status={**first_failure, "modelID": "m1", "sourceDeploymentName": "src"})
    run(h)


def invalid_spec(h) -> None:
    h.create(environment={"name": "Not A Name"})
    run(h)


def model_not_found(h) -> None:
    h.create()
    run(h)


def build_stopped(h) -> None:
    serving_old(h, "BUILD_STOPPED")
    h.create()
    run(h)


def conflict(h) -> None:
    h.steady_world()
    h.create(created=OLDER)
    run(h)
    h.create(name="rival", namespace="team-b", created=YOUNGER)
    h.run("rival", "team-b")


def policy_violation(h) -> None:
    h.namespaces.annotate("default", allowed_models="search-*")
    h.create()
    run(h)


def paused(h) -> None:
    h.steady_world()
    h.create()
    run(h)
    h.edit(lambda o: o["spec"].__setitem__("mode", "Pause"))
    run(h)


def observe_drift(h) -> None:
    h.steady_world(autoscaling={"min_replica": 0, "max_replica": 1})
    h.create(mode="Observe", environment={"name": "production", "autoscaling": {"minReplicas": 1}})
    run(h)


def delete_blocked(h) -> None:
    h.steady_world(autoscaling={"min_replica": 2})
    h.create(deletionPolicy="DeleteWithGuardrails", status={"modelID": "m1"})
    h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))
    run(h)


def rolled_back(h) -> None:
    """Section 14: the analysis rolled the candidate back after two failed checks."""
    h.baseten.add_model()
    good = h.baseten.add_deployment(name="good", active_replica_count=3, environment="production")
    bad = h.baseten.add_deployment(name="src", id="bad-id", active_replica_count=1)
    h.baseten.add_environment(current=good, promotion={"rolling_deploy": True})
    metrics = [{"name": "errors", "errorRatio": {"maxPercent": 2}}]
    h.create(
        environment={"name": "production", "promotionSettings": {"rollingDeploy": True}},
        promotion={"analysis": {"failureLimit": 1, "metrics": metrics}},
        status={"modelID": "m1"},
    )
    run(h)  # promoted: Baseten steps traffic to it
    env = h.baseten.environments[("m1", "production")]
    h.baseten.environments[("m1", "production")] = env.model_copy(
        update={"candidate_deployment": bad}
    )
    h.baseten.set_phase("RAMPING_UP", 25)
    h.baseten.traffic["bad-id"] = (1000, 300, 0.2)
    h.clock.advance(60)
    run(h)


def stale_generation(h) -> None:
    active(h)
    # The spec changed; no pass has seen it yet.
    h.edit(lambda o: o["metadata"].__setitem__("generation", 2))


SITUATIONS: dict[str, tuple[Callable[[Any], None], str, str]] = {
    # name: (situation, deploymentStatus it leaves, kstatus's verdict)
    "ACTIVE": (active, "ACTIVE", "Current"),
    "promoting": (promoting, "PROMOTING", "InProgress"),
    "pushing": (pushing, "DEPLOYING", "InProgress"),
    # Goes on by itself once the secret exists, whoever creates it.
    "waiting for secrets": (waiting_for_secrets, "PENDING", "InProgress"),
    "waiting for a build": (waiting_for_a_build, "BUILDING", "InProgress"),
    "FAILED, retry scheduled": (failed_retry_scheduled, "BUILD_FAILED", "InProgress"),
    "FAILED, Baseten unreachable": (failed_baseten_unreachable, "FAILED", "InProgress"),
    "retries exhausted": (retries_exhausted, "BUILD_FAILED", "Failed"),
    "FAILED, invalid spec": (invalid_spec, "FAILED", "Failed"),
    "FAILED, model not found": (model_not_found, "FAILED", "Failed"),
    "BUILD_STOPPED": (build_stopped, "BUILD_STOPPED", "Failed"),
    "POLICY_VIOLATION": (policy_violation, "FAILED", "Failed"),
    # Hands off until the spec changes: said at once, not after Flux's timeout.
    "PAUSED": (paused, "PAUSED", "Failed"),
    "Observe drift": (observe_drift, "ACTIVE", "Current"),
    # The previous deployment serves; nothing moves on until the spec (or reanalyze) does.
    "ROLLED_BACK": (rolled_back, "ROLLED_BACK", "Failed"),
    # kstatus looks at nothing else once an object is being deleted.
    "DELETE_BLOCKED": (delete_blocked, "DELETE_BLOCKED", "Terminating"),
    "stale observedGeneration": (stale_generation, "ACTIVE", "InProgress"),
}


@pytest.mark.parametrize("situation", SITUATIONS)
def test_kstatus_verdict(h, situation: str) -> None:
    make, word, expected = SITUATIONS[situation]
    make(h)
    assert h.word() == word
    [(verdict, message)] = verdicts([h.obj()])
    assert verdict == expected, message
    if expected in ("Failed", "InProgress") and situation != "stale observedGeneration":
        # Flux shows kstatus's message: the status message, not a generic one.
        assert message == h.message()


def test_conflict_is_failed_for_the_younger_claimant(h) -> None:
    conflict(h)
    assert h.status("rival", "team-b")["deploymentStatus"] == "CONFLICT"
    [(verdict, message)] = verdicts([h.obj("rival", "team-b")])
    assert verdict == "Failed"
    assert message == h.status("rival", "team-b")["message"]


def test_a_stalled_object_recovers_once_the_world_changes(h) -> None:
    # The model appears in Baseten: the next (rate-limited) look finds it and moves on.
    model_not_found(h)
    h.steady_world()
    h.clock.advance(60)
    run(h)
    assert h.word() == "ACTIVE"
    assert verdicts([h.obj()])[0][0] == "Current"
