"""Section 3 steps 8, 11 and 12: a promotion ramping traffic, and the instance type, in status.

Beyond the Go operator (issue 15 item 8): `status.promotion` mirrors Baseten's
`in_progress_promotion` while there is one, the promoting message says how much traffic the
candidate gets, and `status.instanceType` names the environment's instance type.
"""

from __future__ import annotations

from typing import Any

AP = "active: old (3 replicas) | "
RAMPING = {"status": "RAMPING_UP", "percent_traffic_to_new_version": 30}


def promoting(h, in_progress: dict[str, Any] | None, *, source: str = "src", **env: Any):
    """Production serves `old` and promotes `src` (ACTIVE, 2 replicas)."""
    h.baseten.add_model()
    old = h.baseten.add_deployment(name="old", active_replica_count=3, environment="production")
    candidate = h.baseten.add_deployment(name="src", active_replica_count=2)
    h.baseten.add_environment(current=old, candidate=candidate, in_progress=in_progress, **env)
    h.create(sourceDeploymentName=source)
    return old, candidate


def test_a_ramping_promotion_shows_its_phase_and_traffic(h) -> None:
    promoting(h, RAMPING)
    h.run()
    assert h.word() == "PROMOTING"
    assert h.message() == f"{AP}promoting: src (ACTIVE, 2 replicas, 30% traffic)"
    assert h.status()["promotion"] == {"phase": "RAMPING_UP", "trafficPercent": 30}


def test_without_in_progress_promotion_no_traffic_is_claimed(h) -> None:
    promoting(h, None)
    h.run()
    assert h.message() == f"{AP}promoting: src (ACTIVE, 2 replicas)"
    assert "promotion" not in h.status()


def test_a_phase_without_a_percentage_shows_the_phase_only(h) -> None:
    promoting(h, {"status": "RELEASING"})
    h.run()
    assert h.message() == f"{AP}promoting: src (ACTIVE, 2 replicas)"
    assert h.status()["promotion"] == {"phase": "RELEASING"}


def test_the_ramp_writes_status_as_it_moves_and_never_when_it_does_not(h) -> None:
    promoting(h, RAMPING)
    h.run()
    h.run()
    assert h.writes == 0
    env = h.baseten.environments[("m1", "production")]
    env.in_progress_promotion = env.in_progress_promotion.model_copy(
        update={"percent_traffic_to_new_version": 40}
    )
    h.run()
    assert h.writes == 1
    assert h.message() == f"{AP}promoting: src (ACTIVE, 2 replicas, 40% traffic)"
    assert h.status()["promotion"] == {"phase": "RAMPING_UP", "trafficPercent": 40}


def test_the_promotion_is_cleared_once_it_completes(h) -> None:
    _, candidate = promoting(h, RAMPING)
    h.run()
    h.baseten.add_environment(current=candidate, autoscaling={"min_replica": 1, "max_replica": 2})
    h.run()
    assert h.word() == "ACTIVE"
    assert "promotion" not in h.status()


def test_another_promotion_blocking_this_one_shows_its_traffic(h) -> None:
    promoting(h, RAMPING, source="other")
    h.baseten.add_deployment(name="other")
    h.run()
    assert h.message() == (
        f"{AP}promoting: src (ACTIVE, 2 replicas, 30% traffic) — waiting for completion "
        "before promoting other"
    )
    assert h.status()["promotion"] == {"phase": "RAMPING_UP", "trafficPercent": 30}


def test_the_instance_type_is_recorded_and_a_steady_pass_writes_nothing_more(h) -> None:
    h.baseten.add_model()
    current = h.baseten.add_deployment(name="src", active_replica_count=3)
    h.baseten.add_environment(current=current, instance_type="H100:1x8")
    h.create()
    h.run()
    assert h.status()["instanceType"] == "H100:1x8"
    h.clock.advance(300)
    h.run()
    assert h.writes == 0


def test_observe_shows_the_ramp_too(h) -> None:
    h.baseten.add_model()
    old = h.baseten.add_deployment(name="old", active_replica_count=3)
    candidate = h.baseten.add_deployment(name="src", active_replica_count=2)
    h.baseten.add_environment(
        current=old, candidate=candidate, in_progress=RAMPING, instance_type="L4:1x4"
    )
    h.create(mode="Observe")
    h.run()
    assert h.message() == f"{AP}promoting: src (ACTIVE, 2 replicas, 30% traffic)"
    assert h.status()["promotion"] == {"phase": "RAMPING_UP", "trafficPercent": 30}
    assert h.status()["instanceType"] == "L4:1x4"
    assert h.baseten.writes == []
