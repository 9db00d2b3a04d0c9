"""What the simulated Baseten account holds before the operator starts.

The story of the samples: CI has just built `img-1.0-wgt-1.0-p-1.3` for `my-llm-model`,
whose production environment still serves the older `img-0.9-wgt-1.0-p-1.2`; the
operator promotes the new one. Both answer their production traffic healthily. A later
build with new weights, `img-1.3-wgt-2.0-p-1.6`, is there too, serving nothing yet: the
bad model the analysis catches. `my-vllm-model` does not exist yet: the operator's
truss push creates it, with the registry secret its trussConfig names, which someone
created in Baseten's UI long ago (without it the push would wait for it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Required, TypedDict

from baseten_operator.sim.baseten.simulator import BasetenSimulator

# The key the sandbox operator (and its ready-made plan command) uses on the simulator.
SANDBOX_API_KEY = "sandbox-api-key"
LLM_MODEL = "my-llm-model"
VLLM_MODEL = "my-vllm-model"
PRODUCTION = "production"
PREVIOUS_DEPLOYMENT = "img-0.9-wgt-1.0-p-1.2"
CI_DEPLOYMENT = "img-1.0-wgt-1.0-p-1.3"
# The next CI build: the one whose build fails in the failed-build story.
NEXT_CI_DEPLOYMENT = "img-1.1-wgt-1.0-p-1.4"
# A build that deploys fine and misbehaves in production: the bad-rollout story's.
BAD_DEPLOYMENT = "img-1.2-wgt-1.0-p-1.5"
# A build whose new weights answer errors: the bad-model story's, caught by the analysis.
BAD_MODEL_DEPLOYMENT = "img-1.3-wgt-2.0-p-1.6"
# The Baseten secret the complete sample's trussConfig.secrets names.
REGISTRY_SECRET = "docker-registry-secret"
# The sample BasetenSecret's Kubernetes Secret (config/samples) and the (fake) values the
# sandbox puts in it: the seeded one, then the tour's rotation.
HF_SECRET = "hf-token"
HF_SECRET_KEY = "token"
HF_TOKEN = "hf_sandbox_token_v1"
HF_TOKEN_ROTATED = "hf_sandbox_token_v2"


class Traffic(TypedDict, total=False):
    """What a deployment's metrics report: the simulator's set_traffic_profile arguments
    (requests per simulated second at all of the environment's traffic)."""

    requests_per_second: Required[float]
    share_5xx: float


# Healthy production traffic, and the bad model's, 30% answered 5xx. 20 a second brings a
# candidate's first ramp stage (10%) 60 requests in a 30s analysis window.
HEALTHY_TRAFFIC: Traffic = {"requests_per_second": 20.0}
BAD_MODEL_TRAFFIC: Traffic = {"requests_per_second": 20.0, "share_5xx": 0.3}


@dataclass(frozen=True)
class SeededAccount:
    """What the sandbox needs to know of the seeded account (its printed commands use it)."""

    llm_model_id: str
    bad_model_deployment_id: str


def seed_account(simulator: BasetenSimulator) -> SeededAccount:
    model = simulator.seed_model(LLM_MODEL)
    previous = simulator.seed_deployment(
        model["id"],
        PREVIOUS_DEPLOYMENT,
        status="ACTIVE",
        autoscaling_settings={"min_replica": 2, "max_replica": 20},
    )
    simulator.seed_environment(model["id"], PRODUCTION, current_deployment_id=previous["id"])
    ci = _seed_build(simulator, model["id"], CI_DEPLOYMENT)
    bad_model = _seed_build(simulator, model["id"], BAD_MODEL_DEPLOYMENT)
    # The bad model's errors are the story's to set: until then it gets no traffic profile.
    for healthy in (previous, ci):
        simulator.set_traffic_profile(healthy["id"], **HEALTHY_TRAFFIC)
    simulator.seed_secret(REGISTRY_SECRET, "sandbox-registry-credentials")
    return SeededAccount(llm_model_id=model["id"], bad_model_deployment_id=bad_model["id"])


def _seed_build(simulator: BasetenSimulator, model_id: str, name: str) -> dict[str, Any]:
    """A build pushed by CI, deployed (one replica) and serving nothing yet."""
    return simulator.seed_deployment(
        model_id, name, status="ACTIVE", autoscaling_settings={"min_replica": 1, "max_replica": 1}
    )
