"""Every status message and event text of docs/contract.md, character for character.

Users grep these and Argo CD shows them: change one only together with docs/contract.md.
Event texts are the Go operator's (its `%q` quoting is `go_quote`), so alerts written for it
keep matching; status messages are this project's own (docs/contract.md section 10).
`ap` is the active prefix (`active_prefix`), empty when the environment has no current
deployment.
"""

from __future__ import annotations

from collections.abc import Sequence

from baseten_operator.api.constants import ACTIVE, SECRET_READER_CLUSTER_ROLE
from baseten_operator.baseten.models import AutoscalingSettingsV1, DeploymentV1
from baseten_operator.runtime.text import go_quote

PAUSED_MESSAGE = "reconciliation paused"
RETRIES_EXHAUSTED = " (retries exhausted)"
AWAITING = "awaiting reconciliation"
# Observe's drift entry for a schedule collection the spec manages but Baseten's answer
# for which did not decode.
SCHEDULES_UNREADABLE = "autoscaling schedules unreadable"


def replicas(deployment: DeploymentV1) -> str:
    """`{n} replicas`; a count Baseten did not send reads as unknown, never as 0."""
    count = deployment.active_replica_count
    return f"{count if count is not None else 'unknown'} replicas"


def active_prefix(current: DeploymentV1 | None) -> str:
    if current is None:
        return ""
    return f"active: {current.name} ({replicas(current)}) | "


def recorded_active_prefix(active_deployment_name: str | None) -> str:
    """Section 5's prefix, from the status alone (the environment is not read yet)."""
    return f"active: {active_deployment_name} | " if active_deployment_name else ""


def steady(
    current: DeploymentV1,
    env: str,
    autoscaling: AutoscalingSettingsV1 | None,
    schedule: str | None = None,
) -> str:
    """`schedule`: the autoscaling schedule whose window applies now (`autoscaling` is then
    what the window runs on)."""
    details = [replicas(current)]
    if autoscaling is not None:
        details.append(f"min:{autoscaling.min_replica or 0} max:{autoscaling.max_replica or 0}")
    if schedule is not None:
        details.append(f"schedule: {schedule}")
    if current.status != ACTIVE:
        details.append(current.status)
    return f"active: {current.name} ({', '.join(details)}) in {env} environment"


def changes_summary(changes: Sequence[object]) -> str:
    """One change spelled out, several counted."""
    return str(changes[0]) if len(changes) == 1 else f"{len(changes)} changes"


def with_steady(steady_message: str | None, text: str) -> str:
    return f"{steady_message} | {text}" if steady_message else text


# --- section 3: pause --------------------------------------------------------------------


def paused(previous_message: str | None) -> str:
    if not previous_message or previous_message.startswith(PAUSED_MESSAGE):
        return previous_message or PAUSED_MESSAGE
    return f"{PAUSED_MESSAGE} | last status: {previous_message}"


def paused_event(model_name: str) -> str:
    return f"Reconciliation paused for {model_name}"


# --- section 3.6: model ID ---------------------------------------------------------------


# A lookup that failed (timeout, 5xx, 4xx other than 404, connection error) says so: "not
# found" only after a definite 404 or an exact-name list that came back empty.


def model_check_failed(name: str, error: object) -> str:
    return f"unable to check model {name}: {error}"


def environment_check_failed(env: str, error: object) -> str:
    return f"unable to check environment {env}: {error}"


def deployment_check_failed(ap: str, name: str, error: object) -> str:
    return f"{ap}unable to check deployment {name}: {error}"


def model_not_found(name: str) -> str:
    return f"model '{name}' not found"


def model_not_found_event(name: str) -> str:
    return f"Model {go_quote(name)} not found"


def recreation_blocked(name: str, policy: str) -> str:
    return f'Baseten model "{name}" missing; deletionPolicy: {policy} blocks recreation'


def recreation_blocked_event(name: str, policy: str) -> str:
    return (
        f"{recreation_blocked(name, policy)}. Recreate the model in Baseten or set "
        "deletionPolicy: Retain to recover."
    )


def invalidating_model_id(model_id: str) -> str:
    return f"Invalidating cached model ID {model_id}, will re-resolve"


# --- section 3.8: environment ------------------------------------------------------------


def environment_create_failed(env: str, error: object) -> str:
    return f"Failed to create environment '{env}': {error}"


def environment_create_failed_event(env: str, error: object) -> str:
    return f"Failed to create environment {env}: {error}"


def environment_created_event(env: str) -> str:
    return f"Created environment {env} with autoscaling settings"


def environment_created(env: str) -> str:
    return f"Created environment {env}"


def updating_group_event(group: str, changes: Sequence[object]) -> str:
    return f"updating {group}: {changes_summary(changes)}"


def updating_settings(steady_message: str | None, changes: Sequence[object]) -> str:
    return with_steady(steady_message, f"updating settings: {changes_summary(changes)}")


def update_group_failed_event(group: str, env: str, error: object) -> str:
    return f"Failed to update {group} for {env}: {error}"


def update_settings_failed(steady_message: str | None, env: str, error: object) -> str:
    return with_steady(steady_message, f"failed to update settings for {env}: {error}")


def update_schedules_failed(steady_message: str | None, env: str, error: object) -> str:
    """A failed PATCH that carried only the autoscaling schedules."""
    return with_steady(steady_message, f"failed to update autoscaling schedules for {env}: {error}")


def schedules_unreadable(env: str, error: object) -> str:
    return f"failed to read autoscaling schedules for {env}: {error}"


def schedules_unreadable_event(env: str, error: object) -> str:
    return f"Failed to read autoscaling schedules for {env}: {error}"


# --- section 3.10: current deployment ----------------------------------------------------


def reactivating(name: str, env: str) -> str:
    return f"reactivating inactive deployment {name} in {env} environment"


def reactivated_event(name: str, env: str) -> str:
    return f"Reactivating inactive deployment {name} in {env} environment"


def reactivate_failed(name: str, env: str, error: object) -> str:
    return f"failed to reactivate deployment {name} in {env} environment: {error}"


def deployment_active_event(name: str, env: str) -> str:
    return f"Deployment {name} is now active in {env}"


# --- section 3.8: cancelling a promotion the spec no longer wants ------------------------


def cancelling_promotion(ap: str, candidate: str, env: str, source: str) -> str:
    return f"{ap}cancelling promotion of {candidate} to {env}: the spec now asks for {source}"


def cancel_ramping_down(ap: str, candidate: str, env: str, source: str, traffic: int | None) -> str:
    """`traffic`: the share of requests the candidate still gets, when Baseten says."""
    share = f" ({traffic}% traffic)" if traffic is not None else ""
    return (
        f"{ap}promotion of {candidate} to {env} cancelled, ramping down{share}; "
        f"the spec now asks for {source}"
    )


def promotion_cancelled_event(candidate: str, env: str, source: str) -> str:
    return f"Cancelled promotion of {candidate} to {env}: the spec now asks for {source}"


def cancel_pending(ap: str, candidate: str, env: str, source: str, phase: str | None) -> str:
    return (
        f"{ap}promotion of {candidate} to {env} cancelled, waiting for Baseten to stop it "
        f"(phase {phase or 'unknown'}); the spec now asks for {source}"
    )


def cancel_failed(ap: str, candidate: str, env: str, error: object) -> str:
    return f"{ap}failed to cancel promotion of {candidate} to {env}: {error}"


def cancel_failed_event(candidate: str, env: str, error: object) -> str:
    return f"Failed to cancel promotion of {candidate} to {env}: {error}"


def cancel_too_late_event(candidate: str, env: str, source: str) -> str:
    return (
        f"Promotion of {candidate} to {env} completed before its cancellation landed; "
        f"promoting {source}"
    )


def would_cancel(candidate: str) -> str:
    """Observe's drift entry for a promotion Reconcile would cancel."""
    return f"would cancel the promotion of {candidate}"


# --- sections 3.11 and 3.12: candidate and double-promote guard --------------------------


def promoting_candidate(ap: str, candidate: DeploymentV1, traffic: int | None = None) -> str:
    """`traffic`: the percentage of requests the ramping promotion sends it, when known."""
    details = [candidate.status, replicas(candidate)]
    if traffic is not None:
        details.append(f"{traffic}% traffic")
    return f"{ap}promoting: {candidate.name} ({', '.join(details)})"


def candidate_failed(ap: str, name: str, status: str) -> str:
    return f"{ap}candidate {name} failed: {status}"


def candidate_failed_event(name: str, status: str, *, exhausted: bool) -> str:
    text = f"Candidate deployment {name} failed with status {status}"
    return f"{text}{RETRIES_EXHAUSTED}" if exhausted else text


def candidate_exhausted(ap: str, name: str, status: str, deadline: str) -> str:
    return f"{candidate_failed(ap, name, status)} (retries exhausted after {deadline})"


def blocked_by_candidate(
    ap: str, candidate: DeploymentV1, source: str, traffic: int | None = None
) -> str:
    return (
        f"{promoting_candidate(ap, candidate, traffic)} — waiting for completion before "
        f"promoting {source}"
    )


def blocked_by_recorded_candidate(ap: str, candidate: str, status: str) -> str:
    return (
        f"{ap}waiting for existing promotion to complete "
        f"(candidate: {candidate}, status: {status})"
    )


def promotion_blocked_event(candidate: str) -> str:
    return f"Waiting for existing promotion to complete (candidate: {candidate})"


# --- section 3.13: source validation -----------------------------------------------------


def promotion_data_unknown(ap: str, env: str, missing: str) -> str:
    return (
        f"{ap}unable to promote: current deployment of environment {env} unknown "
        f"(Baseten answered without {missing})"
    )


def source_not_found(ap: str, source: str) -> str:
    return f"{ap}unable to promote: source deployment {source} not found"


def source_not_found_event(source: str, model: str) -> str:
    return f"Source deployment {go_quote(source)} not found for model {go_quote(model)}"


def source_failing(ap: str, source: str, status: str) -> str:
    return f"{ap}unable to promote: source deployment {source} is {status}"


def source_exhausted(ap: str, source: str, status: str, deadline: str) -> str:
    return f"{source_failing(ap, source, status)} (retries exhausted after {deadline})"


def source_failed_event(source: str, status: str) -> str:
    return f"Source deployment {go_quote(source)} is in {status} state{RETRIES_EXHAUSTED}"


def waiting_for_source(ap: str, source: str, status: str) -> str:
    return f"{ap}waiting to promote: source deployment {source} is {status}"


def waiting_for_source_status(ap: str, source: str, status: str) -> str:
    return f"{ap}waiting to promote: source deployment {source} has status {status}"


def source_activate_failed(ap: str, source: str, error: object) -> str:
    return f"{ap}unable to promote: failed to activate source deployment {source}: {error}"


# --- section 3.14: promote ---------------------------------------------------------------


def promoting_source(ap: str, source: str, env: str) -> str:
    return f"{ap}promoting {source} to {env}"


def promotion_failed(ap: str, source: str, env: str, error: object) -> str:
    return f"{ap}promotion of '{source}' to {env} failed: {error}"


def promotion_failed_event(source: str, env: str, error: object) -> str:
    return f"Failed to promote {source} to {env}: {error}"


def promoted_event(source: str, env: str) -> str:
    return f"Promoted {source} to {env} environment"


def promoted(ap: str, source: str, env: str, status: str) -> str:
    return f"{ap}promoted {source} to {env} ({status})"


# --- section 4: retries ------------------------------------------------------------------


def retry_exhausted_event(name: str, deadline: str) -> str:
    return f"Deployment {name} has been failing for over {deadline}, giving up retries"


def retry_failed_event(name: str, error: object) -> str:
    return f"Failed to retry deployment {name}: {error}"


def retry_declined_event(name: str, reason: str | None) -> str:
    return f"Retry declined for deployment {name}: {reason}"


def retried_event(name: str, status: str, attempt: int) -> str:
    return f"Retried deployment {name} (was {status}, attempt {attempt})"


def retrying(name: str, status: str, attempt: int) -> str:
    return f"retrying deployment {name} (was {status}, attempt {attempt})"


# --- section 5: truss push ---------------------------------------------------------------


def configmap_not_found(name: str) -> str:
    return f"ConfigMap '{name}' not found"


def configmap_not_found_event(name: str) -> str:
    """The Go operator's text: its error wraps the API server's NotFound."""
    return f"{configmap_not_found(name)}: configmaps {go_quote(name)} not found"


def configmap_key_not_found(key: str, name: str) -> str:
    return f"key '{key}' not found in ConfigMap '{name}'"


def configmap_key_not_text(key: str, name: str) -> str:
    return f"key '{key}' of ConfigMap '{name}' is not UTF-8 text"


def push_preparation_failed(ap: str, detail: str) -> str:
    """A push that cannot start: setup script missing, or a config truss would refuse."""
    return f"{ap}truss push failed: {detail}"


def push_preparation_failed_event(name: str, detail: str) -> str:
    return f"Failed to prepare truss push for '{name}': {detail}"


def push_in_progress(ap: str, name: str) -> str:
    return f"{ap}truss push in progress for {name}"


def push_interrupted_event(name: str) -> str:
    return (
        f"Truss push for '{name}' is on record but runs nowhere "
        "(the replica that started it stopped), retrying"
    )


def waiting_for_push_capacity(ap: str, name: str) -> str:
    return f"{ap}waiting for push capacity for {name}"


WAITING_FOR_SECRETS = "waiting for secrets: "


def waiting_for_secrets(ap: str, names: Sequence[str]) -> str:
    """`names` sorted, comma-separated (the caller sorts them)."""
    return f"{ap}{WAITING_FOR_SECRETS}{', '.join(names)}"


def secrets_check_failed(ap: str, name: str, error: object) -> str:
    return f"{ap}unable to check the Baseten secrets {name} needs: {error}"


def push_started_event(model: str, name: str, *, creates_model: bool) -> str:
    if creates_model:
        return f"Creating model '{model}' and deployment '{name}' via truss push"
    return f"Creating deployment '{name}' via truss push"


def push_started(ap: str, name: str) -> str:
    return f"{ap}truss push started for {name}"


def push_completed_event(name: str) -> str:
    return f"Deployment '{name}' created successfully via truss push"


def push_failed(ap: str, name: str, attempt: int, last_error: str, next_retry: str) -> str:
    """Backing off after failed push `attempt` (the Go operator's message)."""
    return (
        f"{ap}truss push failed for {name} (attempt {attempt}): {last_error}; "
        f"next retry at {next_retry}"
    )


def push_failed_event(name: str, attempt: int, backoff: str, error: object) -> str:
    return f"Truss push for '{name}' failed (attempt {attempt}), retrying in {backoff}: {error}"


# --- section 6: observe ------------------------------------------------------------------


def observe_model_not_found(name: str) -> str:
    return f'model "{name}" not found in Baseten; observe mode does not create'


def observe_source_failed(error: object) -> str:
    return f"failed to compute expected source deployment name: {error}"


def observe_environment_missing(env: str) -> str:
    return f'environment "{env}" does not exist; observe mode does not create'


def observe_drift(steady_message: str, drift_texts: Sequence[str]) -> str:
    return f"{steady_message} | drift: {', '.join(drift_texts)}; {AWAITING}"


def observe_failing(steady_message: str) -> str:
    return f"{steady_message}; {AWAITING}"


def observe_not_promoted(current: DeploymentV1 | None, source: str) -> str:
    state = (
        f"active: {current.name} ({replicas(current)})"
        if current is not None
        else "no active deployment"
    )
    return f"{state} | spec source: {source} (not yet promoted; {AWAITING})"


# --- section 7: deletion -----------------------------------------------------------------


def delete_list_failed(model_id: str, error: object) -> str:
    return f"deletion blocked: failed to list environments for model {model_id}: {error}"


def delete_replicas_unknown(env: str, missing: str) -> str:
    return (
        f"deletion blocked: replica counts of environment {env} unknown "
        f"(Baseten answered without {missing})"
    )


def delete_no_environments_listed(model_id: str, who: str, deployment: str, env: str) -> str:
    return (
        f"deletion blocked: Baseten listed no environments for model {model_id}, but {who} "
        f"records deployment {deployment} in environment {env}"
    )


def delete_blocked(blockers: Sequence[tuple[str, int, int]]) -> str:
    listed = ", ".join(
        f"{env} (min={minimum}, active={active})" for env, minimum, active in blockers
    )
    return (
        f"deletion blocked: {listed} must be scaled to min_replicas: 0 and idle before model "
        "can be deleted"
    )


def deleting(model_id: str) -> str:
    return f"deleting Baseten model {model_id}"


def model_deleted_event(model_id: str) -> str:
    return f"Deleted Baseten model {model_id}"


def model_already_deleted_event(model_id: str) -> str:
    return f"Baseten model {model_id} already deleted (404)"


def delete_failed_event(model_id: str, error: object) -> str:
    return f"Failed to delete Baseten model {model_id}: {error}"


def delete_failed(model_id: str, error: object) -> str:
    return f"failed to delete Baseten model {model_id}: {error}"


# --- section 8: orphans ------------------------------------------------------------------


def orphans_scaled_in_event(names: Sequence[str]) -> str:
    return f"Scaled in {len(names)} orphan deployments: {', '.join(names)}"


def orphans_deleted_event(names: Sequence[str]) -> str:
    return f"Deleted {len(names)} stale orphan deployments: {', '.join(names)}"


def orphan_cleanup_skipped(steady_message: str, why: str) -> str:
    """The steady message of a pass whose cleanup was due but could not decide safely."""
    return f"{steady_message} | orphan cleanup skipped: {why}"


def orphan_cleanup_environment_unknown(env: str, member: str) -> str:
    return f"what environment {env} serves is unknown (Baseten answered without {member})"


# --- tenancy: one owner per environment, no deletion of a shared model -----------------


def environment_conflict(env: str, model: str, owner: str) -> str:
    return f"environment {env} of model '{model}' is managed by {owner}"


def delete_shared(model: str, other: str, env: str) -> str:
    return f"deletion blocked: model '{model}' is still managed by {other} ({env} environment)"


# --- section 14: progressive delivery ----------------------------------------------------

HOLD_REASON = "spec.promotion.hold"
NO_CHECK_YET = "no check yet"
NO_QUERY_RESULT = "the query has no result"
PROMETHEUS_UNAVAILABLE = "Prometheus cannot be queried from here"
_VERBS = {"Pause": "pause", "Resume": "resume", "Rollback": "roll back"}


def number(value: float | None, unit: str = "") -> str:
    """A measured value or a limit as messages show it: `30.12%`, `2500ms`, `0.07`."""
    if value is None:
        return "no data"
    text = f"{value:.4g}" if abs(value) < 10_000 else f"{value:.0f}"
    return f"{text}{unit}"


def traffic(percent: int | None) -> str:
    return f"{percent}% traffic" if percent is not None else "unknown traffic"


def metrics_unreadable(error: object) -> str:
    return f"the candidate's metrics could not be read: {error}"


def too_few_requests(requests: float, minimum: int) -> str:
    return f"{requests:g} requests in the window, fewer than minRequests {minimum}"


def no_latency(quantile: str) -> str:
    return f"no {quantile} latency in the window"


def check_secret_forbidden(where: str) -> str:
    return (
        f"cannot read Secret {where}: bind ClusterRole {SECRET_READER_CLUSTER_ROLE} to the "
        "operator's ServiceAccount in its namespace"
    )


def check_secret_missing(where: str) -> str:
    return f"Secret {where} not found"


def check_secret_key_missing(where: str, key: str) -> str:
    return f"Secret {where} has no non-empty key '{key}'"


def with_analysis(promoting: str, summary: str) -> str:
    return f"{promoting}; analysis: {summary}"


def check_passed_summary(checks: int) -> str:
    return f"check {checks} passed"


def check_failed_summary(checks: int, failures: int, described: str) -> str:
    return f"check {checks} failed ({failures} in a row): {described}"


def check_inconclusive_summary(checks: int, described: str) -> str:
    return f"check {checks}: {described}"


def check_failed_event(
    candidate: str, checks: int, described: str, failures: int, limit: int
) -> str:
    return (
        f"Analysis check {checks} of {candidate} failed ({failures} of {limit} in a row): "
        f"{described}"
    )


def failure_reason(described: str, failures: int) -> str:
    return f"{described} in {failures} consecutive checks"


def rolled_back(candidate: str, reason: str) -> str:
    return f"rolled back {candidate}: {reason}"


def rolled_back_event(candidate: str, env: str, reason: str) -> str:
    return f"Rolled back promotion of {candidate} to {env}: {reason}"


def failure_paused(ap: str, candidate: str, percent: int | None, reason: str) -> str:
    return f"{ap}analysis failed, promotion of {candidate} paused at {traffic(percent)}: {reason}"


def held(ap: str, candidate: str, percent: int | None) -> str:
    return f"{ap}promotion of {candidate} held at {traffic(percent)} ({HOLD_REASON})"


def held_event(candidate: str, env: str, percent: int | None, reason: str) -> str:
    return f"Held promotion of {candidate} to {env} at {traffic(percent)}: {reason}"


def resumed_event(candidate: str, env: str, percent: int | None) -> str:
    return f"Resumed promotion of {candidate} to {env} at {traffic(percent)}"


def gate_holding(ap: str, candidate: str, percent: int | None, summary: str) -> str:
    return (
        f"{ap}holding {candidate} at {traffic(percent)} until a check passes; analysis: {summary}"
    )


def signal_failed(ap: str, action: str, candidate: str, env: str, error: object) -> str:
    return f"{ap}failed to {_VERBS[action]} promotion of {candidate} to {env}: {error}"


def analysis_passed_event(candidate: str, env: str, checks: int) -> str:
    return f"Analysis of {candidate} passed: promoted to {env} after {checks} checks"


def would_act(message: str, action: str, candidate: str, reason: str) -> str:
    return f"{message}; would {action} {candidate}: {reason}"
