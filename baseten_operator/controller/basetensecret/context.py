"""What a BasetenSecret pass works with: its dependencies (injected: tests pass fakes) and
the object whose status it builds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from baseten_operator.api.secret_types import BasetenSecretSpec, BasetenSecretStatus
from baseten_operator.controller.basetensecret.telemetry import LastSyncAges
from baseten_operator.controller.shared.passes import ObjectPass
from baseten_operator.controller.shared.ports import (
    BasetenAPI,
    KubeAPI,
    Lookup,
    ObjectCache,
    Recorder,
    SecretSource,
)
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.runtime.clock import Clock

if TYPE_CHECKING:
    from baseten_operator.controller.shared.tenancy import Tenancy


@dataclass(frozen=True)
class OperatorIdentity:
    """Who the operator is, for the RoleBinding a FORBIDDEN message asks for (used when the
    API server's refusal does not name the user)."""

    namespace: str
    service_account: str


@dataclass
class SecretDependencies:
    kube: KubeAPI  # status and finalizer writes
    baseten: BasetenAPI  # the operator's client; a namespace's once admitted
    recorder: Recorder
    clock: Clock
    timing: Timing
    crs: ObjectCache  # the BasetenSecret informer
    secrets: SecretSource
    claimants: Lookup  # BasetenSecrets claiming a Baseten secret name
    models_naming: Lookup  # BasetenModels naming a Baseten secret
    fingerprint_key: bytes
    identity: OperatorIdentity
    ages: LastSyncAges
    # Called with a Baseten secret's name once it is written: its models go on at once.
    on_synced: Callable[[str], None] = field(default=lambda _name: None)
    tenancy: Tenancy | None = None


@dataclass
class SecretPass(ObjectPass[SecretDependencies, BasetenSecretSpec, BasetenSecretStatus]):
    """One BasetenSecret during one pass; its steps change the status through `report` and
    `enter`, and the write's bookkeeping."""

    team: str | None = None  # the Baseten team, once admitted (its namespace's or its own)
