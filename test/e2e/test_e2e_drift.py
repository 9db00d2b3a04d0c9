"""Drift: a click-ops change in Baseten's UI is reverted to the BasetenModel's settings."""

from __future__ import annotations

from typing import Any

import pytest

from testsupport.e2e.harness import (
    Stack,
)
from testsupport.polling import wait_for

pytestmark = pytest.mark.e2e


def test_ui_change_is_reverted_with_an_event(stack: Stack) -> None:
    namespace = stack.new_namespace("e2e-drift")
    model_id, _ = stack.promoted_model(
        namespace, "drift", autoscaling={"minReplicas": 1, "maxReplicas": 3}
    )

    stack.sim.control(
        "ui_update_environment",
        model_id=model_id,
        env="production",
        autoscaling_settings={"min_replica": 2, "max_replica": 5},
    )

    event = stack.wait_event(namespace, "drift", "AutoscalingUpdated")
    assert event["type"] == "Normal"
    assert event["message"] == "updating autoscaling: 2 changes"
    settings = wait_for(
        lambda: _settings_if(stack, model_id, min_replica=1, max_replica=3),
        timeout=30.0,
        describe=lambda: str(stack.sim.environment(model_id, "production")),
    )
    assert settings["min_replica"] == 1
    patches = [
        e
        for e in stack.sim.writes_for_model(model_id)
        if e["method"] == "PATCH" and e["path"].endswith("/environments/production")
    ]
    # Each PATCH carries the whole autoscaling group the spec sets. (The pass that the status
    # write wakes may PATCH once more before Baseten has applied the first one: idempotent.)
    assert patches
    assert all(
        p["body"] == {"autoscaling_settings": {"min_replica": 1, "max_replica": 3}} for p in patches
    )
    stack.wait_status(
        namespace,
        "drift",
        lambda s: s.get("deploymentStatus") == "ACTIVE" and "min:1 max:3" in s.get("message", ""),
        what="steady again with the spec's settings",
    )


def _settings_if(stack: Stack, model_id: str, **expected: int) -> dict[str, Any] | None:
    settings = stack.sim.environment(model_id, "production")["autoscaling_settings"]
    return settings if all(settings.get(k) == v for k, v in expected.items()) else None
