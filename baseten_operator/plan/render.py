"""A plan as a readable table, or as JSON (schema: plan.schema.json, docs/plan.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from baseten_operator.plan.planner import ModelPlan
from baseten_operator.plan.secret_planner import SecretPlan

API_VERSION = "plan.baseten.com/v1"
KIND = "Plan"
# The JSON Schema of `-o json` (shipped with the package).
SCHEMA_PATH = Path(__file__).with_name("plan.schema.json")


def has_changes(plans: Sequence[ModelPlan | SecretPlan]) -> bool:
    return any(plan.actions for plan in plans)


def has_errors(plans: Sequence[ModelPlan | SecretPlan]) -> bool:
    return any(plan.error for plan in plans)


def _events(plan: ModelPlan | SecretPlan) -> list[dict[str, str]]:
    return [{"type": e.type, "reason": e.reason, "message": e.message} for e in plan.events]


def item_json(plan: ModelPlan) -> dict[str, Any]:
    return {
        "namespace": plan.namespace,
        "name": plan.name,
        "model": plan.model,
        "environment": plan.environment,
        "mode": plan.mode,
        "actions": [action.to_json() for action in plan.actions],
        "blockers": list(plan.blockers),
        "notes": list(plan.notes),
        "orphans": [
            {
                "deployment": v.name,
                "deploymentId": v.id,
                "scaleIn": v.scale_in,
                "delete": v.delete,
                "reason": v.reason,
            }
            for v in plan.orphans
        ],
        "source": plan.source,
        "analysis": plan.analysis,
        "status": plan.status,
        "events": _events(plan),
        "error": plan.error,
    }


def secret_item_json(plan: SecretPlan) -> dict[str, Any]:
    return {
        "namespace": plan.namespace,
        "name": plan.name,
        "secret": plan.secret,
        "team": plan.team,
        "mode": plan.mode,
        "actions": [action.to_json() for action in plan.actions],
        "blockers": list(plan.blockers),
        "notes": list(plan.notes),
        "status": plan.status,
        "events": _events(plan),
        "error": plan.error,
    }


def to_json(
    plans: Sequence[ModelPlan],
    notes: Sequence[str] = (),
    secrets: Sequence[SecretPlan] = (),
) -> str:
    """`notes`: what the whole plan must be read with (e.g. no namespace policy known)."""
    document = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "changes": has_changes([*plans, *secrets]),
        "notes": list(notes),
        "items": [item_json(plan) for plan in plans],
        "secrets": [secret_item_json(plan) for plan in secrets],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _block(plan: ModelPlan) -> list[str]:
    lines = [
        f"{plan.key}  model={plan.model or '?'}  environment={plan.environment or '?'}  "
        f"mode={plan.mode or '?'}"
    ]
    lines.extend(_outcome(plan))
    if plan.source is not None:
        exists = plan.source.get("exists")
        known = "" if exists is None else (" (exists)" if exists else " (not in Baseten yet)")
        lines.append(f"  source: {plan.source['deployment']}{known}")
    if plan.orphans:
        lines.append("  orphans:")
        lines.extend(f"    {v.name}: {v.reason}" for v in plan.orphans)
    if plan.analysis is not None:
        analysis = plan.analysis
        lines.append(
            f"  analysis: {analysis['phase']}, {analysis['checks']} checks, "
            f"{analysis['consecutiveFailures']} failed in a row"
        )
        lines.extend(f"    {r['verdict']}: {r['message']}" for r in analysis["results"])
    return lines


def _secret_block(plan: SecretPlan) -> list[str]:
    team = f"  team={plan.team}" if plan.team else ""
    header = (
        f"{plan.key}  BasetenSecret  secret={plan.secret or '?'}{team}  mode={plan.mode or '?'}"
    )
    return [header, *_outcome(plan)]


def _outcome(plan: ModelPlan | SecretPlan) -> list[str]:
    """A CR's actions, error, blockers and notes."""
    lines = []
    for number, action in enumerate(plan.actions, start=1):
        lines.append(f"  {number}. {action.describe()}")
    if plan.error:
        lines.append(f"  error: {plan.error}")
    for blocker in plan.blockers:
        lines.append(f"  blocked: {blocker}")
    if not plan.actions:
        why = "; ".join(plan.notes) if plan.notes else ""
        lines.append(f"  no actions: {why}" if why else "  no changes")
    else:
        lines.extend(f"  note: {note}" for note in plan.notes)
    return lines


def to_table(
    plans: Sequence[ModelPlan],
    notes: Sequence[str] = (),
    secrets: Sequence[SecretPlan] = (),
) -> str:
    lines = [f"note: {note}" for note in notes]
    if lines:
        lines.append("")
    if not plans and not secrets:
        return "\n".join([*lines, "no BasetenModels to plan"]) + "\n"
    for plan in plans:
        lines.extend(_block(plan))
        lines.append("")
    for secret in secrets:
        lines.extend(_secret_block(secret))
        lines.append("")
    parts = [_summary(plans, "BasetenModels")] if plans or not secrets else []
    if secrets:
        parts.append(_summary(secrets, "BasetenSecrets"))
    lines.append("Plan: " + "; ".join(parts) + ".")
    return "\n".join(lines) + "\n"


def _summary(plans: Sequence[ModelPlan | SecretPlan], kind: str) -> str:
    """`3 actions on 2 of 4 BasetenModels, 1 blocked`, or `no changes (4 BasetenModels)`."""
    changed = sum(1 for plan in plans if plan.actions)
    actions = sum(len(plan.actions) for plan in plans)
    blocked = sum(1 for plan in plans if plan.blockers)
    summary = (
        f"{actions} actions on {changed} of {len(plans)} {kind}"
        if actions
        else f"no changes ({len(plans)} {kind})"
    )
    return summary + (f", {blocked} blocked" if blocked else "")
