from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import structlog

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.controller import (
    Controller,
    ReportedError,
    Request,
    Result,
    TerminalError,
)
from baseten_operator.runtime.fence import NotLeader
from baseten_operator.runtime.logging import bound_keys
from baseten_operator.runtime.resource import Resource
from baseten_operator.runtime.workqueue import DEFAULT_PRIORITY, LOW_PRIORITY

WaitUntil = Callable[..., None]
Sample = Callable[..., float]


class ScriptedReconciler:
    """Answers each pass from a per-key script (the last answer repeats); records calls."""

    def __init__(self, script: dict[str, list[Any]] | None = None) -> None:
        self.script = script or {}
        self.calls: list[Request] = []
        self.contexts: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def reconcile(self, request: Request) -> Result:
        with self._lock:
            self.calls.append(request)
            self.contexts.append(bound_keys())
            answers = self.script.get(str(request), [Result()])
            answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def count(self, key: str) -> int:
        with self._lock:
            return sum(1 for request in self.calls if str(request) == key)


class GatedReconciler(ScriptedReconciler):
    """A ScriptedReconciler whose `ns/blocker` pass waits for `release`: with one worker,
    whatever is queued meanwhile runs afterwards in the queue's order."""

    def __init__(self, script: dict[str, list[Any]] | None = None) -> None:
        super().__init__(script)
        self.release = threading.Event()
        self.blocked = threading.Event()

    def reconcile(self, request: Request) -> Result:
        if request.name == "blocker":
            self.blocked.set()
            self.release.wait(5)
        return super().reconcile(request)

    def hold_next_pass(self, controller: Controller, wait_until: WaitUntil) -> None:
        """Occupy the (one) worker with a blocked pass until `release` is set."""
        controller.enqueue(Request("ns", "blocker"))
        wait_until(self.blocked.is_set, what="the worker held")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_controller(
    informer_factory: Callable[..., Any], clock: FakeClock, unique_name: str
) -> Any:
    controllers: list[Controller] = []

    def make(
        reconciler: ScriptedReconciler, workers: int = 1, for_resource: Resource | None = None
    ) -> tuple[Controller, Any]:
        informer = informer_factory()
        controller = Controller(
            unique_name,
            informer,
            reconciler,
            max_concurrent_reconciles=workers,
            clock=clock,
            for_resource=for_resource,
        )
        controllers.append(controller)
        return controller, informer

    yield make
    for controller in controllers:
        controller.stop(drain_timeout=0)


def test_informer_events_become_requests_and_success_forgets(
    make_controller: Any, obj: Any, wait_until: WaitUntil, sample: Sample, unique_name: str
) -> None:
    reconciler = ScriptedReconciler()
    controller, informer = make_controller(reconciler)
    controller.start()
    informer.fire_add(obj("a", "ns1"))
    wait_until(lambda: reconciler.count("ns1/a") == 1)
    informer.fire_update(obj("a", "ns1"), obj("a", "ns1", generation=2))
    wait_until(lambda: reconciler.count("ns1/a") >= 2)
    informer.fire_delete(obj("gone", "ns1"))
    wait_until(lambda: reconciler.count("ns1/gone") == 1)
    assert reconciler.calls[0] == Request("ns1", "a")
    wait_until(
        lambda: sample(
            "controller_runtime_reconcile_total", controller=unique_name, result="success"
        )
        >= 3
    )
    assert controller.queue.num_requeues(Request("ns1", "a")) == 0
    assert sample("controller_runtime_max_concurrent_reconciles", controller=unique_name) == 1


def test_each_pass_logs_with_its_request_bound(
    make_controller: Any, obj: Any, wait_until: WaitUntil, unique_name: str
) -> None:
    reconciler = ScriptedReconciler()
    controller, informer = make_controller(reconciler)
    controller.start()
    informer.fire_add(obj("a", "ns1"))
    informer.fire_add(obj("b", "ns1"))
    wait_until(lambda: len(reconciler.contexts) == 2)
    first, second = reconciler.contexts
    assert first["controller"] == unique_name
    assert (first["namespace"], first["name"]) == ("ns1", "a")
    assert second["name"] == "b"
    assert first["reconcileID"] != second["reconcileID"]


def test_a_pass_logs_the_keys_controller_runtime_puts_on_a_reconcile(
    make_controller: Any, obj: Any, wait_until: WaitUntil, unique_name: str
) -> None:
    reconciler = ScriptedReconciler()
    widgets = Resource("example.com", "v1", "widgets", "Widget")
    controller, informer = make_controller(reconciler, for_resource=widgets)
    controller.start()
    informer.fire_add(obj("a", "ns1"))
    wait_until(lambda: len(reconciler.contexts) == 1)
    [keys] = reconciler.contexts
    assert {k: v for k, v in keys.items() if k != "reconcileID"} == {
        "controller": unique_name,
        "controllerGroup": "example.com",
        "controllerKind": "Widget",
        "Widget": {"name": "a", "namespace": "ns1"},
        "namespace": "ns1",
        "name": "a",
    }


def test_an_error_is_retried_with_backoff_until_success(
    make_controller: Any,
    clock: FakeClock,
    wait_until: WaitUntil,
    sample: Sample,
    unique_name: str,
) -> None:
    reconciler = ScriptedReconciler(
        {"ns/a": [RuntimeError("boom"), RuntimeError("boom"), Result()]}
    )
    controller, _ = make_controller(reconciler)
    controller.start()
    controller.enqueue(Request("ns", "a"))

    def errors() -> float:
        # Counted after the retry is scheduled: a safe point to move time.
        return sample("controller_runtime_reconcile_total", controller=unique_name, result="error")

    wait_until(lambda: errors() == 1)
    assert controller.queue.num_requeues(Request("ns", "a")) == 1
    clock.advance(0.005)  # first backoff step
    wait_until(lambda: errors() == 2)
    assert reconciler.count("ns/a") == 2
    clock.advance(0.005)
    assert reconciler.count("ns/a") == 2  # second step is 10 ms
    clock.advance(0.005)
    wait_until(lambda: reconciler.count("ns/a") == 3)
    wait_until(lambda: controller.queue.num_requeues(Request("ns", "a")) == 0)
    assert sample("controller_runtime_reconcile_errors_total", controller=unique_name) == 2
    assert sample("controller_runtime_reconcile_total", controller=unique_name, result="error") == 2


def _marker_processed(
    controller: Controller, reconciler: ScriptedReconciler, wait_until: WaitUntil
) -> None:
    """With one worker, a marker pass at the lowest priority proves nothing was queued
    before it (each priority is first in, first out)."""
    controller.queue.add(Request("ns", "marker"), LOW_PRIORITY)
    wait_until(lambda: reconciler.count("ns/marker") >= 1)


def test_a_terminal_error_is_not_retried(
    make_controller: Any,
    clock: FakeClock,
    wait_until: WaitUntil,
    sample: Sample,
    unique_name: str,
) -> None:
    reconciler = ScriptedReconciler({"ns/a": [TerminalError("spec is invalid")]})
    controller, _ = make_controller(reconciler)
    controller.start()
    controller.enqueue(Request("ns", "a"))
    wait_until(
        lambda: sample("controller_runtime_terminal_reconcile_errors_total", controller=unique_name)
        == 1
    )
    clock.advance(2000)  # beyond any backoff
    _marker_processed(controller, reconciler, wait_until)
    assert reconciler.count("ns/a") == 1
    assert controller.queue.num_requeues(Request("ns", "a")) == 0
    assert sample("controller_runtime_reconcile_errors_total", controller=unique_name) == 1


def test_requeue_after_looks_again_after_the_delay(
    make_controller: Any,
    clock: FakeClock,
    wait_until: WaitUntil,
    sample: Sample,
    unique_name: str,
) -> None:
    reconciler = ScriptedReconciler({"ns/a": [Result(requeue_after=30), Result()]})
    controller, _ = make_controller(reconciler)
    controller.start()
    controller.enqueue(Request("ns", "a"))
    wait_until(
        lambda: sample(
            "controller_runtime_reconcile_total", controller=unique_name, result="requeue_after"
        )
        == 1
    )
    clock.advance(29)
    _marker_processed(controller, reconciler, wait_until)
    assert reconciler.count("ns/a") == 1
    clock.advance(1)
    wait_until(lambda: reconciler.count("ns/a") == 2)


def test_watch_events_are_queued_ahead_of_the_initial_list_and_resyncs(
    informer_factory: Callable[..., Any], obj: Any, clock: FakeClock, unique_name: str
) -> None:
    informer = informer_factory(synced=False)
    controller = Controller(unique_name, informer, ScriptedReconciler(), clock=clock)
    informer.fire_add(obj("listed"))  # before the informer synced: the initial list
    informer.synced = True
    stored = obj("resynced", resourceVersion="7")
    informer.fire_update(stored, stored)
    informer.fire_add(obj("created"))
    informer.fire_update(obj("edited", resourceVersion="1"), obj("edited", resourceVersion="2"))
    informer.fire_delete(obj("deleted"))
    handed_out = [controller.queue.get_with_priority()[:2] for _ in range(5)]
    assert handed_out == [
        (Request("default", "created"), DEFAULT_PRIORITY),
        (Request("default", "edited"), DEFAULT_PRIORITY),
        (Request("default", "deleted"), DEFAULT_PRIORITY),
        (Request("default", "listed"), LOW_PRIORITY),
        (Request("default", "resynced"), LOW_PRIORITY),
    ]


def test_a_watch_event_runs_before_requeue_after_rechecks_that_came_due_first(
    make_controller: Any, obj: Any, clock: FakeClock, wait_until: WaitUntil
) -> None:
    recheck = Result(requeue_after=10)
    reconciler = GatedReconciler({"ns/a": [recheck, Result()], "ns/b": [recheck, Result()]})
    controller, informer = make_controller(reconciler)
    controller.start()
    controller.enqueue(Request("ns", "a"))
    controller.enqueue(Request("ns", "b"))
    wait_until(lambda: len(reconciler.calls) == 2)
    reconciler.hold_next_pass(controller, wait_until)
    clock.advance(10)  # both re-checks come due and wait in the queue
    wait_until(lambda: len(controller.queue) == 2, what="the re-checks queued")
    informer.fire_add(obj("user", "ns"))
    reconciler.release.set()
    wait_until(lambda: len(reconciler.calls) == 6)
    assert [str(request) for request in reconciler.calls[3:]] == ["ns/user", "ns/a", "ns/b"]


def test_a_failed_pass_is_retried_at_the_priority_it_ran_with(
    make_controller: Any, obj: Any, clock: FakeClock, wait_until: WaitUntil
) -> None:
    reconciler = GatedReconciler({"ns/a": [RuntimeError("boom"), Result()]})
    controller, informer = make_controller(reconciler)
    controller.queue.add(Request("ns", "a"), LOW_PRIORITY)  # a re-check, say
    controller.start()
    wait_until(lambda: controller.queue.num_requeues(Request("ns", "a")) == 1)
    reconciler.hold_next_pass(controller, wait_until)
    clock.advance(0.005)  # the retry comes due first...
    wait_until(lambda: len(controller.queue) == 1, what="the retry queued")
    informer.fire_add(obj("user", "ns"))  # ...but the watch event goes ahead of it
    reconciler.release.set()
    wait_until(lambda: len(reconciler.calls) == 4)
    assert [str(request) for request in reconciler.calls[2:]] == ["ns/user", "ns/a"]


def test_requeue_true_is_rate_limited(
    make_controller: Any,
    clock: FakeClock,
    wait_until: WaitUntil,
    sample: Sample,
    unique_name: str,
) -> None:
    reconciler = ScriptedReconciler({"ns/a": [Result(requeue=True), Result()]})
    controller, _ = make_controller(reconciler)
    controller.start()
    controller.enqueue(Request("ns", "a"))
    wait_until(
        lambda: sample(
            "controller_runtime_reconcile_total", controller=unique_name, result="requeue"
        )
        == 1
    )
    assert controller.queue.num_requeues(Request("ns", "a")) == 1
    clock.advance(0.005)
    wait_until(lambda: reconciler.count("ns/a") == 2)


def test_a_crashing_pass_does_not_kill_the_worker(
    make_controller: Any, wait_until: WaitUntil, sample: Sample, unique_name: str
) -> None:
    reconciler = ScriptedReconciler(
        {"ns/exits": [SystemExit(3)], "ns/raises": [KeyError("missing")]}
    )
    controller, _ = make_controller(reconciler, workers=1)
    controller.start()
    controller.enqueue(Request("ns", "exits"))
    controller.enqueue(Request("ns", "raises"))
    controller.enqueue(Request("ns", "fine"))
    wait_until(lambda: reconciler.count("ns/fine") == 1)
    assert sample("controller_runtime_reconcile_panics_total", controller=unique_name) == 1
    assert sample("controller_runtime_reconcile_errors_total", controller=unique_name) == 2
    assert controller.queue.num_requeues(Request("ns", "exits")) == 1


def test_secondary_watch_maps_objects_to_their_owners(
    make_controller: Any, informer_factory: Any, obj: Any, wait_until: WaitUntil
) -> None:
    reconciler = ScriptedReconciler()
    controller, _ = make_controller(reconciler)
    configmaps = informer_factory()

    def owners(cm: dict) -> list[Request]:
        owner = cm["metadata"].get("labels", {}).get("owner")
        if owner == "explode":
            raise ValueError("bad mapping")
        return [Request(cm["metadata"]["namespace"], owner)] if owner else []

    controller.watch(configmaps, owners)
    controller.start()
    configmaps.fire_add(obj("cm", "ns", labels={"owner": "explode"}))  # logged, ignored
    configmaps.fire_add(obj("cm", "ns", labels={"owner": "model-a"}))
    wait_until(lambda: reconciler.count("ns/model-a") == 1)
    configmaps.fire_update(
        obj("cm", "ns", labels={"owner": "model-a"}), obj("cm", "ns", labels={"owner": "model-b"})
    )
    wait_until(lambda: reconciler.count("ns/model-a") == 2 and reconciler.count("ns/model-b") == 1)
    assert all(request.name != "cm" for request in reconciler.calls)


def test_workers_wait_for_every_informer_to_sync(
    make_controller: Any, informer_factory: Any, wait_until: WaitUntil
) -> None:
    reconciler = ScriptedReconciler()
    controller, primary = make_controller(reconciler)
    secondary = informer_factory(synced=False)
    controller.watch(secondary, lambda o: [])
    controller.start()
    controller.enqueue(Request("ns", "a"))
    assert len(controller.queue) == 1 and not reconciler.calls
    secondary.synced = True
    wait_until(lambda: reconciler.count("ns/a") == 1)


def test_stop_waits_for_the_in_flight_pass_and_starts_no_new_one(
    make_controller: Any, wait_until: WaitUntil
) -> None:
    release = threading.Event()
    started = threading.Event()

    class Blocking(ScriptedReconciler):
        def reconcile(self, request: Request) -> Result:
            started.set()
            release.wait(10)
            return super().reconcile(request)

    reconciler = Blocking()
    controller, _ = make_controller(reconciler)
    controller.start()
    controller.enqueue(Request("ns", "a"))
    started.wait(5)
    controller.enqueue(Request("ns", "queued"))
    outcome: list[bool] = []
    stopper = threading.Thread(target=lambda: outcome.append(controller.stop(drain_timeout=60)))
    stopper.start()
    wait_until(controller.queue.shutting_down)
    assert stopper.is_alive() and not outcome
    release.set()
    stopper.join(5)
    assert outcome == [True]
    assert [str(r) for r in reconciler.calls] == ["ns/a"]
    controller.enqueue(Request("ns", "late"))
    assert len(controller.queue) == 0


def test_stop_gives_up_on_a_stuck_pass_after_the_drain_timeout(
    make_controller: Any, clock: FakeClock, wait_until: WaitUntil
) -> None:
    release = threading.Event()
    started = threading.Event()

    class Stuck(ScriptedReconciler):
        def reconcile(self, request: Request) -> Result:
            started.set()
            release.wait(10)
            return Result()

    controller, _ = make_controller(Stuck())
    controller.start()
    controller.enqueue(Request("ns", "a"))
    started.wait(5)
    outcome: list[bool] = []
    stopper = threading.Thread(target=lambda: outcome.append(controller.stop(drain_timeout=5)))
    stopper.start()
    wait_until(lambda: clock.advance(1) or not stopper.is_alive(), what="stop to give up")
    release.set()
    assert outcome == [False]


def test_workers_run_in_parallel_but_never_on_the_same_key(
    make_controller: Any, wait_until: WaitUntil, sample: Sample, unique_name: str
) -> None:
    in_flight: set[str] = set()
    overlaps: list[str] = []
    peak = [0]
    lock = threading.Lock()
    both_running = threading.Barrier(2, timeout=5)

    class Tracking(ScriptedReconciler):
        def reconcile(self, request: Request) -> Result:
            with lock:
                if str(request) in in_flight:
                    overlaps.append(str(request))
                in_flight.add(str(request))
                peak[0] = max(peak[0], len(in_flight))
            if request.name in ("first", "second"):
                both_running.wait()  # proves two passes run at the same time
            with lock:
                in_flight.discard(str(request))
            return super().reconcile(request)

    reconciler = Tracking()
    controller, informer = make_controller(reconciler, workers=4)
    controller.start()
    controller.enqueue(Request("ns", "first"))
    controller.enqueue(Request("ns", "second"))
    for _ in range(50):
        for key in range(8):
            model = {"metadata": {"name": f"m{key}", "namespace": "ns"}}
            informer.fire_update(model, model)
    wait_until(lambda: all(reconciler.count(f"ns/m{key}") >= 1 for key in range(8)))
    wait_until(lambda: sample("controller_runtime_active_workers", controller=unique_name) == 0)
    assert not overlaps
    assert peak[0] >= 2
    assert reconciler.count("ns/first") == reconciler.count("ns/second") == 1


def test_status_only_updates_are_filtered_out_but_everything_else_passes() -> None:
    from baseten_operator.runtime.controller import ignore_status_only_updates

    def cr(rv: str, **parts: Any) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "metadata": {"name": "a", "resourceVersion": rv, "generation": 1, "finalizers": []},
            "spec": {"x": 1},
            "status": {"message": "old"},
        }
        for key, value in parts.items():
            section, field = key.split("__")
            obj[section][field] = value
        return obj

    old = cr("1")
    assert not ignore_status_only_updates(old, cr("2", status__message="new"))
    assert ignore_status_only_updates(old, cr("2", spec__x=2, metadata__generation=2))
    assert ignore_status_only_updates(old, cr("2", metadata__finalizers=["f"]))
    assert ignore_status_only_updates(old, cr("2", metadata__deletionTimestamp="t"))
    assert ignore_status_only_updates(old, cr("2", metadata__labels={"a": "b"}))
    assert ignore_status_only_updates(old, cr("1"))  # a resync re-delivers the same version


def test_an_update_filter_drops_updates_it_refuses(
    informer_factory: Callable[..., Any],
    clock: FakeClock,
    unique_name: str,
    obj: Any,
    wait_until: WaitUntil,
) -> None:
    reconciler = ScriptedReconciler()
    informer = informer_factory()
    controller = Controller(
        unique_name,
        informer,
        reconciler,
        clock=clock,
        update_filter=lambda old, new: new["metadata"].get("generation") != 1,
    )
    controller.start()
    try:
        informer.fire_add(obj("a", "ns1"))
        wait_until(lambda: reconciler.count("ns1/a") == 1)
        informer.fire_update(obj("a", "ns1"), obj("a", "ns1", generation=1))  # refused
        informer.fire_add(obj("b", "ns1"))  # one worker, FIFO: a refused "a" would run first
        wait_until(lambda: reconciler.count("ns1/b") == 1)
        assert reconciler.count("ns1/a") == 1
        informer.fire_update(obj("a", "ns1"), obj("a", "ns1", generation=2))
        wait_until(lambda: reconciler.count("ns1/a") == 2)
    finally:
        controller.stop(drain_timeout=0)


def test_a_failing_object_logs_one_line_a_minute_with_a_repeat_count(
    make_controller: Any,
    clock: FakeClock,
    wait_until: WaitUntil,
    sample: Sample,
    unique_name: str,
) -> None:
    reconciler = ScriptedReconciler({"ns/a": [RuntimeError("boom " + "x" * 5000)]})
    controller, _ = make_controller(reconciler)

    def errors() -> float:
        return sample("controller_runtime_reconcile_total", controller=unique_name, result="error")

    with structlog.testing.capture_logs() as logs:
        controller.start()
        controller.enqueue(Request("ns", "a"))
        for failures in range(1, 8):
            wait_until(lambda n=failures: errors() == n)
            clock.advance(0.005 * 2 ** (failures - 1))  # the next backoff step
        wait_until(lambda: errors() == 8)
        clock.advance(60)
        wait_until(lambda: errors() >= 9)
    failed = [line for line in logs if line["event"] == "reconcile failed"]
    assert len(failed) == 2
    assert "repeats" not in failed[0]
    assert failed[1]["repeats"] == 7  # failures 2 to 8 were dropped


def test_a_write_refused_by_the_fence_ends_the_pass_without_requeue_or_error(
    make_controller: Any,
    clock: FakeClock,
    wait_until: WaitUntil,
    sample: Sample,
    unique_name: str,
) -> None:
    refused = NotLeader("PUT status", "the lease is held by replica-b")
    reconciler = ScriptedReconciler({"ns/a": [refused]})
    controller, _ = make_controller(reconciler)
    controller.start()
    controller.enqueue(Request("ns", "a"))
    wait_until(lambda: reconciler.count("ns/a") == 1)
    clock.advance(2000)  # beyond any backoff: the leader owns the object now
    _marker_processed(controller, reconciler, wait_until)
    assert reconciler.count("ns/a") == 1
    assert controller.queue.num_requeues(Request("ns", "a")) == 0
    assert sample("controller_runtime_reconcile_errors_total", controller=unique_name) == 0


def test_longest_running_pass_reports_a_stuck_worker(
    make_controller: Any, clock: FakeClock, wait_until: WaitUntil
) -> None:
    release = threading.Event()

    class Stuck(ScriptedReconciler):
        def reconcile(self, request: Request) -> Result:
            super().reconcile(request)
            release.wait(10)
            return Result()

    reconciler = Stuck()
    controller, _ = make_controller(reconciler)
    assert controller.longest_running_pass() == 0.0
    controller.start()
    controller.enqueue(Request("ns", "slow"))
    wait_until(lambda: reconciler.count("ns/slow") == 1)
    clock.advance(61)
    assert controller.longest_running_pass() == 61
    release.set()
    wait_until(lambda: controller.longest_running_pass() == 0.0)


def test_a_reported_error_is_requeued_and_logged_without_a_traceback(
    make_controller: Any,
    clock: FakeClock,
    wait_until: WaitUntil,
    sample: Sample,
    unique_name: str,
) -> None:
    reconciler = ScriptedReconciler({"ns/a": [ReportedError("HTTP 503: injected"), Result()]})
    controller, _ = make_controller(reconciler)
    with structlog.testing.capture_logs() as logs:
        controller.start()
        controller.enqueue(Request("ns", "a"))
        wait_until(lambda: reconciler.count("ns/a") == 1)
        clock.advance(1)  # past the first rate-limited backoff
        wait_until(lambda: reconciler.count("ns/a") >= 2)
    failed = [entry for entry in logs if entry["event"] == "reconcile failed"]
    assert failed and all("exc_info" not in entry for entry in failed)
    assert sample("controller_runtime_reconcile_errors_total", controller=unique_name) == 1
