"""Names and words of the API: BasetenModel (docs/contract.md sections 1, 2 and 10) and
BasetenSecret (docs/contract.md section 13)."""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Literal

from baseten_operator.runtime.resource import Resource

GROUP = "models.baseten.com"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "BasetenModel"
LIST_KIND = "BasetenModelList"
PLURAL = "basetenmodels"
SINGULAR = "basetenmodel"
SHORT_NAME = "bm"
FINALIZER = "models.baseten.com/finalizer"
# A new value lets a rolled-back candidate be promoted (and analysed) again.
REANALYZE_ANNOTATION = "models.baseten.com/reanalyze"


# Plain data: naming the resource does not import the kube client (runtime/resource.py).
BASETENMODELS = Resource(GROUP, VERSION, PLURAL, KIND, namespaced=True)

SECRET_KIND = "BasetenSecret"
SECRET_LIST_KIND = "BasetenSecretList"
SECRET_PLURAL = "basetensecrets"
SECRET_SINGULAR = "basetensecret"
SECRET_SHORT_NAME = "bsec"
BASETENSECRETS = Resource(GROUP, VERSION, SECRET_PLURAL, SECRET_KIND, namespaced=True)
# The ClusterRole a namespace binds to the operator's ServiceAccount to let it read Secrets.
SECRET_READER_CLUSTER_ROLE = "baseten-operator-secret-reader"


class Mode(StrEnum):
    RECONCILE = "Reconcile"
    OBSERVE = "Observe"
    PAUSE = "Pause"


class SecretDeletionPolicy(StrEnum):
    RETAIN = "Retain"
    DELETE = "Delete"


class SecretState(StrEnum):
    """status.state of a BasetenSecret (docs/contract.md section 13)."""

    SYNCED = "SYNCED"
    # Observe only: the value in Kubernetes is not (known to be) the one in Baseten.
    OUT_OF_SYNC = "OUT_OF_SYNC"
    WAITING_FOR_SECRET = "WAITING_FOR_SECRET"
    FORBIDDEN = "FORBIDDEN"
    CONFLICT = "CONFLICT"
    FAILED = "FAILED"
    PAUSED = "PAUSED"
    DELETE_BLOCKED = "DELETE_BLOCKED"


class DeletionPolicy(StrEnum):
    RETAIN = "Retain"
    DELETE_WITH_GUARDRAILS = "DeleteWithGuardrails"
    DELETE = "Delete"


class PromotionCleanupStrategy(StrEnum):
    KEEP = "KEEP"
    SCALE_TO_ZERO = "SCALE_TO_ZERO"
    DEACTIVATE = "DEACTIVATE"


class RollingDeployStrategy(StrEnum):
    REPLICA = "REPLICA"


class ScheduleCadence(StrEnum):
    DAILY = "DAILY"
    HOURLY = "HOURLY"
    ONE_TIME = "ONE_TIME"


class Weekday(StrEnum):
    SUNDAY = "SUNDAY"
    MONDAY = "MONDAY"
    TUESDAY = "TUESDAY"
    WEDNESDAY = "WEDNESDAY"
    THURSDAY = "THURSDAY"
    FRIDAY = "FRIDAY"
    SATURDAY = "SATURDAY"


# Baseten deployment statuses (docs/baseten-api.md).
BUILDING = "BUILDING"
DEPLOYING = "DEPLOYING"
DEPLOY_FAILED = "DEPLOY_FAILED"
LOADING_MODEL = "LOADING_MODEL"
ACTIVE = "ACTIVE"
UNHEALTHY = "UNHEALTHY"
BUILD_FAILED = "BUILD_FAILED"
BUILD_STOPPED = "BUILD_STOPPED"
DEACTIVATING = "DEACTIVATING"
INACTIVE = "INACTIVE"
FAILED = "FAILED"
UPDATING = "UPDATING"
SCALED_TO_ZERO = "SCALED_TO_ZERO"
WAKING_UP = "WAKING_UP"

# The operator's own deploymentStatus words (docs/contract.md section 2).
PROMOTING = "PROMOTING"
PROMOTING_DEPLOYMENT = "PROMOTING_DEPLOYMENT"
PENDING = "PENDING"
PAUSED = "PAUSED"
DELETING = "DELETING"
DELETE_FAILED = "DELETE_FAILED"
DELETE_BLOCKED = "DELETE_BLOCKED"
ACTIVATING = "ACTIVATING"
# Another CR owns this (team, model, environment): Ready False, Progressing False.
CONFLICT = "CONFLICT"
# The analysis rolled the candidate back (docs/contract.md section 14): the previous
# deployment serves; nothing moves on until the spec (or models.baseten.com/reanalyze) does.
ROLLED_BACK = "ROLLED_BACK"

# status.trussPushStatus values.
TRUSS_PUSHING: Final = "TRUSS_PUSHING"
TRUSS_PUSH_DONE: Final = "TRUSS_PUSH_DONE"
TRUSS_PUSH_FAILED: Final = "TRUSS_PUSH_FAILED"

READY_STATUSES = frozenset({ACTIVE, SCALED_TO_ZERO})
PROGRESSING_STATUSES = frozenset(
    {
        PROMOTING,
        PROMOTING_DEPLOYMENT,
        PENDING,
        DELETING,
        ACTIVATING,
        BUILDING,
        DEPLOYING,
        LOADING_MODEL,
        WAKING_UP,
        UPDATING,
    }
)
# Failures the operator retries (docs/contract.md section 4); BUILD_STOPPED is a user's choice.
RETRYABLE_FAILURES = frozenset({FAILED, DEPLOY_FAILED, BUILD_FAILED})
TERMINAL_FAILURES = RETRYABLE_FAILURES | {BUILD_STOPPED}

CONDITION_READY = "Ready"
CONDITION_PROGRESSING = "Progressing"
# kstatus's conditions for custom resources (sigs.k8s.io/cli-utils/pkg/kstatus), which Flux
# reads health with: work under way, and unable to go on without a change.
CONDITION_RECONCILING = "Reconciling"
CONDITION_STALLED = "Stalled"


class EventReason(StrEnum):
    # Normal
    ENVIRONMENT_CREATED = "EnvironmentCreated"
    AUTOSCALING_UPDATED = "AutoscalingUpdated"
    PROMOTION_SETTINGS_UPDATED = "PromotionSettingsUpdated"
    AUTOSCALING_SCHEDULE_UPDATED = "AutoscalingScheduleUpdated"
    DEPLOYMENT_PROMOTED = "DeploymentPromoted"
    PROMOTION_CANCELLED = "PromotionCancelled"
    DEPLOYMENT_ACTIVE = "DeploymentActive"
    DEPLOYMENT_REACTIVATED = "DeploymentReactivated"
    TRUSS_PUSH_STARTED = "TrussPushStarted"
    TRUSS_PUSH_COMPLETED = "TrussPushCompleted"
    RECONCILIATION_PAUSED = "ReconciliationPaused"
    ORPHAN_DEPLOYMENTS_SCALED_IN = "OrphanDeploymentsScaledIn"
    ORPHAN_DEPLOYMENTS_DELETED = "OrphanDeploymentsDeleted"
    DEPLOYMENT_RETRIED = "DeploymentRetried"
    MODEL_DELETED = "ModelDeleted"
    ANALYSIS_PASSED = "AnalysisPassed"
    PROMOTION_HELD = "PromotionHeld"
    PROMOTION_RESUMED = "PromotionResumed"
    # Warning
    MODEL_NOT_FOUND = "ModelNotFound"
    ENVIRONMENT_CREATE_FAILED = "EnvironmentCreateFailed"
    AUTOSCALING_UPDATE_FAILED = "AutoscalingUpdateFailed"
    PROMOTION_SETTINGS_UPDATE_FAILED = "PromotionSettingsUpdateFailed"
    AUTOSCALING_SCHEDULE_UPDATE_FAILED = "AutoscalingScheduleUpdateFailed"
    SOURCE_DEPLOYMENT_NOT_FOUND = "SourceDeploymentNotFound"
    SOURCE_DEPLOYMENT_FAILED = "SourceDeploymentFailed"
    PROMOTION_FAILED = "PromotionFailed"
    PROMOTION_BLOCKED = "PromotionBlocked"
    PROMOTION_CANCEL_FAILED = "PromotionCancelFailed"
    SETUP_SCRIPT_NOT_FOUND = "SetupScriptNotFound"
    TRUSS_PUSH_FAILED = "TrussPushFailed"
    DEPLOYMENT_RETRY_FAILED = "DeploymentRetryFailed"
    DEPLOYMENT_RETRY_EXHAUSTED = "DeploymentRetryExhausted"
    MODEL_DELETE_BLOCKED = "ModelDeleteBlocked"
    MODEL_DELETE_FAILED = "ModelDeleteFailed"
    ENVIRONMENT_CONFLICT = "EnvironmentConflict"
    POLICY_VIOLATION = "PolicyViolation"
    ANALYSIS_CHECK_FAILED = "AnalysisCheckFailed"
    PROMOTION_ROLLED_BACK = "PromotionRolledBack"
    # BasetenSecret
    SECRET_SYNCED = "SecretSynced"
    SECRET_DELETED = "SecretDeleted"
    SECRET_SYNC_FAILED = "SecretSyncFailed"
    SECRET_DELETE_BLOCKED = "SecretDeleteBlocked"


WARNING_REASONS = frozenset(
    {
        EventReason.MODEL_NOT_FOUND,
        EventReason.ENVIRONMENT_CREATE_FAILED,
        EventReason.AUTOSCALING_UPDATE_FAILED,
        EventReason.PROMOTION_SETTINGS_UPDATE_FAILED,
        EventReason.AUTOSCALING_SCHEDULE_UPDATE_FAILED,
        EventReason.SOURCE_DEPLOYMENT_NOT_FOUND,
        EventReason.SOURCE_DEPLOYMENT_FAILED,
        EventReason.PROMOTION_FAILED,
        EventReason.PROMOTION_BLOCKED,
        EventReason.PROMOTION_CANCEL_FAILED,
        EventReason.SETUP_SCRIPT_NOT_FOUND,
        EventReason.TRUSS_PUSH_FAILED,
        EventReason.DEPLOYMENT_RETRY_FAILED,
        EventReason.DEPLOYMENT_RETRY_EXHAUSTED,
        EventReason.MODEL_DELETE_BLOCKED,
        EventReason.MODEL_DELETE_FAILED,
        EventReason.ENVIRONMENT_CONFLICT,
        EventReason.POLICY_VIOLATION,
        EventReason.ANALYSIS_CHECK_FAILED,
        EventReason.PROMOTION_ROLLED_BACK,
        EventReason.SECRET_SYNC_FAILED,
        EventReason.SECRET_DELETE_BLOCKED,
    }
)


def event_type(reason: EventReason) -> Literal["Normal", "Warning"]:
    """The Kubernetes event type docs/contract.md section 10 gives each reason."""
    return "Warning" if reason in WARNING_REASONS else "Normal"
