"""How an environment's or a deployment's settings change: an update carries only the fields
it changes, and the result must still make sense (min_replica <= max_replica)."""

from __future__ import annotations

from typing import Any

from baseten_operator.sim.baseten.errors import bad_request
from baseten_operator.sim.baseten.records import DEFAULT_ROLLING_DEPLOY_CONFIG


def merged_autoscaling(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    merged = {**base, **changes}
    if merged["min_replica"] > merged["max_replica"]:
        raise bad_request(
            "min_replica must be less than or equal to max_replica",
            {"min_replica": merged["min_replica"], "max_replica": merged["max_replica"]},
        )
    return merged


def merged_promotion_settings(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`rolling_deploy_config` merges field by field (from the defaults when it was null)."""
    merged = {**base, **{k: v for k, v in changes.items() if k != "rolling_deploy_config"}}
    rolling = changes.get("rolling_deploy_config")
    if rolling is not None:
        previous = base.get("rolling_deploy_config") or DEFAULT_ROLLING_DEPLOY_CONFIG
        merged["rolling_deploy_config"] = {**previous, **rolling}
    return merged
