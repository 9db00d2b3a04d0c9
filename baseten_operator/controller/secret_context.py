"""What a BasetenSecret pass works with: its dependencies (injected: tests pass fakes) and
the object whose status it builds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from baseten_operator.api.constants import EventReason, SecretState, event_type
from baseten_operator.api.secret_types import BasetenSecretSpec, BasetenSecretStatus
from baseten_operator.controller.named import NamedObject
from baseten_operator.controller.ports import BasetenAPI, KubeAPI, ObjectCache, Recorder
from baseten_operator.controller.secret_status import SecretStatusWriter, report
from baseten_operator.controller.secret_telemetry import LastSyncAges
from baseten_operator.controller.timing import Timing
from baseten_operator.runtime.clock import Clock

if TYPE_CHECKING:
    from baseten_operator.controller.tenancy import Tenancy

# Raw objects by a lookup value: BasetenSecrets claiming a Baseten secret name, BasetenModels
# naming one in trussConfig.secrets.
Lookup = Callable[[str], list[dict[str, Any]]]


class SecretSource(Protocol):
    """The referenced Secrets (secret_watches.ReferencedSecrets): the Secret, None when it
    does not exist; the API server's `Forbidden` when the operator may not read it."""

    def get(self, namespace: str, name: str, /) -> dict[str, Any] | None: ...


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
class SecretPass(NamedObject):
    """One BasetenSecret during one pass; its steps change the status only through
    `report` and `enter`."""

    deps: SecretDependencies
    obj: dict[str, Any]
    spec: BasetenSecretSpec
    writer: SecretStatusWriter
    team: str | None = None  # the Baseten team, once admitted (its namespace's or its own)

    @property
    def status(self) -> BasetenSecretStatus:
        return self.writer.status

    def event(self, reason: EventReason, message: str) -> None:
        self.deps.recorder.event(self.writer.obj, event_type(reason), str(reason), message)

    def report(self, state: SecretState, message: str) -> None:
        report(self.status, state, message)

    def enter(self, state: SecretState, message: str, reason: EventReason) -> None:
        """Report a state that holds the CR up, with its Event when entering it or when its
        reason (the message) changes: never on every pass."""
        before = (self.status.state, self.status.message)
        self.report(state, message)
        if (self.status.state, self.status.message) != before:
            self.event(reason, message)
