"""Bounded output: one oversized input never makes a status or an Event unwritable."""

from __future__ import annotations

import pytest

from baseten_operator.baseten.errors import BasetenAPIError


def test_a_huge_error_is_cut_in_the_status_and_conditions(h) -> None:
    h.steady_world(name="old")
    h.baseten.add_deployment(name="src")
    h.create()
    h.baseten.fail("find_deployment", BasetenAPIError(500, "e" * 1_000_000))
    h.run()
    status = h.status()
    assert status["message"].startswith("active: old (3 replicas) | unable to check deployment")
    assert len(status["message"]) == 1024
    assert status["message"].endswith("e…")
    assert {c["message"] for c in status["conditions"]} == {status["message"]}


def test_a_huge_error_is_cut_in_the_event(h) -> None:
    h.baseten.add_model()
    h.create(deletionPolicy="Delete", status={"modelID": "m1"})
    h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))
    h.baseten.fail("delete_model", BasetenAPIError(500, "e" * 1_000_000))
    h.run()
    kind, message = h.event("ModelDeleteFailed")
    assert (kind, len(message), message[-2:]) == ("Warning", 1024, "e…")
    assert len(h.message()) == 1024


def test_a_huge_source_name_is_an_invalid_spec_with_a_short_message(h) -> None:
    h.create(sourceDeploymentName="s" * 1_000_000)
    with pytest.raises(Exception, match="at most 255 characters"):
        h.run()
    assert h.word() == "FAILED"
    assert h.message() == (
        "invalid spec: spec.sourceDeploymentName: String should have at most 255 characters"
    )
    assert h.baseten.calls == []
