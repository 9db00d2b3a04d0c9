"""Steps 10 to 14, fail closed: no promote while Baseten leaves out what the environment serves."""

from __future__ import annotations

from baseten_operator.baseten.models import EnvironmentV1


def test_an_environment_without_current_deployment_is_never_promoted_into(h) -> None:
    h.baseten.add_model()
    h.baseten.add_deployment(name="src", status="ACTIVE")
    # The answer has no current_deployment member at all (not null): what serves is unknown.
    h.baseten.environments[("m1", "production")] = EnvironmentV1.model_validate(
        {"name": "production", "model_id": "m1", "autoscaling_settings": {"min_replica": 1}}
    )
    h.create()
    assert h.run().requeue_after == 30
    assert h.word() == "PENDING"
    assert h.message() == (
        "unable to promote: current deployment of environment production unknown "
        "(Baseten answered without current_deployment)"
    )
    assert h.baseten.writes == []
    # An explicit null says nothing serves: the next pass promotes.
    h.baseten.environments[("m1", "production")] = EnvironmentV1.model_validate(
        {"name": "production", "model_id": "m1", "current_deployment": None}
    )
    h.run()
    assert [call[0] for call in h.baseten.writes] == ["promote"]
