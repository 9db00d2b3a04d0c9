"""The ready-made commands the interactive sandbox prints: kubectl and curl, copy-paste ready.

Each play is one story from the README (drift, a failed build, a bad rollout reverted, a
TTL deactivation, pause, observe, a Secret rotated, a guarded deletion) told with the tools
a person has: kubectl against the sandbox's API server, curl against the Baseten
simulator's `/_sim/` control API.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from dataclasses import dataclass
from typing import Any

from baseten_operator.sandbox.seed import (
    BAD_DEPLOYMENT,
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


def set_mode(name: str, mode: str) -> str:
    patch = json.dumps({"spec": {"mode": mode}}, separators=(",", ":"))
    return f"kubectl patch bm {name} --type merge -p {shlex.quote(patch)}"


def ui_min_replicas(sim_url: str, model_id: str, minimum: int) -> str:
    return sim_call(
        sim_url,
        "ui_update_environment",
        {"model_id": model_id, "env": PRODUCTION, "autoscaling_settings": {"min_replica": minimum}},
    )


def set_source(name: str, source: str) -> str:
    patch = json.dumps({"spec": {"sourceDeploymentName": source}}, separators=(",", ":"))
    return f"kubectl patch bm {name} --type merge -p {shlex.quote(patch)}"


# Production ramps a new version's traffic up in ten stages over 50 simulated minutes: a
# minute at the sandbox's time scale, time enough to revert while it ramps.
RAMPING_PROMOTIONS = {
    "rolling_deploy": True,
    "ramp_up_while_promoting": True,
    "ramp_up_duration_seconds": 3000,
}


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
            f"the operator puts {DESIRED_MIN_REPLICAS} back (event AutoscalingUpdated).",
            (drift,),
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
            "operator retries it (DeploymentRetried), then promotes it.",
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
