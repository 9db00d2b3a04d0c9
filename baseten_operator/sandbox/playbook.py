"""The ready-made commands the interactive sandbox prints: kubectl and curl, copy-paste ready.

Each play is one story from the README (drift, a failed build, a bad rollout reverted, a bad
model caught by the analysis, a TTL deactivation, pause, observe, a Secret rotated, a guarded
deletion) told with the tools a person has: kubectl against the sandbox's API server, curl
against the Baseten simulator's `/_sim/` control API (and its Baseten API).
"""

from __future__ import annotations

import json
import math
import shlex
import shutil
import sys
from dataclasses import dataclass
from typing import Any

from baseten_operator.api.types import PromotionSettings
from baseten_operator.sandbox.seed import (
    BAD_DEPLOYMENT,
    BAD_MODEL_DEPLOYMENT,
    BAD_MODEL_TRAFFIC,
    CI_DEPLOYMENT,
    HF_SECRET,
    HF_SECRET_KEY,
    NEXT_CI_DEPLOYMENT,
    PRODUCTION,
    SANDBOX_API_KEY,
)

COMMAND_PREFIX = "  $ "
PRODUCTION_CR = "my-llm-model-production"
STAGING_CR = "my-llm-model-staging"
GUARDED_CR = "my-vllm-model-production"
# The sample BasetenSecret (config/samples) and the Baseten secret it writes.
BASETEN_SECRET_CR = "hf-access-token"
BASETEN_SECRET_NAME = "hf_access_token"
# Click-ops values: what "someone in the Baseten UI" sets; the samples ask for 2.
DRIFT_MIN_REPLICAS = 5
DESIRED_MIN_REPLICAS = 2


@dataclass(frozen=True)
class PlaybookIds:
    llm_model_id: str
    vllm_model_id: str
    staging_deployment_id: str
    bad_model_deployment_id: str


@dataclass(frozen=True)
class Play:
    title: str
    note: str
    commands: tuple[str, ...]


def sim_call(sim_url: str, operation: str, arguments: dict[str, Any]) -> str:
    """A curl POST to the simulator's control API that fails loudly on an HTTP error."""
    body = json.dumps(arguments, separators=(",", ":"))
    return (
        f"curl -sS --fail-with-body -X POST {sim_url}/_sim/{operation} "
        f"-H 'Content-Type: application/json' -d {shlex.quote(body)}"
    )


def patch_spec(name: str, spec: dict[str, Any]) -> str:
    """kubectl's merge patch of a BasetenModel's spec (a null removes a field)."""
    patch = json.dumps({"spec": spec}, separators=(",", ":"))
    return f"kubectl patch bm {name} --type merge -p {shlex.quote(patch)}"


def set_mode(name: str, mode: str) -> str:
    return patch_spec(name, {"mode": mode})


def ui_min_replicas(sim_url: str, model_id: str, minimum: int) -> str:
    return sim_call(
        sim_url,
        "ui_update_environment",
        {"model_id": model_id, "env": PRODUCTION, "autoscaling_settings": {"min_replica": minimum}},
    )


def set_source(name: str, source: str) -> str:
    return patch_spec(name, {"sourceDeploymentName": source})


# Production ramps a new version's traffic up in ten stages over 50 simulated minutes: a
# minute at the sandbox's time scale, time enough to revert while it ramps. Set in Baseten's
# UI (RAMPING_PROMOTIONS) or by the spec (RAMPING_PROMOTION_SETTINGS: an analysis needs the
# steps said there).
RAMP_SECONDS = 3000
_RAMPING = PromotionSettings(
    rolling_deploy=True, ramp_up_while_promoting=True, ramp_up_duration_seconds=RAMP_SECONDS
)
RAMPING_PROMOTIONS = _RAMPING.model_dump(exclude_none=True)
RAMPING_PROMOTION_SETTINGS = _RAMPING.model_dump(by_alias=True, exclude_none=True)

# What catches the bad model: its 5xx share checked every 30s (the shortest interval), two
# failed checks in a row roll it back. 20 requests, a third of what the first ramp stage
# brings a window (seed.py), make a check conclusive.
BAD_MODEL_INTERVAL = 30
BAD_MODEL_MAX_ERRORS = 2
BAD_MODEL_FAILURE_LIMIT = 2
BAD_MODEL_ANALYSIS = {
    "mode": "Guard",
    "interval": f"{BAD_MODEL_INTERVAL}s",
    "failureLimit": BAD_MODEL_FAILURE_LIMIT,
    "minRequests": 20,
    "metrics": [{"name": "errors", "errorRatio": {"maxPercent": BAD_MODEL_MAX_ERRORS}}],
}


def analysed(source: str) -> dict[str, Any]:
    """The spec that promotes `source` in ramp stages, judged by BAD_MODEL_ANALYSIS."""
    return {
        "sourceDeploymentName": source,
        "environment": {"promotionSettings": RAMPING_PROMOTION_SETTINGS},
        "promotion": {"analysis": BAD_MODEL_ANALYSIS},
    }


def unanalysed(source: str) -> dict[str, Any]:
    """Back to `source` as the samples ask for it: no analysis, no promotion settings (the
    ramp stays in Baseten, as the UI's does: the spec stops watching it)."""
    return {
        "sourceDeploymentName": source,
        "environment": {"promotionSettings": None},
        "promotion": None,
    }


def rollback_timeout(time_scale: float) -> int:
    """Real seconds to wait for the rollback: an earlier promotion's ramp cancelled at its
    height steps all the way down first, then two checks and a few operator passes."""
    simulated = RAMP_SECONDS + 10 * BAD_MODEL_INTERVAL
    return math.ceil(30 + simulated * time_scale)


def baseten_get(sim_url: str, api_key: str, path: str) -> str:
    """A curl GET of Baseten's own API (the simulator's), as the operator reads it."""
    return (
        f"curl -sS --fail-with-body -H {shlex.quote(f'Authorization: Api-Key {api_key}')} "
        f"{sim_url}/v1{path}"
    )


def operator_program() -> str:
    """`baseten-operator` when it is on PATH, else this interpreter running the same CLI."""
    if shutil.which("baseten-operator"):
        return "baseten-operator"
    return f"{shlex.quote(sys.executable)} -m baseten_operator.cli"


def plan_command(kubeconfig: str, sim_url: str, api_key: str, time_scale: float) -> str:
    """`baseten-operator plan` on the sandbox's cluster and simulator (a read is all it does)."""
    return (
        f"BASETEN_API_KEY={shlex.quote(api_key)} BASETEN_API_BASE_URL={sim_url}/v1 "
        f"{operator_program()} plan --cluster --kubeconfig {shlex.quote(kubeconfig)} "
        f"-n default --time-scale {time_scale:g}"
    )


def build_playbook(
    kubeconfig: str,
    sim_url: str,
    ids: PlaybookIds,
    *,
    api_key: str = SANDBOX_API_KEY,
    time_scale: float = 1.0,
) -> list[Play]:
    drift = ui_min_replicas(sim_url, ids.llm_model_id, DRIFT_MIN_REPLICAS)
    message = f"kubectl get bm {PRODUCTION_CR} -o jsonpath='{{.status.message}}'"
    return [
        Play(
            "Look around with kubectl",
            "`kubectl get bm -w` runs until Ctrl-C; the audit log lists every Baseten write.",
            (
                f"export KUBECONFIG={shlex.quote(kubeconfig)}",
                "kubectl get bm -o wide",
                f"kubectl describe bm {PRODUCTION_CR}",
                "kubectl get events",
                "kubectl get bm -w",
                f"curl -sS --fail-with-body {sim_url}/_sim/audit_log",
            ),
        ),
        Play(
            "Click-ops drift",
            f"Someone sets minReplicas {DRIFT_MIN_REPLICAS} in the Baseten UI; on its next pass "
            f"the operator puts {DESIRED_MIN_REPLICAS} back, and its DriftCorrected event names "
            "who did it, read from Baseten's audit log.",
            (drift, "kubectl get events --field-selector reason=DriftCorrected"),
        ),
        Play(
            "Preview with plan",
            "What the operator's next pass would do to each sample, and why; it only reads "
            "(drift again, then plan: an update-environment action, minReplicas "
            f"{DRIFT_MIN_REPLICAS}→{DESIRED_MIN_REPLICAS}, unless the operator was faster).",
            (drift, plan_command(kubeconfig, sim_url, api_key, time_scale)),
        ),
        Play(
            "A failed build",
            f"CI's next build {NEXT_CI_DEPLOYMENT} failed; point production at it and the "
            "operator says why (DeploymentFailed, with the build's error lines, and "
            "status.lastFailure), retries it (DeploymentRetried), then promotes it.",
            (
                sim_call(
                    sim_url,
                    "seed_deployment",
                    {
                        "model_id": ids.llm_model_id,
                        "name": NEXT_CI_DEPLOYMENT,
                        "status": "BUILD_FAILED",
                    },
                ),
                set_source(PRODUCTION_CR, NEXT_CI_DEPLOYMENT),
            ),
        ),
        Play(
            "A bad rollout, revert",
            f"Production ramps new versions up in stages; {BAD_DEPLOYMENT} misbehaves while it "
            f"ramps, and the commit is reverted to {CI_DEPLOYMENT}. The operator cancels its "
            "own promotion (PromotionCancelled), the traffic ramps back down, and production "
            "never flips to the bad version.",
            (
                sim_call(
                    sim_url,
                    "ui_update_environment",
                    {
                        "model_id": ids.llm_model_id,
                        "env": PRODUCTION,
                        "promotion_settings": RAMPING_PROMOTIONS,
                    },
                ),
                sim_call(
                    sim_url,
                    "seed_deployment",
                    {"model_id": ids.llm_model_id, "name": BAD_DEPLOYMENT, "status": "ACTIVE"},
                ),
                set_source(PRODUCTION_CR, BAD_DEPLOYMENT),
                message,
                set_source(PRODUCTION_CR, CI_DEPLOYMENT),
                message,
                "kubectl get events --field-selector reason=PromotionCancelled",
            ),
        ),
        Play(
            "A bad model, caught",
            f"{BAD_MODEL_DEPLOYMENT}'s new weights answer 30% of its requests with 5xx. "
            "Production promotes it in ramp stages with an analysis (errors at most "
            f"{BAD_MODEL_MAX_ERRORS}%, checked every {BAD_MODEL_INTERVAL}s): "
            f"{BAD_MODEL_FAILURE_LIMIT} failed checks in a row (AnalysisCheckFailed) and the "
            "operator rolls it back (PromotionRolledBack) while the old version serves; "
            f"ROLLED_BACK, ANALYSIS Failed. Then back to {CI_DEPLOYMENT}, without the analysis.",
            (
                sim_call(
                    sim_url,
                    "set_traffic_profile",
                    {"deployment_id": ids.bad_model_deployment_id, **BAD_MODEL_TRAFFIC},
                ),
                patch_spec(PRODUCTION_CR, analysed(BAD_MODEL_DEPLOYMENT)),
                f"kubectl wait bm/{PRODUCTION_CR} "
                "--for=jsonpath='{.status.deploymentStatus}'=ROLLED_BACK "
                f"--timeout={rollback_timeout(time_scale)}s",
                f"kubectl get bm {PRODUCTION_CR}",
                message,
                "kubectl get events --field-selector reason=AnalysisCheckFailed",
                "kubectl get events --field-selector reason=PromotionRolledBack",
                baseten_get(
                    sim_url, api_key, f"/models/{ids.llm_model_id}/environments/{PRODUCTION}"
                ),
                patch_spec(PRODUCTION_CR, unanalysed(CI_DEPLOYMENT)),
            ),
        ),
        Play(
            "A TTL deactivation",
            f"Baseten's inactivity TTL deactivates {STAGING_CR}'s deployment; the operator "
            "reactivates it (DeploymentReactivated).",
            (sim_call(sim_url, "deactivate", {"deployment_id": ids.staging_deployment_id}),),
        ),
        Play(
            "Pause, then resume",
            "Paused: no Baseten call at all, so drift stays. Resumed: the drift is reverted.",
            (set_mode(PRODUCTION_CR, "Pause"), drift, set_mode(PRODUCTION_CR, "Reconcile")),
        ),
        Play(
            "Observe mode",
            "Observe reports drift in status.message and never writes to Baseten.",
            (
                set_mode(PRODUCTION_CR, "Observe"),
                drift,
                message,
                set_mode(PRODUCTION_CR, "Reconcile"),
            ),
        ),
        Play(
            "Rotate a Secret",
            f"BasetenSecret {BASETEN_SECRET_CR} keeps Baseten's {BASETEN_SECRET_NAME} equal to "
            f"the Secret {HF_SECRET}: rotate it with kubectl and one upsert follows "
            "(SecretSynced); the simulator shows the secret's write count and the SHA-256 of "
            "its value, never the value.",
            (
                "kubectl get bsec",
                f"kubectl create secret generic {HF_SECRET} "
                f"--from-literal={HF_SECRET_KEY}=hf_my_rotated_token "
                "--dry-run=client -o yaml | kubectl apply -f -",
                "kubectl get events --field-selector reason=SecretSynced",
                f"curl -sS --fail-with-body {sim_url}/_sim/secrets",
            ),
        ),
        Play(
            "A deletion blocked by guardrails",
            f"{GUARDED_CR} has deletionPolicy DeleteWithGuardrails: deleting it is blocked "
            "(DELETE_BLOCKED) while production has replicas; drain it and the model goes.",
            (
                f"kubectl delete bm {GUARDED_CR} --wait=false",
                f"kubectl get bm {GUARDED_CR} -o jsonpath='{{.status.message}}'",
                ui_min_replicas(sim_url, ids.vllm_model_id, 0),
            ),
        ),
    ]


def render_playbook(plays: list[Play]) -> list[str]:
    lines: list[str] = []
    for number, play in enumerate(plays, start=1):
        lines += ["", f"{number}. {play.title}: {play.note}"]
        lines += [COMMAND_PREFIX + command for command in play.commands]
    return lines
