"""What one pass works with: its dependencies, and the object whose status it builds.

How a pass ends is in endings.py.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from baseten_operator.api.analysis import AnalysisStatus, PromotionControl
from baseten_operator.api.constants import (
    TRUSS_PUSH_DONE,
    TRUSS_PUSH_FAILED,
    TRUSS_PUSHING,
)
from baseten_operator.api.types import BasetenModelSpec, BasetenModelStatus, PromotionProgress
from baseten_operator.baseten.models import DeploymentV1, EnvironmentV1
from baseten_operator.controller.basetenmodel.status import clear_retries
from baseten_operator.controller.shared.passes import ObjectPass
from baseten_operator.controller.shared.ports import (
    BasetenAPI,
    KubeAPI,
    Lookup,
    ObjectCache,
    PrometheusAPI,
    Pusher,
    Recorder,
    SecretSource,
)
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.runtime.clock import Clock, format_rfc3339, rfc3339

if TYPE_CHECKING:
    from baseten_operator.controller.shared.tenancy import Tenancy

# status.trussPushLastError keeps this many bytes of a push's error, then "..." (the Go
# operator's cut, so a migrated status reads the same).
PUSH_ERROR_BYTES = 512


def cut_push_error(error: str) -> str:
    data = error.encode()
    if len(data) <= PUSH_ERROR_BYTES:
        return error
    # A cut through a multi-byte character drops that character, never writes half of it.
    return data[:PUSH_ERROR_BYTES].decode(errors="ignore") + "..."


@dataclass
class Dependencies:
    """Everything a pass talks to, injected (tests pass fakes)."""

    kube: KubeAPI  # status and finalizer writes
    baseten: BasetenAPI  # the namespace's client once admitted (admission.py)
    recorder: Recorder
    clock: Clock
    timing: Timing
    models: ObjectCache  # the BasetenModel informer
    configmaps: ObjectCache  # setup scripts' ConfigMaps (fetched behind a metadata informer)
    siblings: Lookup  # BasetenModels by the Baseten model they name
    claimants: Lookup  # BasetenModels by the (model, environment) they claim
    pusher: Pusher | None = None  # None when pushes are not possible
    # U[0, 1) for retry jitter; injectable so tests pin the backoff.
    random: Callable[[], float] = field(default=random.random)
    # Namespace policy, ownership and per-namespace keys; None: one tenant (no rules).
    tenancy: Tenancy | None = None
    # Section 14's Prometheus checks: the Secrets of their tokens and CAs, and Prometheus
    # itself; None: such a check is inconclusive (it cannot be asked).
    secrets: SecretSource | None = None
    prometheus: PrometheusAPI | None = None


@dataclass
class Pass(ObjectPass[Dependencies, BasetenModelSpec, BasetenModelStatus]):
    """One BasetenModel during one pass, and the one way its steps change the status.

    A step reads `status` and changes it only through the methods below (and `report`,
    `enter`), named for what they record (docs/contract.md sections 2 to 8). Nothing reaches
    the API server until the reconciler writes the outcome at the end of the pass, except
    the intents a step persists before an irreversible call (`persist_intent`).
    """

    @property
    def steady_period(self) -> float:
        """When this object is looked again in steady state (at its phase of the period)."""
        return self.deps.timing.steady_after(self.key, self.deps.clock.now())

    @property
    def env(self) -> str:
        return self.spec.environment.name

    def persist_intent(self) -> None:
        """Write the status now, before the irreversible call it announces (section 2).

        StaleRead (the pass ends without the call) when the object changed since this pass
        read it.
        """
        self.writer.write_intent()

    def record_model_id(self, model_id: str) -> None:
        """The model ID resolved (3.6); `modelIDResolvedTime` is set once and never cleared."""
        self.status.model_id = model_id
        if not self.status.model_id_resolved_time:
            self.status.model_id_resolved_time = rfc3339(self.deps.clock)

    def forget_model_id(self) -> None:
        """3.15: the cached ID named a model that is gone; keep its resolved time."""
        self.status.model_id = None

    def record_environment(self, environment: EnvironmentV1) -> None:
        """What the environment shows (3.8): its current deployment and active replicas,
        the promotion ramping traffic into it (while there is one), its instance type."""
        current = environment.current_deployment
        status = self.status
        status.active_deployment_name = current.name if current else None
        status.active_replica_count = current.active_replica_count if current else None
        promotion = environment.in_progress_promotion
        kept = status.promotion  # what this CR recorded of its own promotion stays
        analysis = kept.analysis if kept is not None else None
        control = kept.control if kept is not None else None
        status.promotion = (
            PromotionProgress(
                phase=(promotion.status or None) if promotion is not None else None,
                traffic_percent=(
                    promotion.percent_traffic_to_new_version if promotion is not None else None
                ),
                analysis=analysis,
                control=control,
            )
            if promotion is not None or analysis is not None or control is not None
            else None
        )
        instance_type = environment.instance_type
        status.instance_type = instance_type.name if instance_type is not None else None

    def track_source(self, name: str) -> None:
        """The source this pass works on (3.7); a new one starts a new failure episode, of
        its deployment and of its pushes, and forgets a rollback of the last one (14)."""
        if self.status.source_deployment_name == name:
            return
        self.status.source_deployment_name = name
        self.status.source_deployment_id = None
        self.clear_retries()
        self.clear_push_failures()
        self.forget_rollback()

    def record_promoted_source(self, name: str, deployment_id: str) -> None:
        """The source deployment a promote call was made for (3.14)."""
        self.status.source_deployment_id = deployment_id
        self.status.source_deployment_name = name

    def track_candidate(self, candidate: DeploymentV1) -> None:
        """The deployment being promoted (3.11); a different one starts a new failure episode."""
        if self.status.candidate_deployment_id != candidate.id:
            self.clear_retries()
        self.status.candidate_deployment_id = candidate.id
        self.status.candidate_deployment_name = candidate.name

    def clear_candidate(self) -> None:
        self.status.candidate_deployment_id = None
        self.status.candidate_deployment_name = None

    def record_cancelling(self, candidate: DeploymentV1) -> None:
        """3.8: this CR is cancelling the promotion of `candidate` (on record before the call,
        so that a new leader neither forgets it nor cancels twice)."""
        if self.status.cancelling_deployment_id != candidate.id:
            self.status.cancel_acknowledged_time = None
        self.status.cancelling_deployment_id = candidate.id

    def record_cancel_acknowledged(self) -> None:
        """3.8: Baseten took the cancel: it is never sent again for this candidate."""
        self.status.cancel_acknowledged_time = rfc3339(self.deps.clock)

    def clear_cancelling(self) -> None:
        """3.8: Baseten no longer promotes the candidate being cancelled."""
        self.status.cancelling_deployment_id = None
        self.status.cancel_acknowledged_time = None

    def record_first_failure(self, at: float) -> None:
        """Section 4: the failure episode starts (its retry deadline runs from `at`)."""
        self.status.first_deployment_failure_time = format_rfc3339(at)

    def record_retry(self, attempt: int, next_retry_at: float) -> None:
        """Section 4: retry `attempt` was made (or tried); the next is due at `next_retry_at`."""
        self.status.deployment_retry_count = attempt
        self.status.next_retry_time = format_rfc3339(next_retry_at)

    def clear_retries(self) -> None:
        """Section 4: the failure episode is over (or a new deployment starts its own)."""
        clear_retries(self.status)

    def record_push_launch(self, config_hash: str, at: float) -> None:
        """Section 5: a push of the config with this hash runs from `at`."""
        self.status.truss_push_status = TRUSS_PUSHING
        self.status.truss_push_time = format_rfc3339(at)
        self.status.truss_config_hash = config_hash

    def record_pushed(self, config_hash: str) -> None:
        """Section 5: the config with this hash is pushed (its deployment exists)."""
        self.status.truss_config_hash = config_hash
        self.status.truss_push_status = TRUSS_PUSH_DONE
        self.clear_push_failures()

    def record_no_push(self) -> None:
        """Section 5: the push just recorded as launched was refused (no capacity after all)."""
        self.status.truss_push_status = None

    def record_push_failure(self, attempt: int, error: str, next_retry_at: float) -> None:
        """Section 5: push `attempt` of the source's name failed; the next is due at
        `next_retry_at`. The failed push no longer runs: its start time goes."""
        status = self.status
        status.truss_push_status = TRUSS_PUSH_FAILED
        status.truss_push_time = None
        status.truss_push_failure_count = attempt
        status.truss_push_last_error = cut_push_error(error)
        status.truss_push_next_retry_time = format_rfc3339(next_retry_at)

    def clear_push_failures(self) -> None:
        """Section 5: the source's name was pushed, or found, or is a new one: its failed
        pushes are behind it."""
        status = self.status
        if status.truss_push_status == TRUSS_PUSH_FAILED:
            status.truss_push_status = None
        status.truss_push_failure_count = None
        status.truss_push_last_error = None
        status.truss_push_next_retry_time = None

    # --- section 14: progressive delivery of this CR's own promotion ----------------------

    def _progress(self) -> PromotionProgress:
        if self.status.promotion is None:
            self.status.promotion = PromotionProgress()
        return self.status.promotion

    def record_analysis(self, state: AnalysisStatus) -> None:
        """The analysis of the candidate as it stands (its count, its last check)."""
        self._progress().analysis = state

    def record_control(self, control: PromotionControl | None) -> None:
        """The signal about to be sent (None: forget one Baseten never took)."""
        self._progress().control = control

    def acknowledge_control(self, at: str) -> None:
        """Baseten took the signal on record: it is never sent again."""
        control = self._progress().control
        assert control is not None
        self.status.promotion = self._progress().model_copy(
            update={"control": control.model_copy(update={"acknowledged_time": at})}
        )

    def record_rollback(self, candidate: DeploymentV1) -> None:
        """The candidate was rolled back: the previous deployment serves."""
        self.status.rolled_back_deployment_id = candidate.id
        self.clear_candidate()

    def forget_rollback(self) -> None:
        """A new source, or a new reanalyze value: what was rolled back may be promoted."""
        if self.status.rolled_back_deployment_id is None:
            return
        self.status.rolled_back_deployment_id = None
        if self.status.promotion is not None:
            self.status.promotion = self.status.promotion.model_copy(
                update={"analysis": None, "control": None}
            )

    def record_cleanup(self) -> None:
        """Section 8: orphan cleanup ran now; the next is due an interval later."""
        self.status.last_cleanup_time = rfc3339(self.deps.clock)
