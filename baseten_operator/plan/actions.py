"""The typed actions of a plan: each one a Baseten write the pass would make.

`type` and the fields are the versioned JSON schema (docs/plan.md, plan.schema.json):
add fields, never rename them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar


def camel(name: str) -> str:
    """JSON field names are the CR's style: camelCase."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _render(value: Any) -> str:
    """As the operator's drift texts print values: booleans lower-case, no value empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _settings(settings: dict[str, Any] | None) -> str:
    if not settings:
        return "{}"
    return "{" + ", ".join(f"{k}: {_render(v)}" for k, v in settings.items()) + "}"


@dataclass(frozen=True)
class Action:
    type: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        fields = dataclasses.asdict(self)
        return {"type": self.type, **{camel(key): value for key, value in fields.items()}}

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class SettingChange:
    field: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.field} {_render(self.old)}→{_render(self.new)}"


@dataclass(frozen=True)
class CreateEnvironment(Action):
    type: ClassVar[str] = "create-environment"
    environment: str
    autoscaling_settings: dict[str, Any] | None
    promotion_settings: dict[str, Any] | None

    def describe(self) -> str:
        return (
            f"create environment {self.environment} (autoscaling "
            f"{_settings(self.autoscaling_settings)}, promotion "
            f"{_settings(self.promotion_settings)})"
        )


@dataclass(frozen=True)
class ScheduleChange:
    """One autoscaling schedule the update creates, replaces or deletes."""

    name: str
    change: str  # added, changed, removed, duplicate removed

    def __str__(self) -> str:
        return f"schedule {self.name} {self.change}"


@dataclass(frozen=True)
class UpdateEnvironment(Action):
    type: ClassVar[str] = "update-environment"
    environment: str
    # Settings changes, the schedule time zone (`scheduleTimezone`) included.
    changes: list[SettingChange]
    autoscaling_settings: dict[str, Any] | None
    promotion_settings: dict[str, Any] | None
    schedules: list[ScheduleChange] = dataclasses.field(default_factory=list)
    autoscaling_schedule_settings: dict[str, Any] | None = None

    def describe(self) -> str:
        described = [str(c) for c in (*self.changes, *self.schedules)]
        changes = ", ".join(described) or _settings(
            {
                **(self.autoscaling_settings or {}),
                **(self.promotion_settings or {}),
                **(self.autoscaling_schedule_settings or {}),
            }
        )
        return f"update environment {self.environment}: {changes}"


@dataclass(frozen=True)
class Push(Action):
    type: ClassVar[str] = "push"
    deployment: str
    model: str
    creates_model: bool

    def describe(self) -> str:
        creates = " (creates the model)" if self.creates_model else ""
        return f"push trussConfig as deployment {self.deployment} of {self.model}{creates}"


@dataclass(frozen=True)
class Promote(Action):
    type: ClassVar[str] = "promote"
    environment: str
    current: str | None
    deployment: str
    deployment_id: str
    scale_down_previous_deployment: bool
    preserve_env_instance_type: bool

    def describe(self) -> str:
        return (
            f"promote in {self.environment}: {self.current or '(none)'} → {self.deployment} "
            f"(scale_down_previous_deployment={_render(self.scale_down_previous_deployment)}, "
            f"preserve_env_instance_type={_render(self.preserve_env_instance_type)})"
        )


@dataclass(frozen=True)
class CancelPromotion(Action):
    """Stop this CR's own promotion in progress that the spec no longer asks for."""

    type: ClassVar[str] = "cancel-promotion"
    environment: str
    deployment: str | None  # the candidate being promoted
    deployment_id: str | None

    def describe(self) -> str:
        return f"cancel promotion in {self.environment} of {self.deployment or '(unknown)'}"


@dataclass(frozen=True)
class PromotionSignal(Action):
    """A signal to this CR's own stepped promotion in progress (docs/contract.md 14): the
    hold, the Gate's pause and resume, the analysis' rollback."""

    verb: ClassVar[str]
    environment: str
    deployment: str | None  # the candidate being promoted
    deployment_id: str | None

    def describe(self) -> str:
        return f"{self.verb} promotion in {self.environment} of {self.deployment or '(unknown)'}"


@dataclass(frozen=True)
class PausePromotion(PromotionSignal):
    type: ClassVar[str] = "pause-promotion"
    verb: ClassVar[str] = "pause"


@dataclass(frozen=True)
class ResumePromotion(PromotionSignal):
    type: ClassVar[str] = "resume-promotion"
    verb: ClassVar[str] = "resume"


@dataclass(frozen=True)
class RollBackPromotion(PromotionSignal):
    type: ClassVar[str] = "rollback-promotion"
    verb: ClassVar[str] = "roll back"


@dataclass(frozen=True)
class RollForwardPromotion(PromotionSignal):
    type: ClassVar[str] = "roll-forward-promotion"
    verb: ClassVar[str] = "roll forward"


@dataclass(frozen=True)
class Retry(Action):
    type: ClassVar[str] = "retry"
    deployment: str
    deployment_id: str

    def describe(self) -> str:
        return f"retry failed deployment {self.deployment}"


@dataclass(frozen=True)
class Activate(Action):
    """Activate an INACTIVE deployment: the source to promote, or the current one (reactivate)."""

    type: ClassVar[str] = "activate"
    deployment: str
    deployment_id: str
    reactivate: bool

    def describe(self) -> str:
        what = "reactivate the current deployment" if self.reactivate else "activate source"
        return f"{what} {self.deployment}"


@dataclass(frozen=True)
class Deactivate(Action):
    type: ClassVar[str] = "deactivate"
    deployment: str
    deployment_id: str

    def describe(self) -> str:
        return f"deactivate deployment {self.deployment}"


@dataclass(frozen=True)
class ScaleInOrphan(Action):
    type: ClassVar[str] = "scale-in-orphan"
    deployment: str
    deployment_id: str
    autoscaling_settings: dict[str, Any]

    def describe(self) -> str:
        return f"scale in orphan {self.deployment} {_settings(self.autoscaling_settings)}"


@dataclass(frozen=True)
class DeleteOrphan(Action):
    type: ClassVar[str] = "delete-orphan"
    deployment: str
    deployment_id: str

    def describe(self) -> str:
        return f"delete orphan {self.deployment}"


@dataclass(frozen=True)
class DeleteModel(Action):
    type: ClassVar[str] = "delete-model"
    model: str
    model_id: str
    deletion_policy: str
    guardrails: str  # "clear": no environment serves; "not checked": policy Delete

    def describe(self) -> str:
        return (
            f"delete model {self.model} ({self.model_id}), deletion_policy "
            f"{self.deletion_policy}, guardrails {self.guardrails}"
        )


@dataclass(frozen=True)
class UpsertSecret(Action):
    """Write a Baseten secret's value. The value is never part of a plan."""

    type: ClassVar[str] = "upsert-secret"
    secret: str
    team: str | None  # None: the workspace's (the key's primary team)

    def describe(self) -> str:
        return f"upsert secret {self.secret}{_in_team(self.team)} (value not shown)"


@dataclass(frozen=True)
class DeleteSecret(Action):
    type: ClassVar[str] = "delete-secret"
    secret: str
    team: str | None

    def describe(self) -> str:
        return f"delete secret {self.secret}{_in_team(self.team)}"


def _in_team(team: str | None) -> str:
    return f" in team {team}" if team is not None else ""
