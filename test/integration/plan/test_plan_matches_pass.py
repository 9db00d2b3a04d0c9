"""Each situation: what `plan` prints is exactly what the next real pass then writes,
and `plan` itself only read (GETs, and nothing in the simulator's audit log)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest

from baseten_operator.api.constants import BASETENMODELS
from testsupport.plan_world import PlanWorld, expected_writes, made_writes, only_gets

pytestmark = pytest.mark.integration


def spec(model: str, source: str, env: str = "production", **extra: Any) -> dict[str, Any]:
    return {
        "modelName": model,
        "sourceDeploymentName": source,
        "environment": {"name": env},
        **extra,
    }


def plan_then_pass(
    world: PlanWorld, namespace: str, name: str, model_id: str, *, reads: bool = True
) -> dict[str, Any]:
    """Plan the live CR, run the next pass, and hold one against the other. `reads`: the
    plan reads Baseten (GETs only); False: it calls Baseten not at all."""
    code, document, seen = world.plan(
        "--cluster", "--kubeconfig", str(world.kubeconfig), "-n", namespace, "--detailed-exitcode"
    )
    assert only_gets(seen) if reads else seen == [], seen
    (item,) = document["items"]
    writes = world.next_pass(namespace, name)
    assert expected_writes([item], model_id) == made_writes(writes)
    assert code == (2 if item["actions"] else 0)
    return item


def seeded_model(
    world: PlanWorld,
    name: str,
    *sources: str,
    env: str = "production",
    current: str | None = None,
    **env_settings: Any,
) -> tuple[str, dict[str, str]]:
    model_id = world.sim.seed_model(name)["id"]
    ids = {s: world.sim.seed_deployment(model_id, s)["id"] for s in sources}
    if current is not None:
        world.sim.seed_environment(
            model_id, env, current_deployment_id=ids[current], **env_settings
        )
    return model_id, ids


def test_new_environment(world: PlanWorld, namespace: str) -> None:
    model_id, _ = seeded_model(world, f"{namespace}-m", "v1")
    autoscaling = {"minReplicas": 1, "maxReplicas": 3}
    world.create_cr(
        namespace,
        "m",
        spec(
            f"{namespace}-m", "v1", environment={"name": "production", "autoscaling": autoscaling}
        ),
    )
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action == {
        "type": "create-environment",
        "environment": "production",
        "autoscalingSettings": {"min_replica": 1, "max_replica": 3},
        "promotionSettings": None,
    }


def steady(world: PlanWorld, namespace: str, name: str, cr_spec: dict[str, Any]) -> None:
    """Create the CR and let real passes take it where the test starts from."""
    world.create_cr(namespace, name, cr_spec)
    world.next_pass(namespace, name)


def test_autoscaling_drift(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(
        world, model, "v1", current="v1", autoscaling_settings={"min_replica": 1, "max_replica": 2}
    )
    desired = {"name": "production", "autoscaling": {"minReplicas": 1, "maxReplicas": 2}}
    steady(world, namespace, "m", spec(model, "v1", environment=desired))
    world.sim.ui_update_environment(model_id, "production", autoscaling_settings={"max_replica": 5})
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action["type"] == "update-environment"
    assert action["changes"] == [{"field": "maxReplicas", "old": 5, "new": 2}]


def window(min_replica: int, max_replica: int) -> dict[str, Any]:
    """A schedule window's settings as Baseten takes them: all eight, unset ones null."""
    return {
        "min_replica": min_replica,
        "max_replica": max_replica,
        "autoscaling_window": None,
        "scale_down_delay": None,
        "concurrency_target": None,
        "target_utilization_percentage": None,
        "target_in_flight_tokens": None,
        "max_scale_down_rate": None,
    }


def at(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


@pytest.fixture
def pinned(world: PlanWorld) -> Iterator[Callable[[float], None]]:
    """Pins the world's one clock (simulator, plan and pass) to an instant; real time again
    after the test."""
    yield world.clock.pin
    world.clock.pin(time.time())


def applied_schedule(world: PlanWorld, model_id: str) -> str | None:
    """The name of the schedule whose window Baseten says is in force (None: the baseline)."""
    schedules = world.sim.engine.get_environment(model_id, "production")["autoscaling_schedules"]
    applied = (schedules.get("applied_state") or {}).get("schedule_id")
    return next((s["name"] for s in schedules["schedules"] if s["id"] == applied), None)


# Instants for the story below, each with the window Baseten holds in force then (UTC
# wall clock | Asia/Tokyo, the time zone the UI moved the schedules to). The first is the
# instant CI failed at when these tests read the machine's clock.
SCHEDULE_INSTANTS = [
    # Sun 11:00 Tokyo: the UI's HOURLY Sunday window (minutes 0-30).
    pytest.param("2026-12-06T02:00:00+00:00", "from-the-ui", id="in-the-ui-window"),
    # Sun 11:45 Tokyo: past the hour's 30 minutes.
    pytest.param("2026-12-06T02:45:00+00:00", None, id="outside-any-window"),
    # Sat 15:10 in UTC, already Sun 00:10 in Tokyo: the schedule's time zone decides.
    pytest.param("2026-12-05T15:10:00+00:00", "from-the-ui", id="sunday-only-in-tokyo"),
    # Wed 03:30 Tokyo: the overnight window that opened Tuesday 22:00, past midnight.
    pytest.param("2026-12-08T18:30:00+00:00", "overnight", id="across-midnight"),
    # Thu 03:30 Tokyo: would be overnight, but Wednesday's window is not scheduled.
    pytest.param("2026-12-09T18:30:00+00:00", None, id="excluded-weekday"),
]


@pytest.mark.parametrize(("instant", "in_force"), SCHEDULE_INSTANTS)
def test_schedule_drift(
    world: PlanWorld,
    namespace: str,
    pinned: Callable[[float], None],
    instant: str,
    in_force: str | None,
) -> None:
    """The UI adds a schedule and moves the time zone of a collection the spec owns: one
    update deletes the UI's schedule and puts the time zone back, in the same PATCH as the
    baseline's autoscaling, unless a window holds the baseline now (docs/contract.md 3.8,
    baseline hold). Plan and pass agree at every instant, windows open or not."""
    pinned(at(instant))
    model = f"{namespace}-m"
    overnight = {
        "name": "overnight",
        "enabled": True,
        "cadence": "DAILY",
        "weekdays": ["MONDAY", "TUESDAY"],
        "start_hour": 22,
        "end_hour": 6,
        "start_minute": 0,
        "end_minute": 0,
        "autoscaling_settings": window(0, 1),
    }
    model_id, _ = seeded_model(
        world,
        model,
        "v1",
        current="v1",
        autoscaling_settings={"min_replica": 1, "max_replica": 2},
        autoscaling_schedule_settings={"timezone": "UTC", "schedules": [overnight]},
    )
    desired = {
        "name": "production",
        "autoscaling": {"minReplicas": 1, "maxReplicas": 2},
        "autoscalingSchedule": {
            "timezone": "UTC",
            "schedules": [
                {
                    "name": "overnight",
                    "cadence": "DAILY",
                    "weekdays": ["TUESDAY", "MONDAY"],
                    "startHour": 22,
                    "endHour": 6,
                    "autoscaling": {"minReplicas": 0, "maxReplicas": 1},
                }
            ],
        },
    }
    steady(world, namespace, "m", spec(model, "v1", environment=desired))
    hourly = {
        "name": "from-the-ui",
        "enabled": True,
        "cadence": "HOURLY",
        "weekdays": ["SUNDAY"],
        "start_minute": 0,
        "end_minute": 30,
        "autoscaling_settings": window(3, 4),
    }
    world.sim.ui_update_environment(
        model_id,
        "production",
        autoscaling_settings={"max_replica": 5},
        autoscaling_schedule_settings={"timezone": "Asia/Tokyo", "schedules": [hourly]},
    )
    assert applied_schedule(world, model_id) == in_force  # the case is what it says
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action["type"] == "update-environment"
    timezone = {"field": "scheduleTimezone", "old": "Asia/Tokyo", "new": "UTC"}
    baseline = {"field": "maxReplicas", "old": 5, "new": 2}
    assert action["changes"] == ([timezone] if in_force else [baseline, timezone])
    assert action["schedules"] == [{"name": "from-the-ui", "change": "removed"}]
    assert action["autoscalingScheduleSettings"]["timezone"] == "UTC"
    assert len(action["autoscalingScheduleSettings"]["delete_schedules"]) == 1
    reasons = [e["reason"] for e in item["events"]]
    assert reasons == (
        ["AutoscalingScheduleUpdated", "DriftCorrected"]
        if in_force
        else ["AutoscalingUpdated", "AutoscalingScheduleUpdated", "DriftCorrected"]
    )
    # The plan names the drift's maker as the pass's Event does.
    (corrected,) = [e for e in item["events"] if e["reason"] == "DriftCorrected"]
    assert action["attribution"].startswith("changed by ")
    assert corrected["message"].endswith(f"; {action['attribution']}")


def test_promotion_settings_drift(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(
        world, model, "v1", current="v1", promotion_settings={"redeploy_on_promotion": False}
    )
    desired = {
        "name": "production",
        "promotionSettings": {"redeployOnPromotion": True, "rampUpDurationSeconds": 60},
    }
    world.create_cr(namespace, "m", spec(model, "v1", environment=desired))
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action["type"] == "update-environment"
    assert action["changes"] == [
        {"field": "redeployOnPromotion", "old": False, "new": True},
        {"field": "rampUpDurationSeconds", "old": 600, "new": 60},
    ]


def test_new_source_is_promoted(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, ids = seeded_model(world, model, "v1", "v2", current="v1")
    promotion = {"scaleDownPreviousDeployment": False}
    world.create_cr(
        namespace,
        "m",
        spec(model, "v2", environment={"name": "production", "promotionSettings": promotion}),
    )
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action == {
        "type": "promote",
        "environment": "production",
        "current": "v1",
        "deployment": "v2",
        "deploymentId": ids["v2"],
        "scaleDownPreviousDeployment": False,
        "preserveEnvInstanceType": True,
    }


def test_own_promotion_no_longer_wanted_is_cancelled_before_the_fix(
    world: PlanWorld, namespace: str
) -> None:
    model = f"{namespace}-m"
    # Promoted as a fresh copy that builds for a while: no traffic yet, so Baseten cancels
    # it at once, as the plan assumes.
    model_id, ids = seeded_model(
        world,
        model,
        "v1",
        "bad",
        "fix",
        current="v1",
        promotion_settings={"redeploy_on_promotion": True},
    )
    steady(world, namespace, "m", spec(model, "bad"))
    bad_copy = world.get_cr(namespace, "m")["status"]["candidateDeploymentName"]
    assert bad_copy.startswith("bad.")
    obj = world.get_cr(namespace, "m")
    obj["spec"]["sourceDeploymentName"] = "fix"
    world.kube.update(BASETENMODELS, obj)
    item = plan_then_pass(world, namespace, "m", model_id)
    assert [action["type"] for action in item["actions"]] == ["cancel-promotion", "promote"]
    assert item["actions"][0]["deployment"] == bad_copy
    assert item["actions"][1]["deploymentId"] == ids["fix"]
    assert [e["reason"] for e in item["events"]] == ["PromotionCancelled", "DeploymentPromoted"]


def test_steady_state_is_no_changes(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(world, model, "v1", current="v1")
    steady(world, namespace, "m", spec(model, "v1"))
    item = plan_then_pass(world, namespace, "m", model_id)
    assert item["actions"] == [] and item["blockers"] == []
    code, table = world.plan_table(
        "--cluster", "--kubeconfig", str(world.kubeconfig), "-n", namespace
    )
    assert code == 0
    assert "  no changes" in table and "Plan: no changes (1 BasetenModels)." in table


def test_inactive_current_is_reactivated(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, ids = seeded_model(world, model, "v1", current="v1")
    steady(world, namespace, "m", spec(model, "v1"))
    world.deactivate(ids["v1"])
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action == {
        "type": "activate",
        "deployment": "v1",
        "deploymentId": ids["v1"],
        "reactivate": True,
    }


def test_inactive_source_is_activated(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, ids = seeded_model(world, model, "v1", current="v1")
    ids["v2"] = world.sim.seed_deployment(model_id, "v2", status="INACTIVE")["id"]
    world.create_cr(namespace, "m", spec(model, "v2"))
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action == {
        "type": "activate",
        "deployment": "v2",
        "deploymentId": ids["v2"],
        "reactivate": False,
    }


def failed_candidate(world: PlanWorld, namespace: str) -> tuple[str, str]:
    """A CR whose promotion of v2 started, and whose candidate then failed to deploy."""
    model = f"{namespace}-m"
    model_id, _ = seeded_model(world, model, "v1", "v2", current="v1")
    world.create_cr(namespace, "m", spec(model, "v2"))
    world.next_pass(namespace, "m")  # promotes
    candidate = world.get_cr(namespace, "m")["status"]["candidateDeploymentID"]
    world.sim.fail_deployment(candidate)
    return model_id, candidate


def test_failed_candidate_with_retries_left_is_retried(world: PlanWorld, namespace: str) -> None:
    model_id, candidate = failed_candidate(world, namespace)
    item = plan_then_pass(world, namespace, "m", model_id)
    (action,) = item["actions"]
    assert action["type"] == "retry" and action["deploymentId"] == candidate


def test_failed_candidate_with_retries_exhausted_is_blocked(
    world: PlanWorld, namespace: str
) -> None:
    model_id, _ = failed_candidate(world, namespace)
    three_hours_ago = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3 * 3600))
    world.set_status(namespace, "m", firstDeploymentFailureTime=three_hours_ago)
    item = plan_then_pass(world, namespace, "m", model_id)
    assert item["actions"] == []
    (blocker,) = item["blockers"]
    assert "retries exhausted" in blocker or "2h0m0s" in blocker, blocker


def test_source_not_found_is_a_blocker(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(world, model, "v1", current="v1")
    world.create_cr(namespace, "m", spec(model, "nope"))
    item = plan_then_pass(world, namespace, "m", model_id)
    assert item["actions"] == []
    assert any("nope" in b for b in item["blockers"]), item


def test_observe_shows_no_actions_and_why(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(world, model, "v1", "v2", current="v1")
    world.create_cr(namespace, "m", spec(model, "v2", mode="Observe"))
    item = plan_then_pass(world, namespace, "m", model_id)
    assert item["actions"] == []
    assert item["notes"] == [
        "Observe mode: the operator reads Baseten and reports, it never writes"
    ]


def age(world: PlanWorld, deployment_id: str, days: float) -> None:
    """Backdate a seeded deployment (the simulator seeds at "now")."""
    with world.sim.engine.lock:
        world.sim.engine.deployments[deployment_id].created_at = time.time() - days * 86400


def test_orphans_are_scaled_in_and_deleted_with_each_verdict(
    world: PlanWorld, namespace: str
) -> None:
    model = f"{namespace}-m"
    model_id = world.sim.seed_model(model)["id"]
    ids: dict[str, str] = {}
    for name, status, days, minimum in (
        ("main-v3", "ACTIVE", 0.1, 0),
        ("young-1", "INACTIVE", 0.3, 0),
        ("busy-a", "ACTIVE", 5, 2),
        ("idle-b", "INACTIVE", 10, 0),
        ("broken-c", "BUILD_FAILED", 8, 0),
    ):
        settings = {"min_replica": minimum, "max_replica": 3}
        ids[name] = world.sim.seed_deployment(
            model_id, name, status=status, autoscaling_settings=settings
        )["id"]
        age(world, ids[name], days)
    world.sim.seed_environment(model_id, "production", current_deployment_id=ids["main-v3"])
    cleanup = {
        "scaleToZero": True,
        "delete": True,
        "deleteAfterDays": 1,
        "minToKeep": 1,
        "intervalMinutes": 10,
    }
    world.create_cr(namespace, "m", spec(model, "main-v3", orphanDeploymentCleanup=cleanup))
    item = plan_then_pass(world, namespace, "m", model_id)
    assert [(a["type"], a["deployment"]) for a in item["actions"]] == [
        ("scale-in-orphan", "busy-a"),
        ("delete-orphan", "idle-b"),
        ("delete-orphan", "broken-c"),
    ]
    assert {o["deployment"]: o["reason"] for o in item["orphans"]} == {
        "young-1": "kept: among the 1 newest (minToKeep)",
        "busy-a": "scale in (minReplicas 2→0); kept: status ACTIVE is not deletable",
        "idle-b": "delete: stale",
        "broken-c": "delete: stale",
    }


def test_orphan_cleanup_not_due_plans_nothing(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, ids = seeded_model(world, model, "v1", current="v1")
    world.sim.seed_deployment(model_id, "old", status="INACTIVE")
    cleanup = {"scaleToZero": True, "intervalMinutes": 10}
    steady(world, namespace, "m", spec(model, "v1", orphanDeploymentCleanup=cleanup))
    item = plan_then_pass(world, namespace, "m", model_id)
    assert item["actions"] == [] and item["orphans"] == []


def guarded(world: PlanWorld, namespace: str, min_replica: int, status: str = "ACTIVE") -> str:
    model = f"{namespace}-m"
    model_id = world.sim.seed_model(model)["id"]
    v1 = world.sim.seed_deployment(model_id, "v1", status=status)["id"]
    world.sim.seed_environment(
        model_id,
        "production",
        current_deployment_id=v1,
        autoscaling_settings={"min_replica": min_replica},
    )
    cr = spec(model, "v1", deletionPolicy="DeleteWithGuardrails")
    cr["environment"]["autoscaling"] = {"minReplicas": min_replica}
    steady(world, namespace, "m", cr)
    world.kube.delete(BASETENMODELS, "m", namespace)  # the finalizer holds it: deleting
    return model_id


def test_guarded_deletion_blocked(world: PlanWorld, namespace: str) -> None:
    model_id = guarded(world, namespace, min_replica=1)
    item = plan_then_pass(world, namespace, "m", model_id)
    assert item["actions"] == []
    (blocker,) = item["blockers"]
    assert "production" in blocker, blocker
    assert item["status"]["deploymentStatus"] == "DELETE_BLOCKED"


def test_guarded_deletion_clear(world: PlanWorld, namespace: str) -> None:
    model_id = guarded(world, namespace, min_replica=0, status="SCALED_TO_ZERO")
    item = plan_then_pass(world, namespace, "m", model_id)
    assert item["actions"] == [
        {
            "type": "delete-model",
            "model": f"{namespace}-m",
            "modelId": model_id,
            "deletionPolicy": "DeleteWithGuardrails",
            "guardrails": "clear",
        }
    ]


def test_all_namespaces(world: PlanWorld) -> None:
    first, second = world.new_namespace(), world.new_namespace()
    for namespace in (first, second):
        model_id, _ = seeded_model(world, f"{namespace}-m", "v1", current="v1")
        steady(world, namespace, "m", spec(f"{namespace}-m", "v1"))
    code, document, seen = world.plan("--cluster", "--kubeconfig", str(world.kubeconfig), "-A")
    assert code == 0 and only_gets(seen)
    keys = {(i["namespace"], i["name"]) for i in document["items"]}
    assert {(first, "m"), (second, "m")} <= keys
    code, document, _ = world.plan("--cluster", "--kubeconfig", str(world.kubeconfig), "-n", first)
    assert [(i["namespace"], i["name"]) for i in document["items"]] == [(first, "m")]


# --- tenancy: the plan applies the run's rules, as the next pass does -------------------


def test_conflict_with_an_owner_in_another_namespace(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(world, model, "v1", "v2", current="v1")
    # Created first, and within the same second the namespace name decides: "plan-0-"
    # sorts before every "plan-{hex}".
    owner_ns = world.create_namespace(f"plan-0-{uuid.uuid4().hex[:6]}")
    steady(world, owner_ns, "owner", spec(model, "v1"))
    world.create_cr(namespace, "rival", spec(model, "v2"))
    item = plan_then_pass(world, namespace, "rival", model_id, reads=False)
    text = f"environment production of model '{model}' is managed by {owner_ns}/owner"
    assert item["actions"] == [] and item["blockers"] == [text]
    assert item["status"] == {"deploymentStatus": "CONFLICT", "message": text}
    assert world.get_cr(namespace, "rival")["status"]["message"] == text  # the pass agrees


def test_namespace_policy_violation(world: PlanWorld) -> None:
    namespace = world.create_namespace(
        f"plan-{uuid.uuid4().hex[:6]}", allowed_models="search-*,ranker"
    )
    model = f"{namespace}-m"
    model_id, _ = seeded_model(world, model, "v1")
    world.create_cr(namespace, "m", spec(model, "v1"))
    item = plan_then_pass(world, namespace, "m", model_id, reads=False)
    text = (
        f"namespace policy: model '{model}' is not allowed in namespace {namespace} "
        "(models.baseten.com/allowed-models: search-*,ranker)"
    )
    assert item["actions"] == [] and item["blockers"] == [text]
    assert [(e["reason"], e["message"]) for e in item["events"]] == [("PolicyViolation", text)]
    assert world.get_cr(namespace, "m")["status"]["message"] == text


def test_a_namespace_key_serves_the_plan_as_it_serves_the_pass(world: PlanWorld) -> None:
    """The namespace's team key, from its Secret: the plan's reads carry it (GETs only),
    and so do the next pass's writes; the organisation's model of the same name is not
    the one the team's namespace manages."""
    team = f"team-{uuid.uuid4().hex[:6]}"
    world.sim.create_team(team)
    world.sim.add_api_key(f"{team}-secret-key", label=team, team=team)
    world.create_key_secret(f"{team}-key", f"{team}-secret-key")
    namespace = world.create_namespace(
        f"plan-{uuid.uuid4().hex[:6]}", team=team, api_key_secret=f"{team}-key"
    )
    model = f"{namespace}-m"
    decoy = world.sim.seed_model(model)["id"]  # the organisation's, in no team
    model_id = world.sim.seed_model(model, team=team)["id"]
    world.sim.seed_deployment(model_id, "v1")
    world.create_cr(namespace, "m", spec(model, "v1"))

    started = time.time()
    item = plan_then_pass(world, namespace, "m", model_id)
    assert [a["type"] for a in item["actions"]] == ["create-environment"]
    plan_reads = [r for r in world.requests.seen(started) if r.method == "GET"]
    assert {r.key for r in plan_reads} == {team}
    assert any(r.path == "/v1/teams" for r in plan_reads)
    writes = [e for e in world.sim.audit_log() if e["path"].startswith(f"/v1/models/{model_id}")]
    assert writes and {e["key"] for e in writes} == {team}
    assert not [e for e in world.sim.audit_log() if decoy in e["path"]]


def test_pause_shows_no_actions_and_why(world: PlanWorld, namespace: str) -> None:
    model = f"{namespace}-m"
    model_id, _ = seeded_model(world, model, "v1", "v2", current="v1")
    world.create_cr(namespace, "m", spec(model, "v2", mode="Pause"))
    code, document, seen = world.plan(
        "--cluster", "--kubeconfig", str(world.kubeconfig), "-n", namespace, "--detailed-exitcode"
    )
    (item,) = document["items"]
    assert code == 0 and seen == []  # a paused CR needs no Baseten call at all
    assert item["actions"] == []
    assert item["notes"] == ["Pause mode: reconciliation is paused, the operator calls nothing"]
    assert world.real_pass(namespace, "m") == []
    assert world.get_cr(namespace, "m")["status"]["deploymentStatus"] == "PAUSED"
