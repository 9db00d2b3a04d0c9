"""Orphan cleanup, the three deletion policies, and many CRs converging together."""

from __future__ import annotations

from typing import Any

import pytest

from testsupport.operator_harness import (
    OperatorHarness,
    is_ready,
    reconcile_spec,
)
from testsupport.polling import wait_for

pytestmark = pytest.mark.integration


def test_orphan_cleanup_scales_in_and_deletes_exactly_the_right_ones(
    harness: OperatorHarness, namespace: str
) -> None:
    model = harness.sim.seed_model("orph")
    model_id = model["id"]
    seeded: dict[str, str] = {}

    def seed(name: str, status: str, days: float, min_replica: int = 0) -> None:
        dep = harness.sim.seed_deployment(
            model_id,
            name,
            status=status,
            autoscaling_settings={"min_replica": min_replica, "max_replica": 3},
        )
        harness.age_deployment(dep["id"], days)
        seeded[name] = dep["id"]

    seed("main-v3", "ACTIVE", 0.1)  # this CR's source
    seed("side-v1", "ACTIVE", 40)  # the sibling CR's source
    seed("side-v1.1700000000", "ACTIVE", 35, min_replica=1)  # sibling's live variant: protected
    seed("young-1", "INACTIVE", 0.3)  # newest orphan: kept (minToKeep)
    seed("kept-2", "INACTIVE", 2)  # second newest: kept (minToKeep) although old enough
    seed("busy-a", "ACTIVE", 5, min_replica=2)  # orphan still serving: scaled in, never deleted
    seed("broken-c", "BUILD_FAILED", 8)  # stale failure: deleted
    seed("idle-b", "INACTIVE", 10)  # stale: deleted
    seed("main-v3.1600000000", "INACTIVE", 30)  # dead variant of this CR's source: deleted

    sibling = reconcile_spec("orph", "side-v1", environment={"name": "staging"})
    harness.create_model_cr(namespace, "orph-staging", sibling)
    harness.wait_ready(namespace, "orph-staging")
    main = reconcile_spec(
        "orph",
        "main-v3",
        orphanDeploymentCleanup={
            "scaleToZero": True,
            "delete": True,
            "deleteAfterDays": 1,
            "minToKeep": 2,
            "intervalMinutes": 10,
        },
    )
    harness.create_model_cr(namespace, "orph-production", main)

    deleted = harness.wait_event(namespace, "orph-production", "OrphanDeploymentsDeleted")
    scaled = harness.wait_event(namespace, "orph-production", "OrphanDeploymentsScaledIn")
    assert scaled == "Scaled in 1 orphan deployments: busy-a"
    assert deleted.startswith("Deleted 3 stale orphan deployments: ")
    # Unrelated leftovers first, oldest first; then same-source variants.
    assert deleted.removeprefix("Deleted 3 stale orphan deployments: ") == (
        "idle-b, broken-c, main-v3.1600000000"
    )
    remaining = {d["name"]: d for d in harness.sim.engine.list_deployments(model_id)}
    assert set(remaining) == {
        "main-v3",
        "side-v1",
        "side-v1.1700000000",
        "young-1",
        "kept-2",
        "busy-a",
    }
    assert remaining["busy-a"]["autoscaling_settings"]["min_replica"] == 0
    assert remaining["side-v1.1700000000"]["autoscaling_settings"]["min_replica"] == 1
    cr = harness.wait_ready(namespace, "orph-production")
    assert cr["status"].get("lastCleanupTime")
    deletes = [e for e in harness.writes_for_model(model_id) if e["method"] == "DELETE"]
    assert sorted(e["path"].rsplit("/", 1)[1] for e in deletes) == sorted(
        seeded[n] for n in ("idle-b", "broken-c", "main-v3.1600000000")
    )


def test_delete_with_guardrails_blocks_then_deletes_once_drained(
    harness: OperatorHarness, namespace: str
) -> None:
    model = harness.sim.seed_model("guarded")
    harness.sim.seed_deployment(model["id"], "g1")
    spec = reconcile_spec(
        "guarded",
        "g1",
        deletionPolicy="DeleteWithGuardrails",
        environment={"name": "production", "autoscaling": {"minReplicas": 1, "maxReplicas": 2}},
    )
    harness.create_model_cr(namespace, "guarded", spec)
    harness.wait_ready(namespace, "guarded")

    harness.delete_cr(namespace, "guarded")
    # The first DELETE_BLOCKED version: the one the event was emitted with.
    blocked = harness.wait_seen(
        namespace,
        "guarded",
        lambda cr: (cr.get("status") or {}).get("deploymentStatus") == "DELETE_BLOCKED",
    )
    text = blocked["status"]["message"]
    assert text.startswith("deletion blocked: production (min=1, active=")
    assert text.endswith(" must be scaled to min_replicas: 0 and idle before model can be deleted")
    assert harness.wait_event(namespace, "guarded", "ModelDeleteBlocked") == text
    assert harness.sim.engine.find_model_id("guarded") == model["id"]

    # Drain the environment in Baseten: no minimum, and the deployment scales to zero.
    harness.sim.ui_update_environment(model["id"], "production", {"min_replica": 0})
    harness.wait_gone(namespace, "guarded", timeout=20.0)
    # Events are written asynchronously: the object may be gone before its last Event.
    deleted = harness.wait_event(namespace, "guarded", "ModelDeleted")
    assert deleted == f"Deleted Baseten model {model['id']}"
    assert len(harness.event_messages(namespace, "guarded", "ModelDeleted")) == 1
    assert harness.sim.engine.find_model_id("guarded") is None
    # ModelDeleteBlocked marks entering DELETE_BLOCKED and each change of the reason (the
    # replica counts while the environment drains): one per blocked message the status took.
    entered = blocked_messages(harness.statuses(namespace, "guarded"))
    assert entered[0] == text
    assert harness.event_count(namespace, "guarded", "ModelDeleteBlocked") == len(entered)
    assert set(harness.event_messages(namespace, "guarded", "ModelDeleteBlocked")) == set(entered)


def blocked_messages(statuses: list[dict[str, Any]]) -> list[str]:
    """The DELETE_BLOCKED message of every status that entered DELETE_BLOCKED or changed
    its message, in order."""
    entered: list[str] = []
    previous: tuple[Any, Any] = (None, None)
    for status in statuses:
        current = (status.get("deploymentStatus"), status.get("message"))
        if current[0] == "DELETE_BLOCKED" and current != previous:
            entered.append(str(current[1]))
        previous = current
    return entered


def test_delete_policy_deletes_the_model(harness: OperatorHarness, namespace: str) -> None:
    model = harness.sim.seed_model("doomed")
    harness.sim.seed_deployment(model["id"], "x1")
    spec = reconcile_spec("doomed", "x1", deletionPolicy="Delete")
    harness.create_model_cr(namespace, "doomed", spec)
    harness.wait_ready(namespace, "doomed")

    harness.delete_cr(namespace, "doomed")
    harness.wait_gone(namespace, "doomed")
    harness.wait_event(
        namespace, "doomed", "ModelDeleted", contains=f"Deleted Baseten model {model['id']}"
    )
    assert harness.sim.engine.find_model_id("doomed") is None


def test_retain_policy_keeps_the_model(harness: OperatorHarness, namespace: str) -> None:
    model = harness.sim.seed_model("kept")
    harness.sim.seed_deployment(model["id"], "k1")
    harness.create_model_cr(namespace, "kept", reconcile_spec("kept", "k1"))
    harness.wait_ready(namespace, "kept")

    harness.delete_cr(namespace, "kept")
    harness.wait_gone(namespace, "kept")
    assert harness.sim.engine.find_model_id("kept") == model["id"]
    assert [e for e in harness.writes_for_model(model["id"]) if e["method"] == "DELETE"] == []
    env = harness.environment(model["id"], "production")
    assert env["current_deployment"]["name"] == "k1"


def test_fifty_crs_converge(harness: OperatorHarness, namespace: str) -> None:
    names = [f"many-{i:02d}" for i in range(50)]
    for name in names:
        model = harness.sim.seed_model(name)
        harness.sim.seed_deployment(model["id"], f"{name}-src")
    for name in names:
        harness.create_model_cr(namespace, name, reconcile_spec(name, f"{name}-src"))

    def all_ready() -> bool:
        return all(is_ready(harness.get_cr(namespace, name)) for name in names)

    wait_for(all_ready, timeout=60.0, interval=0.25)
    for name in names:
        model_id = harness.sim.engine.find_model_id(name)
        assert model_id is not None
        env = harness.environment(model_id, "production")
        assert env["current_deployment"]["name"] == f"{name}-src"
        promotes = [e for e in harness.writes_for_model(model_id) if e["path"].endswith("/promote")]
        assert len(promotes) == 1, name
