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


def test_a_repeated_promote_intent_is_still_checked_before_the_promote(h) -> None:
    promotable_world(h)
    h.create()
    # A pass wrote its intent, then was cut short before Baseten took the promote.
    h.baseten.fail("promote", RateLimited("POST promote", 5.0, "HTTP 429"))
    h.run()
    assert h.word() == "PROMOTING_DEPLOYMENT"
    # The next pass states the same intent: unchanged, yet written against the version it
    # read, and that version is stale (another writer, or a cache that lags a new leader).
    h.kube.conflicts = 1
    assert h.run() == Result(requeue=True)
    assert len(h.baseten.called("promote")) == 1  # only the attempt that was cut short
    assert h.word() == "PROMOTING_DEPLOYMENT"
    # On a current object the unchanged intent is a no-op write, and the promote goes ahead.
    h.run()
    assert len(h.baseten.called("promote")) == 2
    assert h.word() == "PROMOTING"


def deleting_world(h) -> None:
    """The CR is being deleted with deletionPolicy Delete; its model exists."""
    h.baseten.add_model()
    h.create(deletionPolicy="Delete", status={"modelID": "m1"})
    h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))


def test_a_repeated_delete_intent_is_still_checked_before_the_delete(h) -> None:
    deleting_world(h)
    h.baseten.fail("delete_model", RateLimited("DELETE model", 5.0, "HTTP 429"))
    h.run()
    assert h.word() == "DELETING"
    h.kube.conflicts = 1
    assert h.run() == Result(requeue=True)
    assert len(h.baseten.called("delete_model")) == 1
    assert h.obj()["metadata"]["finalizers"]  # the object is kept until the model goes
    h.run()
    assert len(h.baseten.called("delete_model")) == 2
    assert ("default", "my-model") not in h.kube.objects


def test_an_intent_for_an_object_gone_since_the_pass_read_it_stops_before_the_call(h) -> None:
    promotable_world(h)
    h.create()
    stored = h.obj()
    # The informer still serves the object; the API server no longer has it.
    h.reconciler._deps.models = type("Stale", (), {"get": staticmethod(lambda ns, name: stored)})()
    del h.kube.objects[("default", "my-model")]
    assert h.run() == Result(requeue=True)
    assert h.baseten.called("promote") == []
