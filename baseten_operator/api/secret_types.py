"""The BasetenSecret resource as pydantic v2 types (docs/contract.md section 13).

As in api/types.py: camelCase aliases, unknown fields ignored, and every bound here is a
bound of the CRD (api/secret_crd.py) that the API server enforces.
"""

from __future__ import annotations

from pydantic import Field

from baseten_operator.api.constants import Mode, SecretDeletionPolicy
from baseten_operator.api.types import (
    KUBE_NAME_MAX,
    MESSAGE_MAX,
    NAME_MAX,
    SHORT_MAX,
    TIME_MAX,
    ApiModel,
    ConditionedStatus,
)

# Baseten's spec states no pattern or bound for a secret's name; its examples are
# identifiers (`hf_token`), and the name is a path segment of DELETE. Letters, digits, `_`,
# `-` and `.` keep it one segment that needs no escaping anywhere it is written.
SECRET_NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"
# Kubernetes Secret keys: alphanumerics, `-`, `_` and `.` (validation.IsConfigMapKey).
SECRET_KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"
# The largest value written to Baseten: Baseten documents none; 64 KiB is far above any
# token or credential file and bounds what one pass holds and sends.
SECRET_VALUE_MAX_BYTES = 64 * 1024
# The shortest reassertInterval: a rewrite is a Baseten write (and an audit log entry).
REASSERT_MIN_SECONDS = 60
FINGERPRINT_MAX = 128

NAME_IMMUTABLE_MESSAGE = "name is immutable"


class SecretKeyRef(ApiModel):
    name: str = Field(
        ...,
        min_length=1,
        max_length=KUBE_NAME_MAX,
        description="Name of the Secret, in the BasetenSecret's namespace.",
    )
    key: str = Field(
        ...,
        min_length=1,
        max_length=KUBE_NAME_MAX,
        pattern=SECRET_KEY_PATTERN,
        description="Key of the Secret whose value is written to Baseten.",
    )


class BasetenSecretSpec(ApiModel):
    name: str = Field(
        ...,
        min_length=1,
        max_length=NAME_MAX,
        pattern=SECRET_NAME_PATTERN,
        description="Name of the secret in Baseten (letters, digits, '_', '-', '.'); " "immutable.",
    )
    secret_ref: SecretKeyRef = Field(..., description="Where the value is kept.")
    team: str | None = Field(
        default=None,
        min_length=1,
        max_length=NAME_MAX,
        description="Baseten team of the secret (unset: the organisation's); immutable once "
        "set.",
    )
    mode: Mode = Field(
        default=Mode.RECONCILE,
        description="Reconcile (default), Observe (read-only: reports what it would write) "
        "or Pause.",
    )
    deletion_policy: SecretDeletionPolicy = Field(
        default=SecretDeletionPolicy.RETAIN,
        description="What deleting the BasetenSecret does to the Baseten secret: Retain "
        "(default) or Delete (only while no BasetenModel names it).",
    )
    reassert_interval: int | None = Field(
        default=None,
        ge=REASSERT_MIN_SECONDS,
        description="Seconds after which the value is written again even if unchanged "
        "(Baseten cannot say whether someone changed it); unset: never.",
    )


class BasetenSecretStatus(ConditionedStatus):
    state: str | None = Field(
        default=None,
        max_length=SHORT_MAX,
        description="SYNCED, WAITING_FOR_SECRET, FORBIDDEN, CONFLICT, FAILED, PAUSED, "
        "DELETE_BLOCKED (OUT_OF_SYNC in Observe).",
    )
    message: str | None = Field(
        default=None, max_length=MESSAGE_MAX, description="What the operator is doing."
    )
    secret_id: str | None = Field(
        default=None,
        max_length=NAME_MAX,
        alias="secretID",
        description="Baseten's ID of the secret (stable across rotation).",
    )
    last_sync_time: str | None = Field(
        default=None, max_length=TIME_MAX, description="When the value was last written."
    )
    fingerprint: str | None = Field(
        default=None,
        max_length=FINGERPRINT_MAX,
        description="HMAC of the value last written, keyed by the operator (never the value "
        "nor a plain hash of it).",
    )


class BasetenSecret(ApiModel):
    metadata: dict[str, object] = Field(default_factory=dict)
    spec: BasetenSecretSpec
    status: BasetenSecretStatus = Field(default_factory=lambda: BasetenSecretStatus())
