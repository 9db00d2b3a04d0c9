"""Section 8: orphan deployment cleanup."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import AutoscalingSettingsV1

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def days_ago(n: float) -> datetime:
    return NOW - timedelta(days=n)


def cleanup(**fields) -> dict:
    return {"intervalMinutes": 10, **fields}


def setup_world(h, cleanup_spec: dict) -> None:
    current = h.steady_world()
    h.baseten.deployments["m1"][0] = current.model_copy(update={"created_at": days_ago(1)})
    h.create(orphanDeploymentCleanup=cleanup_spec)


def orphan(h, name: str, *, status: str = "ACTIVE", age: float = 100, min_replica=1, **fields):
    return h.baseten.add_deployment(
        name=name,
        status=status,
        created_at=days_ago(age),
        autoscaling_settings=AutoscalingSettingsV1(min_replica=min_replica),
        **fields,
    )


def test_scale_to_zero_orphans(h) -> None:
    setup_world(h, cleanup(scaleToZero=True))
    a = orphan(h, "a")
    orphan(h, "b", min_replica=0)  # already 0
    orphan(h, "prod", is_production=True)
    orphan(h, "dev", is_development=True)
    orphan(h, "src.123")  # same-source variant still alive: protected
    h.run()
    assert h.baseten.called("update_deployment_autoscaling") == [("m1", a.id, {"min_replica": 0})]
    assert h.event("OrphanDeploymentsScaledIn") == ("Normal", "Scaled in 1 orphan deployments: a")
    assert h.status()["lastCleanupTime"] == "2026-01-01T00:00:00Z"


def test_interval_is_respected(h) -> None:
    setup_world(h, cleanup(scaleToZero=True))
    orphan(h, "a")
    h.run()
    h.clock.advance(9 * 60)
    h.run()
    assert len(h.baseten.called("list_deployments")) == 1
    h.clock.advance(60)
    h.run()
    assert len(h.baseten.called("list_deployments")) == 2


def test_not_run_without_interval_or_action(h) -> None:
    setup_world(h, {"scaleToZero": True})
    orphan(h, "a")
    h.run()
    assert h.baseten.called("list_deployments") == []
    h.edit(lambda o: o["spec"].__setitem__("orphanDeploymentCleanup", {"intervalMinutes": 10}))
    h.run()
    assert h.baseten.called("list_deployments") == []


def test_siblings_sources_are_protected(h) -> None:
    setup_world(h, cleanup(scaleToZero=True))
    orphan(h, "sib-src.5")
    orphan(h, "truss-sib")
    h.siblings = [
        {"metadata": {"namespace": "default", "name": "other"},
         "spec": {"modelName": "my-llm", "sourceDeploymentName": "sib-src"}},
        {"metadata": {"namespace": "x", "name": "t"},
         "spec": {"modelName": "my-llm"}, "status": {"sourceDeploymentName": "truss-sib"}},
    ]  # fmt: skip
    h.run()
    assert h.baseten.called("update_deployment_autoscaling") == []


def test_attached_variant_is_protected_even_when_inactive(h) -> None:
    setup_world(h, cleanup(scaleToZero=True))
    orphan(h, "src.7", status="INACTIVE", environment="staging")
    orphan(h, "src.8", status="INACTIVE")  # not attached, inactive: an orphan
    h.run()
    assert h.event("OrphanDeploymentsScaledIn")[1] == "Scaled in 1 orphan deployments: src.8"


def test_current_and_candidate_of_any_environment_are_not_orphans(h) -> None:
    setup_world(h, cleanup(scaleToZero=True))
    used = orphan(h, "used")
    h.baseten.add_environment(name="staging", candidate=used)
    h.run()
    assert h.baseten.called("update_deployment_autoscaling") == []


def test_delete_keeps_newest_and_old_enough_terminal_ones_go_unrelated_first(h) -> None:
    setup_world(h, cleanup(delete=True, deleteAfterDays=30, minToKeep=2))
    orphan(h, "newest", status="INACTIVE", age=40)  # kept: among the 2 newest orphans
    orphan(h, "src.1", status="INACTIVE", age=90)  # same-source variant, oldest: last
    orphan(h, "old-failed", status="BUILD_FAILED", age=60)
    orphan(h, "old-stopped", status="BUILD_STOPPED", age=70)
    orphan(h, "young", status="INACTIVE", age=10)
    orphan(h, "active-old", status="ACTIVE", age=100)
    h.run()
    deleted = [args[1] for args in h.baseten.called("delete_deployment")]
    names = {d.id: d.name for d in h.baseten.deployments["m1"]}
    assert [names[i] for i in deleted] == ["old-stopped", "old-failed", "src.1"]
    assert h.event("OrphanDeploymentsDeleted") == (
        "Normal",
        "Deleted 3 stale orphan deployments: old-stopped, old-failed, src.1",
    )


def test_delete_needs_both_age_and_keep(h) -> None:
    setup_world(h, cleanup(delete=True, deleteAfterDays=30))
    orphan(h, "a", status="INACTIVE", age=100)
    h.run()
    assert h.baseten.called("delete_deployment") == []


def test_listing_failure_retries_next_pass(h) -> None:
    setup_world(h, cleanup(scaleToZero=True))
    h.baseten.fail("list_environments", BasetenAPIError(500, "boom"))
    h.run()
    assert "lastCleanupTime" not in h.status()
    assert h.word() == "ACTIVE"
    h.run()
    assert h.status()["lastCleanupTime"] == "2026-01-01T00:00:00Z"


def test_individual_failures_are_skipped(h) -> None:
    setup_world(h, cleanup(scaleToZero=True))
    orphan(h, "a")
    orphan(h, "b")
    h.baseten.fail("update_deployment_autoscaling", BasetenAPIError(500, "boom"))
    h.run()
    assert h.event("OrphanDeploymentsScaledIn")[1] == "Scaled in 1 orphan deployments: b"


def test_no_cleanup_outside_steady_state(h) -> None:
    h.baseten.add_model()
    h.baseten.add_deployment(name="src", status="BUILDING")
    h.baseten.add_environment()
    orphan(h, "a")
    h.create(orphanDeploymentCleanup=cleanup(scaleToZero=True))
    h.run()
    assert h.baseten.called("update_deployment_autoscaling") == []


def test_orphans_still_holding_replicas_are_exported_for_alerting(h) -> None:
    from baseten_operator.runtime.metrics import REGISTRY

    def holding() -> float | None:
        return REGISTRY.get_sample_value(
            "baseten_orphan_deployments_holding_replicas",
            {"namespace": "default", "name": "my-model", "model": "my-llm"},
        )

    setup_world(h, cleanup(delete=True, deleteAfterDays=30, minToKeep=5))  # no scaleToZero
    orphan(h, "warm")  # min_replica 1: holds a GPU
    orphan(h, "cold", min_replica=0)
    h.run()
    assert holding() == 1

    del h.kube.objects[("default", "my-model")]  # the CR is gone from the cache
    h.run()
    assert holding() is None
