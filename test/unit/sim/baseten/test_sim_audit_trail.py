"""Baseten's audit log of a model in the simulator, on a fake clock: who changed what (a UI
user, an API key, Baseten itself), what the entry says, and the listing's filters and pages."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten import BasetenSimulator
from baseten_operator.sim.baseten.audit_logs import AuditQuery
from baseten_operator.sim.baseten.audit_trail import acting_as, api_key_actor, key_prefix
from baseten_operator.sim.baseten.errors import SimError
from baseten_operator.sim.baseten.lifecycle import LifecycleDurations
from baseten_operator.sim.baseten.records import SCHEDULE_OVERRIDES

ENV = "production"
D = LifecycleDurations()
SCHEDULE = {
    "timezone": "Europe/Paris",
    "schedules": [
        {
            "name": "office-hours",
            "enabled": True,
            "cadence": "DAILY",
            "weekdays": ["MONDAY"],
            "start_hour": 9,
            "start_minute": 0,
            "end_hour": 18,
            "end_minute": 0,
            # Every override sent, null where the environment's value applies.
            "autoscaling_settings": {
                **dict.fromkeys(SCHEDULE_OVERRIDES),
                "min_replica": 2,
                "max_replica": 4,
            },
        }
    ],
}


@pytest.fixture
def sim(clock: FakeClock) -> BasetenSimulator:
    """Never started: the control methods and the engine, without HTTP."""
    return BasetenSimulator("sk", clock=clock)


class Model:
    def __init__(self, sim: BasetenSimulator) -> None:
        self.sim = sim
        self.id = sim.seed_model("llama")["id"]
        self.v1 = sim.seed_deployment(self.id, "v1", autoscaling_settings={"min_replica": 1})["id"]
        self.v2 = sim.seed_deployment(self.id, "v2", autoscaling_settings={"min_replica": 1})["id"]
        sim.seed_environment(
            self.id,
            ENV,
            current_deployment_id=self.v1,
            autoscaling_settings={"min_replica": 1, "max_replica": 3},
            promotion_settings={"rolling_deploy": True},
        )

    def entries(self, **params: Any) -> list[dict]:
        return self.page(**params)["items"]

    def page(self, **params: Any) -> dict:
        query = {k: v if isinstance(v, list) else [str(v)] for k, v in params.items()}
        return self.sim.engine.list_audit_logs(self.id, AuditQuery.parse(query))


@pytest.fixture
def model(sim: BasetenSimulator) -> Model:
    return Model(sim)


def test_seeding_is_not_audited(model: Model) -> None:
    assert model.entries() == []


def test_a_ui_change_names_the_user_and_carries_the_settings_before_and_after(
    model: Model, clock: FakeClock
) -> None:
    clock.advance(10)
    model.sim.ui_update_environment(
        model.id, ENV, autoscaling_settings={"min_replica": 2}, email="oncall@example.com"
    )
    [entry] = model.entries()
    assert entry["event_type"] == "ENVIRONMENT_UPDATED"
    assert entry["source"] == "UI"
    assert entry["actor"] == {
        "type": "USER",
        "email": "oncall@example.com",
        "api_key_prefix": None,
        "api_key_name": None,
    }
    assert entry["created"] == "2026-01-01T00:00:10.000000Z"
    data = entry["event_data"]
    assert (data["environment_name"], data["model_name"]) == (ENV, "llama")
    assert (data["min_replica"], data["previous_settings"]["min_replica"]) == (2, 1)
    assert data["max_replica"] == data["previous_settings"]["max_replica"] == 3
    assert data["rolling_deploy"] is True
    assert data["schedules"] is None  # the update did not touch them


def test_the_default_ui_user(model: Model) -> None:
    model.sim.ui_update_environment(model.id, ENV, promotion_settings={"rolling_deploy": False})
    assert model.entries()[0]["actor"]["email"] == "ui-user@example.com"


def test_a_schedule_change_lists_what_happened_to_each_schedule(model: Model) -> None:
    model.sim.ui_update_environment(model.id, ENV, autoscaling_schedule_settings=SCHEDULE)
    [created] = model.entries()[0]["event_data"]["schedules"]
    assert created["action"] == "CREATED" and created["previous"] is None
    assert created["current"]["schedule_name"] == "office-hours"
    assert created["current"]["timezone"] == "Europe/Paris"
    assert (created["current"]["min_replica"], created["current"]["start_hour"]) == (2, 9)
    schedule_id = created["schedule_id"]
    model.sim.ui_update_environment(
        model.id, ENV, autoscaling_schedule_settings={"delete_schedules": [schedule_id]}
    )
    [deleted] = model.entries()[0]["event_data"]["schedules"]
    assert (deleted["action"], deleted["schedule_id"], deleted["current"]) == (
        "DELETED",
        schedule_id,
        None,
    )


def test_an_api_update_is_audited_when_applied_with_the_key_that_asked(
    model: Model, clock: FakeClock
) -> None:
    """Baseten applies an environment update asynchronously: the entry comes when it is
    applied, still naming the requester whatever request happens to apply it."""
    with acting_as(api_key_actor("AbCd1234.rest-of-the-secret", "ci-deployer")):
        model.sim.engine.update_environment(model.id, ENV, {"max_replica": 5})
    assert model.entries() == []
    clock.advance(D.environment_update)
    [entry] = model.entries()
    assert (entry["source"], entry["actor"]["type"]) == ("API", "API_KEY")
    assert (entry["actor"]["api_key_prefix"], entry["actor"]["api_key_name"]) == (
        "AbCd1234",
        "ci-deployer",
    )
    assert entry["actor"]["email"] is None
    assert entry["event_data"]["max_replica"] == 5


def test_promotions_and_their_signals_are_audited_in_order(model: Model, clock: FakeClock) -> None:
    model.sim.ui_promote(model.id, ENV, model.v2)
    for signal in ("pause_promotion", "resume_promotion", "force_cancel_promotion"):
        clock.advance(1)
        model.sim.ui_signal_promotion(model.id, ENV, signal)
    entries = model.entries(direction="ASC")
    assert [(e["event_type"], e["event_data"].get("action")) for e in entries] == [
        ("MODEL_DEPLOYMENT_PROMOTED", None),
        ("MODEL_PROMOTION_CONTROL_ACTION", "PAUSE"),
        ("MODEL_PROMOTION_CONTROL_ACTION", "RESUME"),
        ("MODEL_PROMOTION_CONTROL_ACTION", "FORCE_CANCEL"),
    ]
    assert {e["event_data"]["deployment_id"] for e in entries} == {model.v2}
    assert {e["event_data"]["environment_name"] for e in entries} == {ENV}


def test_a_refused_signal_is_not_audited(model: Model) -> None:
    with pytest.raises(SimError):
        model.sim.ui_signal_promotion(model.id, ENV, "pause_promotion")
    with pytest.raises(SimError, match="Unknown signal"):
        model.sim.ui_signal_promotion(model.id, ENV, "rewind_promotion")
    assert model.entries() == []


def test_baseten_itself_is_the_actor_of_an_inactivity_deactivation(model: Model) -> None:
    model.sim.deactivate(model.v2)
    [entry] = model.entries()
    assert (entry["event_type"], entry["source"], entry["actor"]["type"]) == (
        "MODEL_DEPLOYMENT_DEACTIVATED",
        "SYSTEM",
        "BASETEN_SYSTEM",
    )


def test_a_deployments_autoscaling_change_from_the_ui(model: Model) -> None:
    model.sim.ui_update_deployment_autoscaling(model.id, model.v2, {"max_replica": 7})
    [entry] = model.entries(event_type_groups="AUTOSCALING_SETTINGS")
    data = entry["event_data"]
    assert (data["deployment_name"], data["max_replica"]) == ("v2", 7)
    assert data["previous_settings"]["max_replica"] == 1


def changes(model: Model, clock: FakeClock, n: int) -> None:
    """`n` UI changes of the environment, a second apart (max_replica 2, 3, ...)."""
    for i in range(n):
        clock.advance(1)
        model.sim.ui_update_environment(model.id, ENV, autoscaling_settings={"max_replica": i + 2})


def test_newest_first_by_default_and_pages_follow_the_cursor(
    model: Model, clock: FakeClock
) -> None:
    changes(model, clock, 5)
    first = model.page(limit=2)
    assert [e["event_data"]["max_replica"] for e in first["items"]] == [6, 5]
    assert first["pagination"]["has_more"] is True
    # The cursor keeps the direction: one asked for with it is ignored.
    second = model.page(limit=2, cursor=first["pagination"]["cursor"], direction="ASC")
    third = model.page(limit=2, cursor=second["pagination"]["cursor"])
    assert [e["event_data"]["max_replica"] for e in second["items"] + third["items"]] == [4, 3, 2]
    assert third["pagination"] == {"has_more": False, "cursor": None}
    assert len(model.entries()) == 5  # the default limit is 20


def test_filters_by_group_source_and_window(model: Model, clock: FakeClock) -> None:
    changes(model, clock, 3)  # at 1, 2 and 3 s
    model.sim.ui_promote(model.id, ENV, model.v2)
    assert [e["event_type"] for e in model.entries(event_type_groups="PROMOTED")] == [
        "MODEL_DEPLOYMENT_PROMOTED"
    ]
    both = model.entries(event_type_groups=["PROMOTED", "ENVIRONMENT_SETTINGS"])
    assert len(both) == 4
    assert model.entries(event_type_groups="SECRETS") == []
    assert model.entries(sources="API") == []
    start = int(clock.now() * 1000) - 1000
    assert [e["event_data"].get("max_replica") for e in model.entries(
        start_epoch_millis=start, end_epoch_millis=start
    )] == [3]  # fmt: skip
    assert model.entries(deployment_ids=model.v2)[0]["event_type"] == "MODEL_DEPLOYMENT_PROMOTED"
    assert model.entries(user_ids="u1") == []


@pytest.mark.parametrize(
    ("params", "refusal"),
    [
        ({"limit": 0}, "limit must be between 1 and 200"),
        ({"limit": 201}, "limit must be between 1 and 200"),
        ({"event_type_groups": "MISC"}, "Unknown event_type_groups value 'MISC'"),
        ({"sources": "CLI"}, "Unknown sources value 'CLI'"),
        ({"cursor": "not-a-cursor"}, "Invalid cursor"),
        ({"direction": "UP"}, "direction must be DESC or ASC"),
    ],
)
def test_a_query_outside_the_spec_is_a_bad_request(
    model: Model, params: dict, refusal: str
) -> None:
    with pytest.raises(SimError, match=refusal) as refused:
        model.entries(**params)
    assert refused.value.status == 400


@pytest.mark.parametrize(
    ("key", "prefix"), [("AbCd1234.secret-part", "AbCd1234"), ("sim-api-key-long", "sim-api-")]
)
def test_an_api_key_is_shown_by_its_prefix(key: str, prefix: str) -> None:
    assert key_prefix(key) == prefix
