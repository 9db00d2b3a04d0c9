from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.errors import AlreadyExists, NotFound, ServerError
from baseten_operator.runtime.recorder import EventRecorder, FakeRecorder
from baseten_operator.runtime.resource import Resource

Sample = Callable[..., float]

MODEL = {
    "apiVersion": "models.baseten.com/v1alpha1",
    "kind": "BasetenModel",
    "metadata": {"name": "llama", "namespace": "ml", "uid": "u-1", "resourceVersion": "7"},
}


class FakeEventsClient:
    """Stores Events in memory, with the API server's create/patch/get error behaviour."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.fail_next_create = 0
        self._lock = threading.Lock()

    def create(self, res: Resource, body: dict, namespace: str | None = None) -> dict:
        assert res.plural == "events"
        key = (namespace or "", body["metadata"]["name"])
        with self._lock:
            self.calls.append(("create", key[1]))
            if self.fail_next_create:
                self.fail_next_create -= 1
                raise ServerError(500, "InternalError", "etcd is sad")
            if key in self.objects:
                raise AlreadyExists(409, "AlreadyExists", "exists")
            self.objects[key] = copy.deepcopy(body)
            return body

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict:
        with self._lock:
            self.calls.append(("get", name))
            if (namespace or "", name) not in self.objects:
                raise NotFound(404, "NotFound", "no such event")
            return copy.deepcopy(self.objects[(namespace or "", name)])

    def patch(
        self,
        res: Resource,
        name: str,
        body: dict,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
    ) -> dict:
        assert patch_type == "merge"
        with self._lock:
            self.calls.append(("patch", name))
            stored = self.objects.get((namespace or "", name))
            if stored is None:
                raise NotFound(404, "NotFound", "no such event")
            stored.update(body)
            return stored

    def events(self) -> list[dict]:
        with self._lock:
            return list(self.objects.values())


@pytest.fixture
def kube() -> FakeEventsClient:
    return FakeEventsClient()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1_767_225_600.0)  # 2026-01-01T00:00:00Z


def recorder_for(
    kube: FakeEventsClient, clock: FakeClock, component: str, **kw: Any
) -> EventRecorder:
    recorder = EventRecorder(kube, component, clock=clock, **kw)  # type: ignore[arg-type]
    recorder.start()
    return recorder


def test_repeats_update_one_event_with_count_and_last_timestamp(
    kube: FakeEventsClient, clock: FakeClock, unique_name: str
) -> None:
    recorder = recorder_for(kube, clock, unique_name)
    for _ in range(3):
        recorder.event(MODEL, "Warning", "PromotionFailed", "promotion failed: BUILD_STOPPED")
        clock.advance(60)
    assert recorder.stop(flush_timeout=5)
    [event] = kube.events()
    assert event["count"] == 3
    assert event["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert event["lastTimestamp"] == "2026-01-01T00:02:00Z"
    assert [verb for verb, _ in kube.calls] == ["create", "patch", "patch"]
    assert event["metadata"]["namespace"] == "ml"
    assert event["metadata"]["name"].startswith("llama.")
    assert event["involvedObject"] == {
        "apiVersion": "models.baseten.com/v1alpha1",
        "kind": "BasetenModel",
        "name": "llama",
        "namespace": "ml",
        "uid": "u-1",
        "resourceVersion": "7",
    }
    assert (event["type"], event["reason"]) == ("Warning", "PromotionFailed")
    assert event["source"] == {"component": unique_name}
    assert event["reportingComponent"] == unique_name


def test_a_different_message_or_object_is_a_different_event(
    kube: FakeEventsClient, clock: FakeClock, unique_name: str
) -> None:
    recorder = recorder_for(kube, clock, unique_name)
    other = copy.deepcopy(MODEL)
    other["metadata"].update(name="mistral", uid="u-2")
    recorder.event(MODEL, "Normal", "DeploymentPromoted", "Promoted a to production environment")
    recorder.event(MODEL, "Normal", "DeploymentPromoted", "Promoted b to production environment")
    recorder.event(other, "Normal", "DeploymentPromoted", "Promoted a to production environment")
    recorder.stop(flush_timeout=5)
    events = kube.events()
    assert len(events) == 3
    assert all(event["count"] == 1 for event in events)


def test_spam_beyond_the_burst_is_dropped_until_tokens_refill(
    kube: FakeEventsClient, clock: FakeClock, unique_name: str, sample: Sample
) -> None:
    recorder = recorder_for(kube, clock, unique_name)
    for i in range(30):
        recorder.event(MODEL, "Normal", "Step", f"step {i}")
    clock.advance(300)  # one token back
    recorder.event(MODEL, "Normal", "Step", "after the pause")
    recorder.event(MODEL, "Normal", "Step", "still too soon")
    recorder.stop(flush_timeout=5)
    messages = {event["message"] for event in kube.events()}
    assert messages == {f"step {i}" for i in range(25)} | {"after the pause"}
    assert sample("event_recorder_events_dropped_total", component=unique_name, reason="spam") == 6


def test_an_event_deleted_meanwhile_is_created_anew(
    kube: FakeEventsClient, clock: FakeClock, unique_name: str
) -> None:
    recorder = recorder_for(kube, clock, unique_name)
    recorder.event(MODEL, "Warning", "ModelNotFound", "model 'llama' not found")
    recorder.stop(flush_timeout=5)
    kube.objects.clear()  # e.g. the API server's event TTL expired it
    recorder = recorder_for(kube, clock, unique_name)
    recorder.event(MODEL, "Warning", "ModelNotFound", "model 'llama' not found")
    recorder.stop(flush_timeout=5)
    [event] = kube.events()
    assert event["count"] == 1


def test_a_restarted_recorder_continues_the_existing_event(
    kube: FakeEventsClient, clock: FakeClock, unique_name: str
) -> None:
    first = recorder_for(kube, clock, unique_name)
    first.event(MODEL, "Warning", "ModelNotFound", "model 'llama' not found")
    first.stop(flush_timeout=5)
    clock.advance(10)
    second = recorder_for(kube, clock, unique_name)  # empty cache, as after a restart
    second.event(MODEL, "Warning", "ModelNotFound", "model 'llama' not found")
    second.stop(flush_timeout=5)
    [event] = kube.events()
    assert event["count"] == 2
    assert event["lastTimestamp"] == "2026-01-01T00:00:10Z"


def test_a_failed_write_is_dropped_and_the_writer_carries_on(
    kube: FakeEventsClient, clock: FakeClock, unique_name: str, sample: Sample
) -> None:
    kube.fail_next_create = 1
    recorder = recorder_for(kube, clock, unique_name, writers=1)  # one writer: in order
    recorder.event(MODEL, "Normal", "First", "lost")
    recorder.event(MODEL, "Normal", "Second", "written")
    recorder.stop(flush_timeout=5)
    assert [event["reason"] for event in kube.events()] == ["Second"]
    assert (
        sample("event_recorder_events_dropped_total", component=unique_name, reason="write_failed")
        == 1
    )


def test_event_never_blocks_and_drops_when_the_queue_is_full(
    kube: FakeEventsClient, clock: FakeClock, unique_name: str, sample: Sample
) -> None:
    recorder = EventRecorder(kube, unique_name, clock=clock, queue_size=2)  # type: ignore[arg-type]
    for i in range(3):  # not started: nothing drains the queue
        recorder.event(MODEL, "Normal", "Step", f"step {i}")
    assert (
        sample("event_recorder_events_dropped_total", component=unique_name, reason="queue_full")
        == 1
    )
    recorder.start()
    recorder.stop(flush_timeout=5)
    assert len(kube.events()) == 2


def test_credentials_never_reach_an_event(
    kube: FakeEventsClient, clock: FakeClock, unique_name: str
) -> None:
    recorder = recorder_for(kube, clock, unique_name)
    recorder.event(MODEL, "Warning", "X", "401 with header Authorization: Api-Key sk-live-123")
    recorder.stop(flush_timeout=5)
    [event] = kube.events()
    assert "sk-live-123" not in event["message"]


def test_fake_recorder_records_type_reason_message_and_object() -> None:
    recorder = FakeRecorder()
    recorder.event(MODEL, "Normal", "ModelDeleted", "Deleted Baseten model m1")
    assert recorder.events == [("Normal", "ModelDeleted", "Deleted Baseten model m1")]
    assert recorder.recorded[0].object_key == "ml/llama"


def test_a_long_message_is_cut_to_1024_characters_ending_in_an_ellipsis(
    kube: FakeEventsClient, clock: FakeClock, unique_name: str
) -> None:
    recorder = recorder_for(kube, clock, unique_name)
    recorder.event(MODEL, "Warning", "X", "é" * 5000)
    recorder.stop(flush_timeout=5)
    [event] = kube.events()
    assert len(event["message"]) == 1024
    assert event["message"] == "é" * 1023 + "…"


def test_events_of_different_keys_are_written_concurrently(
    kube: FakeEventsClient, clock: FakeClock, unique_name: str
) -> None:
    both_in_flight = threading.Barrier(2, timeout=5)
    create = kube.create
    creates = iter(range(1_000))

    def create_meeting_another(res: Resource, body: dict, namespace: str | None = None) -> dict:
        if next(creates) < 2:
            both_in_flight.wait()  # broken (the write fails) unless two run at once
        return create(res, body, namespace)

    kube.create = create_meeting_another  # type: ignore[method-assign]
    recorder = recorder_for(kube, clock, unique_name)
    for i in range(40):  # 40 keys: they cannot all land on one of the four writers
        other = copy.deepcopy(MODEL)
        other["metadata"].update(name=f"model-{i}", uid=f"u-{i}")
        recorder.event(other, "Normal", "DeploymentActive", "active")
    assert recorder.stop(flush_timeout=5)
    assert len(kube.events()) == 40  # none failed: the first two met


def test_repeats_spread_over_writers_still_count_exactly(
    kube: FakeEventsClient, clock: FakeClock, unique_name: str
) -> None:
    recorder = recorder_for(kube, clock, unique_name, writers=4)
    others = []
    for i in range(8):
        other = copy.deepcopy(MODEL)
        other["metadata"].update(name=f"model-{i}", uid=f"u-{i}")
        others.append(other)
    for _ in range(5):
        for other in others:
            recorder.event(other, "Warning", "PromotionFailed", "promotion failed")
    assert recorder.stop(flush_timeout=5)
    events = kube.events()
    assert len(events) == 8
    assert all(event["count"] == 5 for event in events)
