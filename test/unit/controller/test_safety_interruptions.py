"""Passes cut short: throttled by Baseten, or acting on an object that moved on.

Neither is a failure of the model, so neither turns a status FAILED; neither may lead
to the irreversible call it interrupts.
"""

from __future__ import annotations

from baseten_operator.baseten.errors import RateLimited
from baseten_operator.runtime.controller import Result


def promotable_world(h) -> None:
    """production serves `old`; the spec's source `src` is ACTIVE and not yet promoted."""
    h.baseten.add_model()
    old = h.baseten.add_deployment(name="old", active_replica_count=3, environment="production")
    h.baseten.add_deployment(name="src", status="ACTIVE")
    h.baseten.add_environment(current=old, autoscaling={"min_replica": 1})


def test_a_rate_limit_longer_than_the_deadline_ends_the_pass_and_comes_back_after_it(h) -> None:
    promotable_world(h)
    h.create()
    h.run()  # settle: status on record
    before = h.status()
    h.baseten.fail("get_environment", RateLimited("GET environment", 42.0, "HTTP 429"))
    assert h.run() == Result(requeue_after=42.0)
    assert h.writes == 0  # throttled is not FAILED: the status stays what it was
    assert h.status() == before
    assert h.events == []


def test_a_rate_limit_of_zero_seconds_still_comes_back(h) -> None:
    promotable_world(h)
    h.create()
    h.baseten.fail("find_model", RateLimited("GET /v1/models", 0.0, "HTTP 429"))
    result = h.run()
    assert result.requeue_after is not None and result.requeue_after > 0


def test_a_promote_intent_that_conflicts_stops_before_the_promote(h) -> None:
    promotable_world(h)
    h.create()
    # Another writer moved the object on since this pass read it: the intent written
    # before the promote is checked against the version the pass read.
    h.kube.conflicts = 1
    assert h.run() == Result(requeue=True)
    assert h.baseten.called("promote") == []
    assert h.writes == 0
    # The next pass, on the fresh object, promotes once.
    h.run()
    assert len(h.baseten.called("promote")) == 1
