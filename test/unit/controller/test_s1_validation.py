"""Section 1: the operator validates every object it reads."""

from __future__ import annotations

import pytest

from baseten_operator.runtime.controller import TerminalError


def test_invalid_object_fails_naming_the_field_without_calling_baseten(h) -> None:
    h.create(environment={"name": "Production"})
    with pytest.raises(TerminalError):
        h.run()
    assert h.word() == "FAILED"
    assert h.message() == (
        "invalid spec: spec.environment.name: String should match pattern "
        "'^[a-z0-9]([a-z0-9-]*[a-z0-9])?$'"
    )
    assert h.baseten.calls == []
    assert h.writes == 1


def test_one_of_violation_names_the_rule(h) -> None:
    h.create(trussConfig={"resources": {"accelerator": "L4"}, "baseImage": {"image": "x"}})
    with pytest.raises(TerminalError):
        h.run()
    assert h.message() == (
        "invalid spec: spec: exactly one of sourceDeploymentName or trussConfig must be set"
    )
    assert h.baseten.calls == []


def test_every_problem_is_listed(h) -> None:
    h.create(
        environment={"name": "production", "autoscaling": {"minReplicas": -1, "maxReplicas": 0}}
    )
    with pytest.raises(TerminalError):
        h.run()
    assert h.message() == (
        "invalid spec: spec.environment.autoscaling.minReplicas: Input should be greater than "
        "or equal to 0; spec.environment.autoscaling.maxReplicas: Input should be greater "
        "than or equal to 1"
    )


def test_invalid_object_repeated_pass_writes_nothing(h) -> None:
    h.create(environment={"name": "Bad"})
    with pytest.raises(TerminalError):
        h.run()
    with pytest.raises(TerminalError):
        h.run()
    assert h.writes == 0


def test_invalid_object_being_deleted_is_released_without_baseten_calls(h) -> None:
    h.create(
        environment={"name": "Bad"},
        deletionPolicy="Delete",
        status={"modelID": "m1"},
    )
    h.edit(lambda o: o["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))
    h.run()
    assert h.baseten.calls == []
    assert ("default", "my-model") not in h.kube.objects
