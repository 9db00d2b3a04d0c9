"""Wiring: indexes, the ConfigMap watch, push outcomes into the queue, and run_operator's
config errors."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.pool import BasetenClientPool
from baseten_operator.config import OperatorOptions
from baseten_operator.controller.basetenmodel.ownership import CLAIM_INDEX
from baseten_operator.controller.basetenmodel.setup import (
    MODEL_NAME_INDEX,
    SETUP_CONFIGMAP_INDEX,
    TenancySources,
    build_controller,
    enqueue_push_outcome,
    work_queue,
)
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.main import build_operator, remote_url, run_operator
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.controller import Request
from baseten_operator.runtime.kubeconfig import ClusterAccess, FixedCredentials
from baseten_operator.runtime.recorder import FakeRecorder
from baseten_operator.truss.pusher import PushOutcome


class FakeInformer:
    def __init__(self, objects: list[dict[str, Any]] | None = None) -> None:
        self.objects = objects or []
        self.indexers: dict[str, Any] = {}
        self.handlers: list[dict[str, Any]] = []

    def add_indexer(self, name: str, fn: Any) -> None:
        self.indexers[name] = fn

    def add_event_handler(self, on_add=None, on_update=None, on_delete=None) -> None:
        self.handlers.append({"add": on_add, "update": on_update, "delete": on_delete})

    def has_synced(self) -> bool:
        return True

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return None

    def by_index(self, index: str, value: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if value in self.indexers[index](o)]

    def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return [o for o in self.objects if namespace in (None, o["metadata"].get("namespace"))]

    def fire(self, kind: str, *objs: dict[str, Any]) -> None:
        for handlers in self.handlers:
            if handlers[kind] is not None:
                handlers[kind](*objs)


def model(name: str, configmap: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"modelName": "m", "environment": {"name": "p"}}
    if configmap:
        spec["trussConfig"] = {"setupScript": {"configMapRef": {"name": configmap, "key": "k"}}}
    return {"metadata": {"namespace": "ns", "name": name}, "spec": spec}


def build(
    models: FakeInformer,
    configmaps: FakeInformer,
    tenancy: TenancySources | None = None,
    queue: Any = None,
):
    return build_controller(
        models=models,  # type: ignore[arg-type]
        configmaps=configmaps,  # type: ignore[arg-type]
        kube=None,
        baseten=None,
        recorder=FakeRecorder(),
        clock=FakeClock(),
        timing=Timing(),
        tenancy=tenancy,
        queue=queue,
    )


def drain(controller) -> set[Request]:
    queued = set()
    while len(controller.queue):
        item, _ = controller.queue.get()
        queued.add(item)
        controller.queue.done(item)
    return queued


def test_configmap_change_enqueues_every_model_using_it() -> None:
    models = FakeInformer([model("a", "setup"), model("b", "setup"), model("c", "other")])
    configmaps = FakeInformer()
    controller = build(models, configmaps)
    assert set(models.indexers) == {MODEL_NAME_INDEX, SETUP_CONFIGMAP_INDEX, CLAIM_INDEX}
    configmaps.handlers[0]["add"]({"metadata": {"namespace": "ns", "name": "setup"}})
    queued = set()
    while len(controller.queue):
        item, _ = controller.queue.get()
        queued.add(item)
        controller.queue.done(item)
    assert queued == {Request("ns", "a"), Request("ns", "b")}


def test_a_push_outcome_enqueues_the_model_on_the_controllers_queue() -> None:
    queue = work_queue(FakeClock())
    report = enqueue_push_outcome(queue)  # what the pusher gets, before the controller exists
    controller = build(FakeInformer(), FakeInformer(), queue=queue)
    assert controller.queue is queue
    report(PushOutcome("ns/a", "depl-x", True, None, "m1", "d1", 1.0))
    assert drain(controller) == {Request("ns", "a")}


def test_remote_url_drops_v1() -> None:
    assert remote_url("http://127.0.0.1:9000/v1") == "http://127.0.0.1:9000"
    assert remote_url("https://api.baseten.co/v1/") == "https://api.baseten.co"


def test_missing_api_key_exits_2(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.delenv("BASETEN_API_KEY", raising=False)
    assert run_operator(OperatorOptions(log_format="console")) == 2
    assert "BASETEN_API_KEY" in capsys.readouterr().err


def test_an_unusable_kubeconfig_exits_2_saying_why(
    monkeypatch: pytest.MonkeyPatch, capsys, tmp_path
) -> None:
    monkeypatch.setenv("BASETEN_API_KEY", "k")
    (tmp_path / "config").write_text("current-context: gone\ncontexts: []\n")
    options = OperatorOptions(log_format="console", kubeconfig=str(tmp_path / "config"))
    assert run_operator(options) == 2
    assert "no entry named 'gone' in contexts" in capsys.readouterr().err


def test_model_gauges_follow_the_pass(h) -> None:
    from baseten_operator.runtime import metrics

    h.steady_world()
    h.create()
    h.run()
    labels = {
        "namespace": "default",
        "name": "my-model",
        "model": "my-llm",
        "environment": "production",
    }
    assert metrics.REGISTRY.get_sample_value("baseten_model_ready", labels) == 1
    assert metrics.REGISTRY.get_sample_value("baseten_model_active_replicas", labels) == 3
    h.kube.objects.clear()
    h.run()
    assert metrics.REGISTRY.get_sample_value("baseten_model_ready", labels) is None


def test_a_pass_stuck_for_two_baseten_deadlines_fails_liveness(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BASETEN_API_KEY", "k")
    clock = FakeClock()
    options = OperatorOptions(
        metrics_bind_address="0", health_probe_bind_address="0", baseten_timeout=30
    )
    never_contacted = ClusterAccess(  # nothing is started
        server="http://127.0.0.1:9",
        tls=None,
        server_hostname=None,
        proxy=None,
        credentials=FixedCredentials({}),
    )
    manager = build_operator(
        options,
        kube=KubeClient(never_contacted),
        baseten=BasetenClient("k", "http://127.0.0.1:9/v1"),
        clock=clock,
    )
    responsive = manager._liveness_checks["workers-responsive"]
    controller, _secret_controller = manager._work
    queue = controller.queue  # type: ignore[attr-defined]
    assert responsive()
    queue.add(Request("ns", "slow"))
    queue.get()  # a worker took it and is still in its pass
    clock.advance(60)
    assert responsive()
    clock.advance(1)
    assert not responsive()


def namespace(name: str, **annotations: str) -> dict[str, Any]:
    full = {f"models.baseten.com/{key.replace('_', '-')}": v for key, v in annotations.items()}
    return {"metadata": {"name": name, "annotations": full}}


class TenancyWorld:
    def __init__(self) -> None:
        self.models = FakeInformer(
            [
                model("a", None),
                {**model("b", None), "metadata": {"namespace": "other", "name": "b"}},
            ]
        )
        self.namespaces = FakeInformer([namespace("ns", api_key_secret="ns-key")])
        self.secrets = FakeInformer()
        self.pool = BasetenClientPool(object(), lambda key: object())
        sources = TenancySources(self.namespaces, self.secrets, self.pool, "baseten-system")  # type: ignore[arg-type]
        self.controller = build(self.models, FakeInformer(), sources)


def test_a_policy_change_wakes_the_namespaces_crs_and_their_rivals() -> None:
    world = TenancyWorld()
    before = namespace("ns")
    world.namespaces.fire("update", before, before)
    assert drain(world.controller) == set()  # no policy change: nothing to do
    world.namespaces.fire("update", before, namespace("ns", allowed_models="x"))
    assert drain(world.controller) == {Request("ns", "a"), Request("other", "b")}


def test_an_owner_leaving_wakes_the_other_claimants() -> None:
    world = TenancyWorld()
    owner = model("a", None)
    world.models.fire("update", owner, owner)  # the claim did not change
    drain(world.controller)  # the primary watch enqueues it; tenancy adds nothing
    world.models.objects.remove(owner)
    world.models.fire("delete", owner)
    assert Request("other", "b") in drain(world.controller)


def test_a_namespace_arriving_wakes_its_crs_waiting_for_it() -> None:
    world = TenancyWorld()
    world.namespaces.fire("add", namespace("ns"))
    assert drain(world.controller) == {Request("ns", "a"), Request("other", "b")}


def test_a_cr_moving_to_another_claim_wakes_both_claims() -> None:
    world = TenancyWorld()
    elsewhere = {
        "metadata": {"namespace": "x", "name": "c"},
        "spec": {"modelName": "n", "environment": {"name": "p"}},
    }
    moved = {**elsewhere, "spec": {"modelName": "m", "environment": {"name": "p"}}}
    world.models.objects.append(elsewhere)
    world.models.fire("update", elsewhere, moved)
    # The claim "m"/"p" it joins: its owner (ns/a) may have to stand down for it.
    assert {Request("ns", "a"), Request("other", "b")} <= drain(world.controller)


def test_a_key_secret_change_wakes_the_namespaces_naming_it() -> None:
    world = TenancyWorld()
    old = {"metadata": {"name": "ns-key"}, "data": {"api-key": "YQ=="}}
    new = {"metadata": {"name": "ns-key"}, "data": {"api-key": "Yg=="}}
    world.secrets.fire("update", old, new)
    assert drain(world.controller) == {Request("ns", "a"), Request("other", "b")}
    world.pool.client_for("ns-key", "b")
    world.secrets.fire("delete", new)
    assert len(world.pool) == 0


def test_require_namespace_policy_is_a_run_flag() -> None:
    from baseten_operator.cli import build_parser, options_from_args

    parse = build_parser().parse_args
    assert options_from_args(parse(["run"])).require_namespace_policy is False
    options = options_from_args(parse(["run", "--require-namespace-policy"]))
    assert options.require_namespace_policy is True
