"""The plan under the run's tenancy rules: namespace policy, one owner per environment,
siblings in every namespace, a namespace's own key and team, and a namespace not seen yet."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import (
    AutoscalingSettingsV1,
    DeploymentV1,
    EnvironmentV1,
    ModelV1,
    TeamV1,
)
from baseten_operator.plan.actions import DeleteModel, Promote, ScaleInOrphan
from baseten_operator.plan.inputs import ConfigMaps
from baseten_operator.plan.planner import ModelPlan, Planner
from baseten_operator.plan.render import to_json, to_table
from baseten_operator.plan.tenancy import POLICY_UNKNOWN_NOTE, TenancyView
from baseten_operator.plan.world import RecordingBaseten
from baseten_operator.runtime.clock import FakeClock

OPERATOR_NAMESPACE = "baseten-system"
OLDER = "2025-06-01T00:00:00Z"


class Baseten:
    """One model `llama` (m1, in team `search`): v1 serves production, v2 is new, `next`
    is attached to nothing. Every call is remembered in `calls`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        autoscaling = AutoscalingSettingsV1(min_replica=1, max_replica=2)
        self.v1 = DeploymentV1(
            id="d1", name="v1", status="ACTIVE", active_replica_count=1, environment="production"
        )
        self.v2 = DeploymentV1(id="d2", name="v2", status="ACTIVE", environment=None)
        self.next = DeploymentV1(
            id="d3",
            name="next",
            status="ACTIVE",
            environment=None,
            is_production=False,
            is_development=False,
            created_at=datetime(2025, 1, 1, tzinfo=UTC),
            autoscaling_settings=autoscaling,
        )
        self.base_url = "http://unused"

    def __getattr__(self, name: str) -> Any:
        reads = {
            "find_model": lambda n: ModelV1(id="m1", name=n) if n == "llama" else None,
            "list_teams": lambda n=None: [TeamV1(id="t-search", name="search")],
            "list_team_models": lambda team_id, n=None: [ModelV1(id="m1", name="llama")],
            "get_environment": self._environment,
            "list_environments": lambda model_id: [self._environment(model_id, "production")],
            "find_deployment": lambda model_id, n: {d.name: d for d in self._all()}.get(n),
            "get_deployment": lambda model_id, i: {d.id: d for d in self._all()}[i],
            "list_deployments": lambda model_id, n=None: self._all(),
        }
        if name not in reads:
            raise AttributeError(name)

        def call(*args: Any) -> Any:
            self.calls.append((name, args))
            return reads[name](*args)

        return call

    def _all(self) -> list[DeploymentV1]:
        return [self.v1, self.v2, self.next]

    def _environment(self, model_id: str, env_name: str) -> EnvironmentV1:
        if env_name != "production":
            raise BasetenAPIError(404, "no such environment")
        return EnvironmentV1.model_validate(
            {
                "name": env_name,
                "current_deployment": self.v1.model_dump(),
                "candidate_deployment": None,
                "autoscaling_settings": {"min_replica": 1, "max_replica": 2},
            }
        )


class Objects:
    """An ObjectCache over a dict keyed by name (namespaces) or (namespace, name)."""

    def __init__(self, items: dict[Any, dict[str, Any]]) -> None:
        self.items = items

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.items.get(name if namespace is None else (namespace, name))


def namespace(name: str, **annotations: str) -> dict[str, Any]:
    full = {f"models.baseten.com/{k.replace('_', '-')}": v for k, v in annotations.items()}
    return {"metadata": {"name": name, "annotations": full}}


def key_secret(name: str, api_key: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
        "data": {"api-key": base64.b64encode(api_key.encode()).decode()},
    }


def cr(
    ns: str = "ns", name: str = "m", source: str = "v2", created: str | None = None, **spec: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if created is not None:
        meta["creationTimestamp"] = created
    return {
        "apiVersion": "models.baseten.com/v1alpha1",
        "kind": "BasetenModel",
        "metadata": meta,
        "spec": {
            "modelName": "llama",
            "sourceDeploymentName": source,
            "environment": {"name": "production"},
            **spec,
        },
    }


class World:
    """A cluster for the plan: namespaces, key Secrets, live CRs; clients by key."""

    def __init__(self, *namespaces: dict[str, Any], live: tuple[dict[str, Any], ...] = ()):
        self.baseten = Baseten()
        self.keyed: dict[str, Baseten] = {}
        self.namespaces = {n["metadata"]["name"]: n for n in namespaces}
        self.secrets: dict[Any, dict[str, Any]] = {}
        self.live = list(live)
        self.require_policy = False

    def client_for(self, api_key: str) -> Baseten:
        return self.keyed.setdefault(api_key, Baseten())

    def plan(self, obj: dict[str, Any], **kwargs: Any) -> ModelPlan:
        view = TenancyView(
            namespaces=Objects(self.namespaces),
            secrets=Objects(self.secrets),
            operator_namespace=OPERATOR_NAMESPACE,
            live_models=self.live,
            require_policy=self.require_policy,
        )
        planner = Planner(
            RecordingBaseten(self.baseten),  # type: ignore[arg-type]
            ConfigMaps(),
            FakeClock(),
            tenancy=view,
            namespace_client=self.client_for,  # type: ignore[arg-type]
        )
        (result,) = planner.plan([obj], **kwargs)
        return result


def test_a_policy_violation_is_a_blocker_with_its_exact_text_and_no_baseten_call() -> None:
    world = World(namespace("ns", allowed_models="search-*"))
    result = world.plan(cr())
    text = (
        "namespace policy: model 'llama' is not allowed in namespace ns "
        "(models.baseten.com/allowed-models: search-*)"
    )
    assert result.actions == [] and result.blockers == [text]
    assert result.status == {"deploymentStatus": "FAILED", "message": text}
    assert [(e.reason, e.message) for e in result.events] == [("PolicyViolation", text)]
    assert world.baseten.calls == []


def test_require_namespace_policy_refuses_a_namespace_without_allowed_models() -> None:
    world = World(namespace("ns"))
    world.require_policy = True
    result = world.plan(cr())
    assert result.blockers == [
        "namespace policy: model 'llama' is not allowed in namespace ns "
        "(models.baseten.com/allowed-models: (unset))"
    ]


def test_a_live_cr_in_another_namespace_owns_the_environment() -> None:
    world = World(
        namespace("ns"),
        namespace("team-a"),
        live=(cr("team-a", "owner", source="v1", created=OLDER),),
    )
    result = world.plan(cr())
    text = "environment production of model 'llama' is managed by team-a/owner"
    assert result.actions == [] and result.blockers == [text]
    assert result.status["deploymentStatus"] == "CONFLICT"
    assert world.baseten.calls == []


def test_a_new_manifest_is_the_youngest_claimant() -> None:
    """A CR not created yet has no creationTimestamp; it will be the youngest, never the
    owner ahead of a live CR (an empty timestamp would sort first)."""
    live = cr("team-a", "owner", created="2025-12-31T00:00:00Z")  # before the clock's now
    world = World(namespace("ns"), namespace("team-a"), live=(live,))
    result = world.plan(cr())
    assert result.status["deploymentStatus"] == "CONFLICT"


def test_the_planned_version_of_a_live_cr_replaces_it() -> None:
    live = cr("ns", "m", source="v1", created=OLDER)
    world = World(namespace("ns"), live=(live,))
    result = world.plan(cr("ns", "m", created=OLDER))
    assert result.actions == [Promote("production", "v1", "v2", "d2", True, True)]


def cleanup_spec() -> dict[str, Any]:
    return {"orphanDeploymentCleanup": {"scaleToZero": True, "intervalMinutes": 10}}


def test_a_live_cr_in_another_namespace_protects_its_source_from_orphan_cleanup() -> None:
    steady = cr(source="v1", **cleanup_spec())
    alone = World(namespace("ns")).plan(steady)
    assert alone.actions == [ScaleInOrphan("next", "d3", {"min_replica": 0})]

    sibling = cr("team-b", "next", source="next", environment={"name": "staging"})
    world = World(namespace("ns"), namespace("team-b"), live=(sibling,))
    result = world.plan(steady)
    assert result.actions == []
    assert "next" not in {o.name for o in result.orphans}


def test_a_live_cr_in_another_namespace_blocks_deleting_the_shared_model() -> None:
    sibling = cr("team-b", "other", environment={"name": "staging"})
    world = World(namespace("ns"), namespace("team-b"), live=(sibling,))
    result = world.plan(cr(source="v1", deletionPolicy="Delete"), destroy=True)
    text = "deletion blocked: model 'llama' is still managed by team-b/other (staging environment)"
    assert result.actions == [] and result.blockers == [text]
    alone = World(namespace("ns")).plan(cr(source="v1", deletionPolicy="Delete"), destroy=True)
    assert alone.actions == [DeleteModel("llama", "m1", "Delete", "not checked")]


def test_a_namespace_key_and_team_serve_the_plan_and_record_like_the_operator_key() -> None:
    world = World(namespace("ns", api_key_secret="ns-key", team="search"))
    world.secrets[(OPERATOR_NAMESPACE, "ns-key")] = key_secret("ns-key", "key-of-ns")
    result = world.plan(cr())
    assert result.actions == [Promote("production", "v1", "v2", "d2", True, True)]
    assert world.baseten.calls == []
    calls = [name for name, _ in world.keyed["key-of-ns"].calls]
    assert calls[:2] == ["list_teams", "list_team_models"]
    assert "find_model" not in calls


def test_a_missing_key_secret_is_a_blocker_naming_it() -> None:
    world = World(namespace("ns", api_key_secret="ns-key"))
    result = world.plan(cr())
    assert result.blockers == [f"API key Secret {OPERATOR_NAMESPACE}/ns-key not found"]
    assert world.baseten.calls == [] and world.keyed == {}


@pytest.mark.parametrize("destroy", [False, True])
def test_a_namespace_not_in_the_cluster_waits_and_says_why(destroy: bool) -> None:
    world = World()
    result = world.plan(cr(deletionPolicy="Delete"), destroy=destroy)
    assert result.actions == [] and result.blockers == []
    assert result.notes == [
        "waiting: namespace ns not found, so its policy is unknown: the operator makes no "
        "Baseten call for its BasetenModels until it exists"
    ]
    assert world.baseten.calls == []


def test_without_the_cluster_the_plan_says_no_policy_was_checked() -> None:
    planner = Planner(RecordingBaseten(Baseten()), ConfigMaps(), FakeClock())  # type: ignore[arg-type]
    first, second = planner.plan([cr("ns", "a"), cr("ns", "b", created=OLDER)])
    assert first.status["deploymentStatus"] == "CONFLICT"  # claims among the input still count
    assert second.actions == [Promote("production", "v1", "v2", "d2", True, True)]
    notes = planner.tenancy.notes()
    assert notes == [POLICY_UNKNOWN_NOTE]
    assert to_table([second], notes).startswith(f"note: {POLICY_UNKNOWN_NOTE}\n\n")
    assert f'"notes": [\n    "{POLICY_UNKNOWN_NOTE}"' in to_json([second], notes)


def test_a_failed_read_makes_the_plan_an_error_not_a_blocker() -> None:
    class Unauthorized(Baseten):
        def __getattr__(self, name: str) -> Any:
            def refuse(*args: Any) -> Any:
                raise BasetenAPIError(401, "invalid API key")

            return refuse

    planner = Planner(RecordingBaseten(Unauthorized()), ConfigMaps(), FakeClock())  # type: ignore[arg-type]
    (result,) = planner.plan([cr()])
    assert result.error == (
        "a Baseten read failed, so this plan is incomplete: HTTP 401: invalid API key"
    )
