"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.

A candidate acquires the Lease when it has no holder or when the holder's record has
not changed for `leaseDurationSeconds` as measured on the candidate's own clock
(never trusting another machine's timestamps). The leader renews every retry period;
if it cannot renew within the renew deadline it has lost leadership. Every write is
an update carrying the resourceVersion read just before, so two candidates racing
for the same Lease cannot both win: the loser gets a Conflict.

Stricter than client-go where client-go is loose, because a deposed leader that goes
on writing can roll production back:
- the renew deadline runs from the start of the last renewal that succeeded, not from
  the start of each attempt (a replica frozen past its deadline is lost on waking);
- every Lease request is bounded by the time left before that deadline;
- seeing another holder while leading ends leadership at once;
- `refusal()` is the proof the write fence asks before every write.
"""

from __future__ import annotations

import copy
import math
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import structlog

from baseten_operator.runtime import metrics
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.clock import Clock, RealClock, sleep_unless
from baseten_operator.runtime.errors import AlreadyExists, ApiError, Conflict, NotFound
from baseten_operator.runtime.resource import LEASES

log = structlog.get_logger(__name__)

DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0
# client-go jitters the acquire loop by up to 120 % of the retry period.
ACQUIRE_JITTER = 1.2


def lease_time(epoch: float) -> str:
    """MicroTime as a Lease carries it: RFC 3339 with microseconds, `Z` suffix."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaderElectionRecord:
    holder_identity: str
    lease_duration_seconds: int
    acquire_time: str | None
    renew_time: str | None
    lease_transitions: int

    @classmethod
    def from_lease(cls, lease: dict[str, Any]) -> LeaderElectionRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.lease_transitions,
        }


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = DEFAULT_LEASE_DURATION,
        renew_deadline: float = DEFAULT_RENEW_DEADLINE,
        retry_period: float = DEFAULT_RETRY_PERIOD,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        release_on_cancel: bool = True,
        clock: Clock | None = None,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._clock: Clock = clock or RealClock()
        self._observed_record: LeaderElectionRecord | None = None
        self._observed_time = 0.0
        self._observed_lease: dict[str, Any] | None = None
        self._reported_leader: str | None = None
        self._leading = False
        # Monotonic start of the last acquire or renew that succeeded.
        self._renewed_at = 0.0
        self._usurped_by: str | None = None
        self._stopped = threading.Event()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._log = log.bind(lease=f"{namespace}/{name}", identity=identity)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        metrics.LEADER_ELECTION_MASTER_STATUS.labels(name=self.name).set(0)
        self._thread = threading.Thread(target=self.run, name="leader-elector", daemon=True)
        self._thread.start()

    def run(self) -> None:
        """Campaign, then lead until stopped or until a renewal fails."""
        if not self._acquire():
            return
        self._set_leading(True)
        self._log.info("became leader")
        self._call(self._on_started_leading)
        self._renew_until_lost_or_stopped()
        if self._stopped.is_set() and self.release_on_cancel:
            self.release()
        self._set_leading(False)
        self._call(self._on_stopped_leading)

    def stop(self, timeout: float | None = None) -> None:
        """Stop campaigning; a leader releases the Lease (when `release_on_cancel`)."""
        self._stopped.set()
        with self._wake:
            self._wake.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def is_leader(self) -> bool:
        return self._leading

    @property
    def leader(self) -> str | None:
        """The holder this candidate last observed."""
        return self._reported_leader

    def refusal(self) -> str | None:
        """None while this replica can prove it leads; otherwise why it cannot.

        The write fence's proof: a renewal that succeeded less than the renew deadline
        ago, and no other holder seen since.
        """
        if not self._leading:
            return "this replica is not the leader"
        if self._usurped_by is not None:
            return f"the lease is held by {self._usurped_by}"
        age = self._clock.monotonic() - self._renewed_at
        if age >= self.renew_deadline:
            return (
                f"the lease was last renewed {age:.1f}s ago "
                f"(renew deadline {self.renew_deadline:g}s)"
            )
        return None

    def proof_lapses_at(self) -> float | None:
        """The monotonic time from which `refusal` refuses unless a renewal succeeds first;
        None while not leading (then it refuses already)."""
        return self._renewed_at + self.renew_deadline if self._leading else None

    def healthy(self, tolerance: float = 0.0) -> bool:
        """False for a leader whose Lease has not been renewed for longer than it lasts."""
        if not self._leading:
            return True
        age = self._clock.monotonic() - self._observed_time
        return age <= self.lease_duration + tolerance

    # -- the protocol -------------------------------------------------------------------

    def try_acquire_or_renew(self, deadline: float | None = None) -> bool:
        """One attempt to take or keep the Lease; False if someone else holds it.

        `deadline` (monotonic) bounds every request of the attempt: past it, nothing is
        sent and the attempt fails.
        """
        started = self._clock.monotonic()
        now = self._clock.now()
        desired = LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=math.ceil(self.lease_duration),
            acquire_time=lease_time(now),
            renew_time=lease_time(now),
            lease_transitions=0,
        )
        timeout = self._time_left(deadline)
        if timeout is not None and timeout <= 0:
            return False
        try:
            lease = self.client.get(LEASES, self.name, self.namespace, timeout=timeout)
        except NotFound:
            return self._succeeded(started, self._create(desired, deadline))
        except ApiError as exc:
            self._log.warning("cannot read the lease", error=str(exc))
            return False

        current = LeaderElectionRecord.from_lease(lease)
        self._observe(current, lease)
        if current.holder_identity and current.holder_identity != self.identity:
            if self._leading:
                # Someone else took it: whatever our clock says, we no longer lead.
                self._usurped_by = current.holder_identity
                return False
            expires = self._observed_time + current.lease_duration_seconds
            if self._clock.monotonic() < expires:
                return False
        if current.holder_identity == self.identity:
            desired = replace(
                desired,
                acquire_time=current.acquire_time,
                lease_transitions=current.lease_transitions,
            )
        else:
            desired = replace(desired, lease_transitions=current.lease_transitions + 1)
        return self._succeeded(started, self._write(lease, desired, deadline))

    def _succeeded(self, started: float, written: bool) -> bool:
        if written:
            self._renewed_at = started
        return written

    def _time_left(self, deadline: float | None) -> float | None:
        return None if deadline is None else deadline - self._clock.monotonic()

    def release(self) -> bool:
        """Give the Lease up so another candidate can take it without waiting it out."""
        if self._observed_lease is None or not self._leading:
            return True
        now = lease_time(self._clock.now())
        released = LeaderElectionRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            lease_transitions=self._observed_record.lease_transitions
            if self._observed_record
            else 0,
        )
        if self._write(self._observed_lease, released):
            self._log.info("released the lease")
            return True
        return False

    def _create(self, desired: LeaderElectionRecord, deadline: float | None = None) -> bool:
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": desired.to_spec(),
        }
        timeout = self._time_left(deadline)
        if timeout is not None and timeout <= 0:
            return False
        try:
            created = self.client.create(LEASES, body, self.namespace, timeout=timeout)
        except AlreadyExists:
            return False
        except ApiError as exc:
            self._log.warning("cannot create the lease", error=str(exc))
            return False
        self._observe(desired, created)
        return True

    def _write(
        self, lease: dict[str, Any], record: LeaderElectionRecord, deadline: float | None = None
    ) -> bool:
        timeout = self._time_left(deadline)
        if timeout is not None and timeout <= 0:
            return False
        body = copy.deepcopy(lease)
        body["spec"] = record.to_spec()
        try:
            written = self.client.update(LEASES, body, timeout=timeout)
        except Conflict:
            return False  # another candidate wrote first
        except ApiError as exc:
            self._log.warning("cannot update the lease", error=str(exc))
            return False
        self._observe(record, written)
        return True

    def _observe(self, record: LeaderElectionRecord, lease: dict[str, Any]) -> None:
        self._observed_lease = lease
        if record != self._observed_record:
            self._observed_record = record
            self._observed_time = self._clock.monotonic()
        holder = record.holder_identity
        if holder and holder != self._reported_leader:
            self._reported_leader = holder
            self._log.info("new leader observed", leader=holder)
            if self._on_new_leader is not None:
                try:
                    self._on_new_leader(holder)
                except Exception:
                    self._log.exception("on_new_leader failed")

    # -- loops --------------------------------------------------------------------------

    def _acquire(self) -> bool:
        while not self._stopped.is_set():
            if self.try_acquire_or_renew():
                return True
            self._wait(self.retry_period * (1 + random.random() * ACQUIRE_JITTER))
        return False

    def _renew_until_lost_or_stopped(self) -> None:
        while not self._stopped.is_set():
            # The deadline runs from the last renewal that succeeded: a replica that was
            # frozen (SIGSTOP, a long GC pause) past it wakes up already deposed.
            deadline = self._renewed_at + self.renew_deadline
            if self.try_acquire_or_renew(deadline):
                self._wait(self.retry_period)
                continue
            if self._stopped.is_set():
                return
            if self._usurped_by is not None:
                self._log.error(
                    "another replica holds the lease: leadership lost", leader=self._usurped_by
                )
                return
            if self._clock.monotonic() + self.retry_period >= deadline:
                self._log.error("failed to renew the lease in time: leadership lost")
                return
            self._wait(self.retry_period)

    def _wait(self, seconds: float) -> None:
        sleep_unless(self._clock, self._wake, self._stopped, seconds)

    def _set_leading(self, leading: bool) -> None:
        self._leading = leading
        metrics.LEADER_ELECTION_MASTER_STATUS.labels(name=self.name).set(1 if leading else 0)

    def _call(self, callback: Callable[[], None] | None) -> None:
        if callback is None:
            return
        try:
            callback()
        except Exception:
            self._log.exception("leader election callback failed")
