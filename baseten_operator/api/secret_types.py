"""The BasetenSecret resource as pydantic v2 types (docs/contract.md section 13).

As in api/types.py: camelCase aliases, unknown fields ignored, and every bound here is a
bound of the CRD (api/secret_crd.py) that the API server enforces.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from baseten_operator.api.base import (
    DURATION_PATTERN,
    MESSAGE_MAX,
    NAME_MAX,
    SHORT_MAX,
    TIME_MAX,
    ApiModel,
    SecretKeyRef,
    duration_seconds,
)
from baseten_operator.api.constants import Mode, SecretDeletionPolicy
from baseten_operator.api.types import ConditionedStatus

# Baseten's spec states no pattern or bound for a secret's name; its examples are
# identifiers (`hf_token`), and the name is a path segment of DELETE. Letters, digits, `_`,
# `-` and `.` keep it one segment that needs no escaping anywhere it is written.
SECRET_NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"
# The largest value written to Baseten: Baseten documents none; 64 KiB is far above any
# token or credential file and bounds what one pass holds and sends.
SECRET_VALUE_MAX_BYTES = 64 * 1024
# reassertInterval (a Kubernetes duration) is at least a minute, since each rewrite is a
# Baseten write (and an audit entry).
REASSERT_MIN = "1m"
REASSERT_MIN_MESSAGE = f"reassertInterval must be at least {REASSERT_MIN}"
FINGERPRINT_MAX = 128

NAME_IMMUTABLE_MESSAGE = "name is immutable"


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
    reassert_interval: str | None = Field(
        default=None,
        max_length=SHORT_MAX,
        pattern=DURATION_PATTERN,
        description="How long after the last write the value is written again even if "
        "unchanged (Baseten cannot say whether someone changed it), as a duration: 24h, "
        "90m; at least 1m. Unset: never.",
    )

    @model_validator(mode="after")
    def _reassert_at_least_a_minute(self) -> BasetenSecretSpec:
        # The CRD's rule says the same (api/secret_crd.py), for what reaches the API server.
        seconds = self.reassert_seconds
        if seconds is not None and seconds < duration_seconds(REASSERT_MIN):
            raise ValueError(REASSERT_MIN_MESSAGE)
        return self

    @property
    def reassert_seconds(self) -> float | None:
        if self.reassert_interval is None:
            return None
        return duration_seconds(self.reassert_interval)


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
    written_name: str | None = Field(
        default=None,
        max_length=NAME_MAX,
        description="The Baseten secret the value was last written to: deletion removes "
        "only that one.",
    )
    written_team: str | None = Field(
        default=None,
        max_length=NAME_MAX,
        description="The Baseten team the value was last written in (unset with writtenName "
        "set: the organisation's): deletion happens only there.",
    )


class BasetenSecret(ApiModel):
    metadata: dict[str, object] = Field(default_factory=dict)
    spec: BasetenSecretSpec
    status: BasetenSecretStatus = Field(default_factory=lambda: BasetenSecretStatus())
