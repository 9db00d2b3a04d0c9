"""The simulator's stored state: plain records, rendered to API shapes by `views`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

BUILDING = "BUILDING"
DEPLOYING = "DEPLOYING"
LOADING_MODEL = "LOADING_MODEL"
ACTIVE = "ACTIVE"
UNHEALTHY = "UNHEALTHY"
BUILD_FAILED = "BUILD_FAILED"
BUILD_STOPPED = "BUILD_STOPPED"
DEPLOY_FAILED = "DEPLOY_FAILED"
DEACTIVATING = "DEACTIVATING"
INACTIVE = "INACTIVE"
FAILED = "FAILED"
UPDATING = "UPDATING"
SCALED_TO_ZERO = "SCALED_TO_ZERO"
WAKING_UP = "WAKING_UP"

DEPLOYMENT_STATUSES = frozenset(
    {
        BUILDING,
        DEPLOYING,
        DEPLOY_FAILED,
        LOADING_MODEL,
        ACTIVE,
        UNHEALTHY,
        BUILD_FAILED,
        BUILD_STOPPED,
        DEACTIVATING,
        INACTIVE,
        FAILED,
        UPDATING,
        SCALED_TO_ZERO,
        WAKING_UP,
    }
)
# Statuses a retry restarts from, and the ones that end a promotion of that candidate.
RETRYABLE_STATUSES = frozenset({BUILD_FAILED, BUILD_STOPPED, DEPLOY_FAILED, FAILED, UNHEALTHY})
TERMINAL_FOR_PROMOTION = RETRYABLE_STATUSES | {DEACTIVATING, INACTIVE}
READY_STATUSES = frozenset({ACTIVE, SCALED_TO_ZERO})
SERVING_STATUSES = frozenset({ACTIVE, UPDATING, UNHEALTHY})

PRODUCTION = "production"

DEFAULT_AUTOSCALING: dict[str, Any] = {
    "min_replica": 0,
    "max_replica": 1,
    "autoscaling_window": 60,
    "scale_down_delay": 900,
    "concurrency_target": 1,
    "target_utilization_percentage": 70,
    "target_in_flight_tokens": None,
    "max_scale_down_rate": None,
}
DEFAULT_PROMOTION_SETTINGS: dict[str, Any] = {
    "redeploy_on_promotion": False,
    "rolling_deploy": False,
    "promotion_cleanup_strategy": "SCALE_TO_ZERO",
    "rolling_deploy_config": None,
    "ramp_up_while_promoting": False,
    "ramp_up_duration_seconds": 600,
}
DEFAULT_ROLLING_DEPLOY_CONFIG: dict[str, Any] = {
    "rolling_deploy_strategy": "REPLICA",
    "max_surge_percent": 25,
    "max_unavailable_percent": 0,
    "stabilization_time_seconds": 0,
    "replica_overhead_percent": 0,
}

_GPU_MEMORY_MIB = {"T4": 16384, "L4": 24576, "A10G": 24576, "A100": 81920, "H100": 81920}


@dataclass(frozen=True)
class InstanceType:
    millicpu: int = 1000
    memory_mib: int = 2048
    gpu_type: str | None = None
    gpu_count: int = 0

    @property
    def name(self) -> str:
        base = f"{self.millicpu // 1000}x{self.memory_mib // 1024}"
        return f"{self.gpu_type}:{self.gpu_count}x{base}" if self.gpu_type else base

    @property
    def gpu_memory_mib(self) -> int | None:
        return _GPU_MEMORY_MIB.get(self.gpu_type or "")

    @classmethod
    def from_truss_config(cls, config: dict[str, Any]) -> InstanceType:
        """The instance type a truss config's `resources` asks for (defaults: 1 CPU, 2 GiB)."""
        resources = config.get("resources") or {}
        millicpu = _parse_cpu(str(resources.get("cpu", "1")))
        memory = _parse_memory_mib(str(resources.get("memory", "2Gi")))
        accelerator = resources.get("accelerator")
        if not accelerator:
            return cls(millicpu, memory)
        gpu, _, count = str(accelerator).partition(":")
        return cls(millicpu, memory, gpu, int(count) if count.isdigit() else 1)


def _parse_cpu(text: str) -> int:
    if text.endswith("m"):
        return max(int(float(text[:-1])), 1000)
    try:
        return max(int(float(text) * 1000), 1000)
    except ValueError:
        return 1000


_MEMORY = re.compile(r"^([0-9.]+)\s*(Ki|Mi|Gi|Ti|K|M|G|T)?$")
_MEMORY_FACTORS_MIB = {
    None: 1 / (1024 * 1024),
    "Ki": 1 / 1024,
    "Mi": 1,
    "Gi": 1024,
    "Ti": 1024 * 1024,
    "K": 1000 / (1024 * 1024),
    "M": 1000**2 / 1024**2,
    "G": 1000**3 / 1024**2,
    "T": 1000**4 / 1024**2,
}


def _parse_memory_mib(text: str) -> int:
    match = _MEMORY.match(text.strip())
    if not match:
        return 2048
    return max(int(float(match.group(1)) * _MEMORY_FACTORS_MIB[match.group(2)]), 1024)


@dataclass(frozen=True)
class LogLine:
    """A line of a deployment's logs (LogV1)."""

    time: float
    message: str
    level: str | None  # DEBUG, INFO, WARNING, ERROR; None: no level detected
    replica: str | None = None


@dataclass
class Deployment:
    id: str
    name: str
    model_id: str
    created_at: float
    status: str
    instance_type: InstanceType
    autoscaling: dict[str, Any]
    # Baseten reports autoscaling_settings as null until a deployment first finished deploying.
    deployed: bool = False
    labels: dict[str, Any] | None = None
    files: dict[str, str] = field(default_factory=dict)
    truss_config: dict[str, Any] | None = None
    # Bumped whenever a new lifecycle step starts: events of older steps are then stale.
    generation: int = 0
    # Why it last failed (what its logs say: a load, or a failure the control API forced).
    failure: str | None = None
    # Its build, deploy and serving log lines, in time order (deployment_logs.py).
    log: list[LogLine] = field(default_factory=list)


# The phases of a promotion in progress (InProgressPromotionStatusV1).
RELEASING = "RELEASING"
RAMPING_UP = "RAMPING_UP"
RAMPING_DOWN = "RAMPING_DOWN"
PAUSED = "PAUSED"


@dataclass(frozen=True)
class TrafficSteps:
    """How a stepped promotion moves traffic to its candidate: `percent` more at each
    step (the last one up to 100), each step held `seconds` (simulated) before the next."""

    percent: int
    seconds: float

    @property
    def count(self) -> int:
        return -(-100 // self.percent)

    def share(self, step: int) -> int:
        """The candidate's percent of the traffic during `step` (1..count)."""
        return min(100, self.percent * step)


@dataclass
class Promotion:
    candidate_id: str
    previous_id: str | None
    scale_down_previous: bool
    started_at: float
    candidate_is_copy: bool
    rolling_deploy: bool
    # None: the candidate gets no traffic until the promotion completes (then all of it).
    steps: TrafficSteps | None
    ready_at: float | None = None
    phase: str = RELEASING
    percent: int = 0
    step: int = 0  # the step in progress (or frozen by a pause), 1..steps.count
    # pause_promotion during a step: the promotion pauses when that step ends.
    pause_pending: bool = False
    # cancel_promotion while the candidate had traffic: it steps back down to zero.
    cancelled: bool = False
    # Bumped by every signal that changes the course (cancel): an event planned before it
    # finds the promotion changed and does nothing.
    generation: int = 0

    @property
    def stepped(self) -> bool:
        """Traffic moves over in steps (a rolling deploy or a ramp-up): what Baseten's
        pause, resume, force-cancel and force-roll-forward act on."""
        return self.steps is not None


# A ramping promotion (ramp_up_while_promoting) moves traffic in ten even stages.
RAMP_STAGES = 10


DAILY = "DAILY"
HOURLY = "HOURLY"
ONE_TIME = "ONE_TIME"
# In datetime.weekday() order (Monday is 0).
WEEKDAYS = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")
# The overrides a schedule carries: min_replica and max_replica always, the others null
# when the environment's own value applies.
SCHEDULE_OVERRIDES = (
    "min_replica",
    "max_replica",
    "autoscaling_window",
    "scale_down_delay",
    "concurrency_target",
    "target_utilization_percentage",
    "target_in_flight_tokens",
    "max_scale_down_rate",
)


@dataclass(frozen=True)
class AutoscalingSchedule:
    """When a schedule applies and what it overrides. DAILY: on `weekdays`, from
    start_hour:start_minute to end_hour:end_minute (past midnight when the end is earlier);
    HOURLY: every hour (or the hours from start_hour up to end_hour), from start_minute to
    end_minute; ONE_TIME: from `start_at` to `end_at` (epoch seconds, end excluded). Times of
    day are in the environment's schedule timezone."""

    name: str
    enabled: bool
    cadence: str
    overrides: dict[str, Any]
    weekdays: tuple[str, ...] = ()
    start_hour: int | None = None
    start_minute: int | None = None
    end_hour: int | None = None
    end_minute: int | None = None
    start_at: float | None = None
    end_at: float | None = None
    id: str = ""  # given when the schedule is stored


@dataclass
class Environment:
    name: str
    model_id: str
    created_at: float
    autoscaling: dict[str, Any]
    promotion_settings: dict[str, Any]
    instance_type: InstanceType | None = None
    current_deployment_id: str | None = None
    promotion: Promotion | None = None
    # The IANA timezone of every schedule's times of day (None until the first schedule).
    schedule_timezone: str | None = None
    # In creation order: a replaced schedule keeps its place.
    schedules: tuple[AutoscalingSchedule, ...] = ()


# The organisation's default team: every model created without a team lands in it.
DEFAULT_TEAM_ID = "simteam"
DEFAULT_TEAM_NAME = "Sim Team"


@dataclass
class Team:
    id: str
    name: str
    created_at: float
    default: bool = False


@dataclass
class Secret:
    """A team's secret. The value is never kept: only its SHA-256, which the control API
    shows so a test can prove a rotation arrived without the value being anywhere."""

    id: str
    name: str
    team_id: str
    created_at: float
    value_sha256: str
    # Upserts that wrote it, the creating one included.
    writes: int = 1


@dataclass(frozen=True)
class Actor:
    """Who made a change, as Baseten's audit log names them (AuditLogActorV1), and from
    where (AuditLogSourceV1)."""

    type: str  # USER, API_KEY, BASETEN_SYSTEM
    source: str  # UI, API, SYSTEM
    email: str | None = None
    api_key_prefix: str | None = None
    api_key_name: str | None = None


@dataclass(frozen=True)
class AuditEntry:
    """One entry of a model's audit log (AuditLogEntryV1)."""

    seq: int  # creation order: entries are appended as time goes on
    id: str
    created: float
    event_type: str
    event_data: dict[str, Any]
    actor: Actor
    # What the filters match on.
    environment: str | None = None
    deployment_id: str | None = None


@dataclass
class Model:
    id: str
    name: str
    created_at: float
    # Model names are unique per team only.
    team_id: str = DEFAULT_TEAM_ID
    deployment_ids: list[str] = field(default_factory=list)
    environments: dict[str, Environment] = field(default_factory=dict)
    audit_log: list[AuditEntry] = field(default_factory=list)
