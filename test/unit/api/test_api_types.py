"""docs/contract.md section 1: the resource's shape, bounds and defaults as pydantic types."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from baseten_operator.api import constants
from baseten_operator.api.base import to_wire
from baseten_operator.api.constants import DeletionPolicy, EventReason, Mode, event_type
from baseten_operator.api.types import BasetenModelSpec, BasetenModelStatus

BASE: dict[str, Any] = {
    "modelName": "my-llm",
    "sourceDeploymentName": "src",
    "environment": {"name": "production"},
}

SEED_COMPLETE: dict[str, Any] = {
    "modelName": "my-llm-model",
    "mode": "Reconcile",
    "deletionPolicy": "Retain",
    "trussConfig": {
        "pythonVersion": "py312",
        "resources": {"accelerator": "H100:1", "useGpu": True},
        "baseImage": {
            "image": "us-docker.pkg.dev/my-project/my-repo/vllm:0.16.0",
            "dockerAuth": {
                "authMethod": "GCP_SERVICE_ACCOUNT_JSON",
                "secretName": "docker-registry-secret",
                "registry": "us-docker.pkg.dev",
            },
        },
        "dockerServer": {
            "noBuild": True,
            "startCommand": "sh -c 'bash /app/data/setup.sh'",
            "readinessEndpoint": "/health",
            "livenessEndpoint": "/health",
            "predictEndpoint": "/v1/completions",
            "serverPort": 8000,
        },
        "runtime": {"predictConcurrency": 256},
        "modelMetadata": {"tags": ["openai-compatible"], "exampleModelInput": {"a": [1, {}]}},
        "secrets": {"docker-registry-secret": ""},
        "environmentVariables": {"DD_SITE": "us5.datadoghq.com"},
        "setupScript": {"configMapRef": {"name": "my-model-setup", "key": "setup.sh"}},
    },
    "environment": {
        "name": "production",
        "autoscaling": {
            "minReplicas": 2,
            "maxReplicas": 20,
            "concurrencyTarget": 20,
            "autoscalingWindow": 600,
            "scaleDownDelay": 120,
            "targetUtilizationPercentage": 70,
        },
        "promotionSettings": {
            "scaleDownPreviousDeployment": True,
            "preserveInstanceType": True,
            "redeployOnPromotion": False,
            "rollingDeploy": False,
            "promotionCleanupStrategy": "SCALE_TO_ZERO",
            "rampUpWhilePromoting": True,
            "rampUpDurationSeconds": 600,
            "rollingDeployConfig": {
                "strategy": "REPLICA",
                "maxSurgePercent": 25,
                "maxUnavailablePercent": 25,
                "stabilizationTimeSeconds": 300,
            },
        },
    },
    "orphanDeploymentCleanup": {
        "scaleToZero": True,
        "delete": True,
        "deleteAfterDays": 30,
        "minToKeep": 10,
        "intervalMinutes": 10080,
    },
}


def with_path(path: str, value: Any) -> dict[str, Any]:
    import copy

    spec = copy.deepcopy(SEED_COMPLETE)
    *parents, leaf = path.split(".")
    node = spec
    for part in parents:
        node = node[part]
    node[leaf] = value
    return spec


def test_the_seed_complete_example_round_trips_unchanged() -> None:
    assert to_wire(BasetenModelSpec.model_validate(SEED_COMPLETE)) == SEED_COMPLETE


def test_defaults_are_reconcile_and_retain() -> None:
    spec = BasetenModelSpec.model_validate(BASE)
    assert spec.mode == Mode.RECONCILE
    assert spec.deletion_policy == DeletionPolicy.RETAIN
    assert spec.effective_mode == Mode.RECONCILE


@pytest.mark.parametrize("mode", ["Reconcile", "Observe", "Pause"])
def test_deprecated_paused_pauses_whatever_mode_says(mode: str) -> None:
    spec = BasetenModelSpec.model_validate({**BASE, "mode": mode, "paused": True})
    assert spec.effective_mode == Mode.PAUSE


def test_paused_false_keeps_the_mode() -> None:
    spec = BasetenModelSpec.model_validate({**BASE, "mode": "Observe", "paused": False})
    assert spec.effective_mode == Mode.OBSERVE


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("modelName", ""),
        ("mode", "Sometimes"),
        ("deletionPolicy", "Shred"),
        ("environment.name", "Production"),
        ("environment.name", "prod-"),
        ("environment.name", "-prod"),
        ("environment.name", "prod_1"),
        ("environment.autoscaling.minReplicas", -1),
        ("environment.autoscaling.maxReplicas", 0),
        ("environment.autoscaling.concurrencyTarget", 0),
        ("environment.autoscaling.autoscalingWindow", -1),
        ("environment.autoscaling.scaleDownDelay", -1),
        ("environment.autoscaling.targetUtilizationPercentage", 0),
        ("environment.autoscaling.targetUtilizationPercentage", 101),
        ("environment.autoscaling.targetInFlightTokens", 0),
        ("environment.autoscaling.maxScaleDownRate", 0),
        ("environment.autoscaling.maxScaleDownRate", 51),
        ("environment.promotionSettings.rampUpDurationSeconds", -1),
        ("environment.promotionSettings.promotionCleanupStrategy", "DELETE"),
        ("environment.promotionSettings.rollingDeployConfig.strategy", "SURGE"),
        ("environment.promotionSettings.rollingDeployConfig.maxSurgePercent", 101),
        ("environment.promotionSettings.rollingDeployConfig.maxSurgePercent", -1),
        ("environment.promotionSettings.rollingDeployConfig.maxUnavailablePercent", 101),
        ("environment.promotionSettings.rollingDeployConfig.stabilizationTimeSeconds", -1),
        ("environment.promotionSettings.rollingDeployConfig.replicaOverheadPercent", -1),
        ("orphanDeploymentCleanup.deleteAfterDays", 0),
        ("orphanDeploymentCleanup.minToKeep", -1),
        ("orphanDeploymentCleanup.intervalMinutes", 9),
        ("trussConfig.resources", {"useGpu": True}),
        ("trussConfig.baseImage", {}),
    ],
)
def test_out_of_bounds_values_are_rejected(path: str, value: Any) -> None:
    with pytest.raises(ValidationError):
        BasetenModelSpec.model_validate(with_path(path, value))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("environment.name", "a"),
        ("environment.name", "prod-eu-1"),
        ("environment.autoscaling.minReplicas", 0),
        ("environment.autoscaling.targetUtilizationPercentage", 1),
        ("environment.autoscaling.targetUtilizationPercentage", 100),
        ("environment.autoscaling.targetInFlightTokens", 1),
        ("environment.autoscaling.maxScaleDownRate", 1),
        ("environment.autoscaling.maxScaleDownRate", 50),
        ("environment.promotionSettings.rollingDeployConfig.replicaOverheadPercent", 0),
        ("environment.promotionSettings.rollingDeployConfig.maxSurgePercent", 0),
        ("environment.promotionSettings.rollingDeployConfig.maxUnavailablePercent", 100),
        ("orphanDeploymentCleanup.deleteAfterDays", 1),
        ("orphanDeploymentCleanup.minToKeep", 0),
        ("orphanDeploymentCleanup.intervalMinutes", 10),
        ("trussConfig.modelMetadata.exampleModelInput", [1, "x", None, {"k": 2.5}]),
    ],
)
def test_boundary_values_are_accepted(path: str, value: Any) -> None:
    BasetenModelSpec.model_validate(with_path(path, value))


def test_exactly_one_source() -> None:
    both = {**BASE, "trussConfig": SEED_COMPLETE["trussConfig"]}
    neither = {k: v for k, v in BASE.items() if k != "sourceDeploymentName"}
    for spec in (both, neither):
        with pytest.raises(ValidationError, match="exactly one of sourceDeploymentName or"):
            BasetenModelSpec.model_validate(spec)


def test_environment_and_model_name_are_required() -> None:
    for missing in ("environment", "modelName"):
        with pytest.raises(ValidationError):
            BasetenModelSpec.model_validate({k: v for k, v in BASE.items() if k != missing})


def test_unknown_fields_are_ignored_on_read() -> None:
    spec = BasetenModelSpec.model_validate({**BASE, "futureField": 1})
    assert "futureField" not in to_wire(spec)


def test_status_uses_the_documented_field_names() -> None:
    wire = {
        "modelID": "m1",
        "modelIDResolvedTime": "2026-01-01T00:00:00Z",
        "sourceDeploymentID": "d1",
        "sourceDeploymentName": "src",
        "activeDeploymentName": "src",
        "candidateDeploymentID": "d2",
        "candidateDeploymentName": "src.1",
        "deploymentStatus": "ACTIVE",
        "activeReplicaCount": 3,
        "message": "m",
        "trussConfigHash": "abcd1234",
        "trussPushStatus": "TRUSS_PUSH_DONE",
        "trussPushTime": "2026-01-01T00:00:00Z",
        "lastCleanupTime": "2026-01-01T00:00:00Z",
        "firstDeploymentFailureTime": "2026-01-01T00:00:00Z",
        "deploymentRetryCount": 2,
        "nextRetryTime": "2026-01-01T00:00:00Z",
        "observedGeneration": 4,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "observedGeneration": 4,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "reason": "ACTIVE",
                "message": "m",
            }
        ],
    }
    status = BasetenModelStatus.model_validate(wire)
    assert status.model_id == "m1"
    assert status.candidate_deployment_id == "d2"
    assert to_wire(status) == wire


def test_resource_names() -> None:
    assert constants.BASETENMODELS.api_version == "models.baseten.com/v1alpha1"
    assert constants.BASETENMODELS.plural == "basetenmodels"
    assert constants.BASETENMODELS.kind == "BasetenModel"
    assert constants.BASETENMODELS.namespaced
    assert constants.FINALIZER == "models.baseten.com/finalizer"
    assert constants.SHORT_NAME == "bm"


def test_event_types_follow_section_10() -> None:
    normal = {
        "EnvironmentCreated", "AutoscalingUpdated", "PromotionSettingsUpdated",
        "AutoscalingScheduleUpdated", "DeploymentPromoted", "DeploymentActive",
        "DeploymentReactivated", "TrussPushStarted",
        "TrussPushCompleted", "ReconciliationPaused", "OrphanDeploymentsScaledIn",
        "OrphanDeploymentsDeleted", "DeploymentRetried", "ModelDeleted",
        "PromotionCancelled", "SecretSynced", "SecretDeleted",
        "AnalysisPassed", "PromotionHeld", "PromotionResumed",
    }  # fmt: skip
    assert {r.value for r in EventReason if event_type(r) == "Normal"} == normal
    # 14 of section 10, issue 12's tenancy warnings, issue 15's schedule failures and issue
    # 31's failed cancellations, issue 29's BasetenSecret failures, issue 37's analysis.
    warnings = {r.value for r in EventReason if event_type(r) == "Warning"}
    assert len(warnings) == 22
    assert {"SecretSyncFailed", "SecretDeleteBlocked"} <= warnings
    assert {"AnalysisCheckFailed", "PromotionRolledBack"} <= warnings
    assert {
        "EnvironmentConflict",
        "PolicyViolation",
        "AutoscalingScheduleUpdateFailed",
        "PromotionCancelFailed",
    } <= warnings
