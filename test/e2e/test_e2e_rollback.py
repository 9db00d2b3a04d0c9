"""Incident: roll back. A bad version ramps up in production, the CR is reverted (or moved on to
a fix): the operator cancels its own promotion instead of letting it reach full traffic.

Seen as a user and Baseten see it: kubectl, the operator process, the simulator's audit log
(every write it answered) and its environment as the API shows it.
"""

from __future__ import annotations

from typing import Any

import pytest

from testsupport.e2e.harness import Stack, basetenmodel, status_of, unique_name
from testsupport.e2e.local import KeyStack
from testsupport.polling import wait_for

pytestmark = pytest.mark.e2e

ENV = "production"


def promotion_calls(stack: Stack, model_id: str) -> list[tuple[str, Any]]:
    """The promotion writes Baseten answered for the model: (endpoint, deployment id)."""
    return [
        (entry["endpoint"], (entry["body"] or {}).get("deployment_id"))
        for entry in stack.sim.writes_for_model(model_id)
        if entry["endpoint"] in ("promote", "cancel_promotion")
    ]


class Rollout:
    """A model serving `good` whose CR then asks for `bad`, ramping up over `ramp` simulated
    seconds; records every deployment seen serving, by the CR and by Baseten."""

    def __init__(self, stack: Stack, namespace: str, ramp: int) -> None:
        self.stack, self.namespace = stack, namespace
        self.name = unique_name("rollback")
        replicas = {"autoscaling_settings": {"min_replica": 1}}
        self.model_id, good = stack.sim.seed_model_with_deployment(self.name, "good", **replicas)
        sim = stack.sim
        self.bad = sim.control("seed_deployment", model_id=self.model_id, name="bad", **replicas)
        self.fix = sim.control("seed_deployment", model_id=self.model_id, name="fix", **replicas)
        sim.control(
            "seed_environment",
            model_id=self.model_id,
            name=ENV,
            current_deployment_id=good,
            promotion_settings={
                "rolling_deploy": True,
                "ramp_up_while_promoting": True,
                "ramp_up_duration_seconds": ramp,
            },
        )
        self.serving: set[str] = set()
        self.reported_active: set[str] = set()

    def ask_for(self, source: str) -> None:
        self.ask_for_source({"sourceDeploymentName": source})

    def ask_for_source(self, source: dict[str, Any]) -> None:
        """The spec with `source`: a `sourceDeploymentName`, or a `trussConfig`."""
        spec = {"modelName": self.name, "environment": {"name": ENV}, **source}
        self.stack.kubectl.apply(basetenmodel(self.name, self.namespace, spec))

    def wait(self, what: str, predicate: Any, timeout: float = 60) -> dict[str, Any]:
        """The CR's status once `predicate(status)` holds, noting what serves meanwhile."""

        def seen(status: dict[str, Any]) -> bool:
            env = self.stack.sim.environment(self.model_id, ENV)
            self.serving.add(env["current_deployment"]["name"])
            self.reported_active.add(status.get("activeDeploymentName") or "")
            return bool(predicate(status))

        found = self.stack.wait_status(self.namespace, self.name, seen, what=what, timeout=timeout)
        return status_of(found)

    def steady_on(self, deployment: str, timeout: float = 60) -> dict[str, Any]:
        return self.wait(
            f"steady on {deployment}",
            lambda s: s.get("deploymentStatus") == "ACTIVE"
            and s.get("activeDeploymentName") == deployment
            and not s.get("candidateDeploymentName"),
            timeout,
        )

    def bad_ramping_up(self) -> None:
        """Steady on `good`, then the CR asks for `bad`, which Baseten starts ramping up."""
        self.ask_for("good")
        self.steady_on("good")
        self.ask_for("bad")
        self.wait(
            "bad ramping up",
            lambda s: s.get("candidateDeploymentName") == "bad"
            and (s.get("promotion") or {}).get("phase") == "RAMPING_UP",
        )

    def events(self) -> dict[str, str]:
        return {
            e["reason"]: e["message"] for e in self.stack.kubectl.events(self.namespace, self.name)
        }


def cancelled_event(source: str) -> str:
    return f"Cancelled promotion of bad to {ENV}: the spec now asks for {source}"


def test_a_revert_cancels_the_bad_rollout_and_never_flips(stack: Stack) -> None:
    rollout = Rollout(stack, stack.new_namespace("e2e-revert"), ramp=1000)
    rollout.bad_ramping_up()

    rollout.ask_for("good")  # git revert; Argo CD syncs it
    ramping_down = rollout.wait(
        "the cancellation ramping down",
        lambda s: "cancelled, ramping down" in (s.get("message") or ""),
    )
    assert ramping_down["deploymentStatus"] == "PROMOTING"
    assert ramping_down["promotion"]["phase"] == "RAMPING_DOWN"
    rollout.steady_on("good")

    env = stack.sim.environment(rollout.model_id, ENV)
    assert env["candidate_deployment"] is None  # the bad promotion can no longer complete
    assert promotion_calls(stack, rollout.model_id) == [
        ("promote", rollout.bad["id"]),
        ("cancel_promotion", None),
    ]
    assert rollout.serving == {"good"}
    assert "bad" not in rollout.reported_active
    events = rollout.events()
    assert events["PromotionCancelled"] == cancelled_event("good")
    assert "DeploymentActive" not in events


def test_a_forward_fix_cancels_then_promotes_the_fix_once(stack: Stack) -> None:
    rollout = Rollout(stack, stack.new_namespace("e2e-fix"), ramp=500)
    rollout.bad_ramping_up()

    rollout.ask_for("fix")
    rollout.steady_on("fix")

    assert promotion_calls(stack, rollout.model_id) == [
        ("promote", rollout.bad["id"]),
        ("cancel_promotion", None),
        ("promote", rollout.fix["id"]),
    ]
    assert "bad" not in rollout.serving | rollout.reported_active
    assert rollout.events()["PromotionCancelled"] == cancelled_event("fix")


def test_a_forward_fix_waiting_to_be_pushed_cancels_the_bad_rollout_first(stack: Stack) -> None:
    """The fix is a trussConfig naming a Baseten secret nobody has created yet: its push
    waits, and the bad version must not ramp on meanwhile. One cancel, before any push."""
    rollout = Rollout(stack, stack.new_namespace("e2e-fix-push"), ramp=1000)
    rollout.bad_ramping_up()
    pushes_before = truss_pushes(stack)

    secret = unique_name("new-token").replace("-", "_")
    truss = {
        "resources": {"accelerator": "L4"},
        "baseImage": {"image": "vllm/vllm-openai:v0.6.3"},
        "secrets": {secret: ""},
    }
    rollout.ask_for_source({"trussConfig": truss})
    rollout.wait(
        "the fix waiting for its secret, the bad rollout stopped",
        lambda s: s.get("message") == f"active: good | waiting for secrets: {secret}"
        and not s.get("candidateDeploymentName"),
        timeout=90,
    )
    env = stack.sim.environment(rollout.model_id, ENV)
    assert env["candidate_deployment"] is None
    assert env["current_deployment"]["name"] == "good"
    assert promotion_calls(stack, rollout.model_id) == [
        ("promote", rollout.bad["id"]),
        ("cancel_promotion", None),
    ]
    assert truss_pushes(stack) == pushes_before  # nothing pushed: the secret is missing
    assert rollout.serving == {"good"}
    assert rollout.events()["PromotionCancelled"] == cancelled_event(
        rollout.stack.kubectl.json("get", "bm", rollout.name, "-n", rollout.namespace)["status"][
            "sourceDeploymentName"
        ]
    )


def truss_pushes(stack: Stack) -> int:
    """How many truss pushes the simulator answered, for any model."""
    return sum(1 for entry in stack.sim.audit_log() if entry["endpoint"].startswith("graphql:"))


def test_a_promotion_started_in_the_ui_is_left_alone(stack: Stack) -> None:
    rollout = Rollout(stack, stack.new_namespace("e2e-ui"), ramp=500)
    rollout.ask_for("good")
    rollout.steady_on("good")

    started = stack.sim.api_post(
        f"/models/{rollout.model_id}/environments/{ENV}/promote",
        {"deployment_id": rollout.bad["id"]},
    )
    assert started.status_code == 200, started.text
    # Baseten completes it: nobody cancelled it on the way.
    wait_for(
        lambda: stack.sim.environment(rollout.model_id, ENV)["current_deployment"]["name"] == "bad",
        timeout=60,
        describe=lambda: "the UI's promotion of bad completing",
    )
    assert ("cancel_promotion", None) not in promotion_calls(stack, rollout.model_id)
    assert "PromotionCancelled" not in rollout.events()


def test_a_leader_killed_between_intent_and_cancel_is_followed_by_one_cancel(
    key_stack: KeyStack,
) -> None:
    stack, kubectl = key_stack.stack, key_stack.cluster.kubectl
    leader = key_stack.start_operator("operator-a")
    first_holder = wait_for(kubectl.lease_holder, timeout=30)
    key_stack.start_operator("operator-b")
    rollout = Rollout(stack, stack.new_namespace("e2e-failover"), ramp=2500)
    rollout.bad_ramping_up()

    # The leader's cancels never reach Baseten: each connection is dropped unanswered.
    stack.sim.control("inject_fault", endpoint="cancel_promotion", kind="drop", count=1000)
    rollout.ask_for("good")
    rollout.wait(
        "the cancel intent on record",
        lambda s: s.get("cancellingDeploymentID") == rollout.bad["id"],
    )
    wait_for(
        lambda: any(
            r["path"].endswith("/cancel_promotion") and r["fault"] == "drop"
            for r in stack.sim.request_log()
        ),
        timeout=30,
        describe=lambda: "a cancel sent by the leader",
    )
    key_stack.processes.remove(leader.process)
    leader.process.kill()
    stack.sim.control("clear_faults")

    wait_for(lambda: kubectl.lease_holder() not in ("", first_holder), timeout=60)
    rollout.steady_on("good", timeout=90)
    assert promotion_calls(stack, rollout.model_id) == [
        ("promote", rollout.bad["id"]),
        ("cancel_promotion", None),
    ]
    assert rollout.serving == {"good"}
    assert "bad" not in rollout.reported_active
    assert rollout.events()["PromotionCancelled"] == cancelled_event("good")
