"""Orphan deployment cleanup (docs/contract.md section 8): Reconcile mode, steady state only."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import ValidationError

from baseten_operator.api.constants import INACTIVE, TERMINAL_FAILURES, EventReason
from baseten_operator.api.types import OrphanDeploymentCleanup, TrussConfig
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import DeploymentV1, EnvironmentV1
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.basetenmodel.source import matches_source
from baseten_operator.controller.basetenmodel.telemetry import (
    count_orphans,
    record_orphans_holding_replicas,
)
from baseten_operator.controller.basetenmodel.truss_source import SetupScriptError, truss_source_for
from baseten_operator.runtime.clock import parse_rfc3339

log = structlog.get_logger(__name__)

_DELETABLE = TERMINAL_FAILURES | {INACTIVE}


def cleanup_due(p: Pass) -> bool:
    cleanup = p.spec.orphan_deployment_cleanup
    if cleanup is None or cleanup.interval_minutes is None:
        return False
    if not (cleanup.scale_to_zero or cleanup.delete):
        return False
    last = parse_rfc3339(p.status.last_cleanup_time)
    interval = cleanup.interval_minutes * p.deps.timing.minute
    return last is None or p.deps.clock.now() - last >= interval


def clean_up_orphans(p: Pass, model_id: str, source: str) -> str | None:
    """Run the cleanup when it is due; why it was skipped, for the steady message (None:
    it ran, was not due, or its listing failed and is retried on the next pass)."""
    if not cleanup_due(p):
        return None
    review = review_model_orphans(p, model_id, source)
    if review is None:
        return None
    if review.skipped is not None:
        return review.skipped
    scaled_in = _scale_in(p, model_id, review.to_scale_in)
    deleted = _delete(p, model_id, review.to_delete)
    if scaled_in:
        p.event(
            EventReason.ORPHAN_DEPLOYMENTS_SCALED_IN, messages.orphans_scaled_in_event(scaled_in)
        )
    if deleted:
        p.event(EventReason.ORPHAN_DEPLOYMENTS_DELETED, messages.orphans_deleted_event(deleted))
    count_orphans(len(scaled_in), len(deleted))
    gone = set(scaled_in) | set(deleted)
    holding = [o for o in review.orphans if o.name not in gone and _holds_replicas(o)]
    record_orphans_holding_replicas(p.namespace, p.name, p.spec.model_name, len(holding))
    p.record_cleanup()
    return None


def review_model_orphans(p: Pass, model_id: str, source: str) -> OrphanReview | None:
    """The verdicts of this pass's cleanup, read from Baseten; None when listing failed.

    When an answer leaves out what the verdicts rest on, nothing is an orphan: the review
    is empty and says why it was skipped.
    """
    cleanup = p.spec.orphan_deployment_cleanup
    assert cleanup is not None
    baseten = p.deps.baseten
    try:
        deployments: list[DeploymentV1] = baseten.list_deployments(model_id)
        environments: list[EnvironmentV1] = baseten.list_environments(model_id)
    except BasetenAPIError as error:
        log.warning(
            "orphan cleanup: listing failed, retrying next pass", key=p.key, error=str(error)
        )
        return None

    unknown = unknown_environment_member(environments)
    if unknown is not None:
        # Which deployments serve is uncertain: nothing is an orphan this pass.
        log.warning(
            "orphan cleanup skipped: Baseten answered an environment without the member "
            "that says what it serves",
            key=p.key,
            environment=unknown[0],
            missing=unknown[1],
        )
        return OrphanReview.skipped_because(messages.orphan_cleanup_environment_unknown(*unknown))

    protected = protected_sources(p, source)
    now = p.deps.clock.now()
    return review_orphans(deployments, environments, protected, cleanup, now, p.deps.timing.day)


def protected_sources(p: Pass, source: str) -> set[str]:
    """This CR's source and every sibling CR's for the same model: a sibling's next
    promotion must never be scaled in under it."""
    sources = {source}
    for sibling in p.deps.siblings(p.spec.model_name):
        meta = sibling.get("metadata", {})
        if (meta.get("namespace"), meta.get("name")) == (p.namespace, p.name):
            continue
        status_source = (sibling.get("status") or {}).get("sourceDeploymentName")
        spec_source = _sibling_spec_source(p, meta.get("namespace") or "", sibling)
        sources.update(s for s in (spec_source, status_source) if s)
    return sources


def _sibling_spec_source(p: Pass, namespace: str, sibling: dict[str, Any]) -> str | None:
    """The source a sibling's spec asks for; for a trussConfig, the name its push would have.

    A sibling in Observe or Pause, or one not reconciled yet, has no source in its status:
    its spec is the only place that says which deployment it is about to promote.
    """
    spec = sibling.get("spec") or {}
    if spec.get("sourceDeploymentName"):
        return str(spec["sourceDeploymentName"])
    try:
        truss_config = TrussConfig.model_validate(spec.get("trussConfig"))
        return truss_source_for(p.deps.configmaps, namespace, truss_config).name
    except (ValidationError, SetupScriptError):
        return None  # an unreadable sibling protects what its status names


def _holds_replicas(deployment: DeploymentV1) -> bool:
    settings = deployment.autoscaling_settings
    return bool(deployment.active_replica_count) or bool(settings and settings.min_replica)


def _is_variant(deployment: DeploymentV1, protected: Iterable[str]) -> bool:
    return any(matches_source(deployment.name, source) for source in protected)


def unknown_environment_member(environments: list[EnvironmentV1]) -> tuple[str, str] | None:
    """(environment, member) when an environment's answer leaves out `current_deployment`,
    without which nobody can tell what it serves. (A missing `candidate_deployment` is
    documented to mean none.)"""
    for env in environments:
        if not env.stated("current_deployment"):
            return env.name, "current_deployment"
    return None


def _explicitly_unattached(deployment: DeploymentV1) -> bool:
    """Baseten said so: `environment` is null and both flags are false, not merely absent."""
    return (
        deployment.stated("environment")
        and deployment.environment is None
        and deployment.is_production is False
        and deployment.is_development is False
    )


def find_orphans(
    deployments: list[DeploymentV1], environments: list[EnvironmentV1], protected: set[str]
) -> list[DeploymentV1]:
    """Deployments Baseten explicitly reports unattached and no environment lists as its
    current or candidate; a same-source variant still alive is kept for a rollback."""
    in_use = {
        deployment.id
        for env in environments
        for deployment in (env.current_deployment, env.candidate_deployment)
        if deployment is not None
    }

    def still_useful_variant(deployment: DeploymentV1) -> bool:
        alive = deployment.status != INACTIVE and deployment.status not in TERMINAL_FAILURES
        return _is_variant(deployment, protected) and alive

    return [
        deployment
        for deployment in deployments
        if deployment.id not in in_use
        and _explicitly_unattached(deployment)
        and not still_useful_variant(deployment)
    ]


@dataclass(frozen=True)
class OrphanVerdict:
    """What cleanup does to one deployment that serves no environment, and why."""

    name: str
    id: str
    scale_in: bool
    delete: bool
    reason: str


@dataclass(frozen=True)
class OrphanReview:
    verdicts: list[OrphanVerdict]  # every orphan, in Baseten's listing order
    orphans: list[DeploymentV1]
    to_scale_in: list[DeploymentV1]
    to_delete: list[DeploymentV1]  # in deletion order
    # Why no deployment could be judged this pass (fail closed); None when it was reviewed.
    skipped: str | None = None

    @classmethod
    def skipped_because(cls, why: str) -> OrphanReview:
        return cls([], [], [], [], skipped=why)


def review_orphans(
    deployments: list[DeploymentV1],
    environments: list[EnvironmentV1],
    protected: set[str],
    cleanup: OrphanDeploymentCleanup,
    now: float,
    day: float,
) -> OrphanReview:
    """Section 8's verdicts, pure: the cleanup acts on them and `plan` prints them."""
    orphans = find_orphans(deployments, environments, protected)
    to_scale_in = [o for o in orphans if cleanup.scale_to_zero and _min_replica(o)]
    delete_reasons = _delete_verdicts(orphans, protected, cleanup, now, day)
    to_delete = [o for o, reason in delete_reasons if reason is None]
    reasons = {o.id: reason for o, reason in delete_reasons}
    verdicts = []
    for orphan in orphans:
        scale_in = orphan in to_scale_in
        kept = reasons.get(orphan.id, "deletion is off")
        deleted = orphan.id in reasons and kept is None
        parts = [f"scale in (minReplicas {_min_replica(orphan)}→0)"] if scale_in else []
        parts.append("delete: stale" if deleted else f"kept: {kept}")
        verdicts.append(OrphanVerdict(orphan.name, orphan.id, scale_in, deleted, "; ".join(parts)))
    return OrphanReview(verdicts, orphans, to_scale_in, to_delete)


def _min_replica(deployment: DeploymentV1) -> int:
    settings = deployment.autoscaling_settings
    return (settings.min_replica or 0) if settings else 0


def _created(deployment: DeploymentV1) -> float:
    return deployment.created_at.timestamp() if deployment.created_at else float("-inf")


def _delete_verdicts(
    orphans: list[DeploymentV1],
    protected: set[str],
    cleanup: OrphanDeploymentCleanup,
    now: float,
    day: float,
) -> list[tuple[DeploymentV1, str | None]]:
    """Each orphan with why it is kept (None: deleted), deletions in the order they run."""
    if not cleanup.delete or cleanup.delete_after_days is None or cleanup.min_to_keep is None:
        return []
    newest_first = sorted(orphans, key=_created, reverse=True)
    newest: str | None = f"among the {cleanup.min_to_keep} newest (minToKeep)"
    candidates = sorted(newest_first[cleanup.min_to_keep :], key=_created)
    # Unrelated leftovers go before same-source variants (a rollback is likelier to want those).
    ordered = [d for d in candidates if not _is_variant(d, protected)] + [
        d for d in candidates if _is_variant(d, protected)
    ]
    max_age = cleanup.delete_after_days * day
    verdicts = [(o, newest) for o in newest_first[: cleanup.min_to_keep]]
    for orphan in ordered:
        reason: str | None = None
        if orphan.status not in _DELETABLE:
            reason = f"status {orphan.status} is not deletable"
        elif orphan.created_at is None:
            reason = "no creation time"
        elif now - orphan.created_at.timestamp() <= max_age:
            reason = f"not older than {cleanup.delete_after_days} days (deleteAfterDays)"
        verdicts.append((orphan, reason))
    return verdicts


def _scale_in(p: Pass, model_id: str, orphans: list[DeploymentV1]) -> list[str]:
    scaled = []
    for orphan in orphans:
        try:
            p.deps.baseten.update_deployment_autoscaling(model_id, orphan.id, {"min_replica": 0})
        except BasetenAPIError as error:
            log.warning(
                "orphan scale-in failed", key=p.key, deployment=orphan.name, error=str(error)
            )
            continue
        scaled.append(orphan.name)
    return scaled


def _delete(p: Pass, model_id: str, orphans: list[DeploymentV1]) -> list[str]:
    deleted = []
    for orphan in orphans:
        try:
            p.deps.baseten.delete_deployment(model_id, orphan.id)
        except BasetenAPIError as error:
            log.warning("orphan delete failed", key=p.key, deployment=orphan.name, error=str(error))
            continue
        deleted.append(orphan.name)
    return deleted
