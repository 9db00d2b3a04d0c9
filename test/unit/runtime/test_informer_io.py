"""Informer against a scripted list/watch client, on a fake clock."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.errors import (
    Forbidden,
    Gone,
    NotFound,
    ServerError,
    TooManyRequests,
)
from baseten_operator.runtime.informer import Backoff, Informer, Store, namespace_index
from baseten_operator.runtime.resource import CONFIGMAPS


class Recorder:
    """Collects handler calls as ("add"|"update"|"delete", name, rv)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()

    def _record(self, kind: str, obj: dict) -> None:
        with self.lock:
            meta = obj["metadata"]
            self.calls.append((kind, meta["name"], meta["resourceVersion"]))

    def on_add(self, obj: dict) -> None:
        self._record("add", obj)

    def on_update(self, old: dict, new: dict) -> None:
        self._record("update", new)

    def on_delete(self, obj: dict) -> None:
        self._record("delete", obj)

    def snapshot(self) -> list[tuple[str, str, str]]:
        with self.lock:
            return list(self.calls)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_informer(
    list_watch_client: Any, clock: FakeClock
) -> Iterator[Callable[..., tuple[Informer, Recorder]]]:
    informers: list[Informer] = []

    def build(**kwargs: Any) -> tuple[Informer, Recorder]:
        informer = Informer(list_watch_client, CONFIGMAPS, clock=clock, **kwargs)  # type: ignore[arg-type]
        recorder = Recorder()
        informer.add_event_handler(recorder.on_add, recorder.on_update, recorder.on_delete)
        informers.append(informer)
        return informer, recorder

    yield build
    for informer in informers:
        informer.stop()


def test_initial_sync_pages_the_list_and_indexes(
    make_obj: Callable, list_watch_client: Any, make_informer: Callable, wait_until: Callable
) -> None:
    list_watch_client.objects = [
        make_obj("a", "ns1", team="x"),
        make_obj("b", "ns1", team="y"),
        make_obj("c", "ns2", team="x"),
    ]
    informer, recorder = make_informer(
        page_size=2, indexers={"team": lambda obj: [obj["metadata"]["labels"]["team"]]}
    )
    informer.start()

    assert informer.wait_for_sync(5)
    assert [call["continue_token"] for call in list_watch_client.list_calls] == [None, "2"]
    assert sorted(name for _, name, _ in recorder.snapshot()) == ["a", "b", "c"]
    assert {kind for kind, _, _ in recorder.snapshot()} == {"add"}
    assert [o["metadata"]["name"] for o in informer.list("ns1")] == ["a", "b"]
    assert [o["metadata"]["name"] for o in informer.by_index("team", "x")] == ["a", "c"]
    assert informer.get("ns2", "c")["metadata"]["name"] == "c"  # type: ignore[index]
    assert informer.get("ns2", "missing") is None
    # The watch starts from the list's resourceVersion.
    assert list_watch_client.wait_for_watch(1).resource_version == "100"


def test_live_events_update_store_and_handlers(
    make_obj: Callable, list_watch_client: Any, make_informer: Callable, wait_until: Callable
) -> None:
    list_watch_client.objects = [make_obj("a", rv="10")]
    informer, recorder = make_informer()
    informer.start()
    watch = list_watch_client.wait_for_watch(1)

    watch.feed({"type": "ADDED", "object": make_obj("b", rv="101")})
    watch.feed({"type": "MODIFIED", "object": make_obj("a", rv="102")})
    watch.feed({"type": "DELETED", "object": make_obj("b", rv="103")})
    wait_until(lambda: len(recorder.snapshot()) == 4)

    assert recorder.snapshot() == [
        ("add", "a", "10"),
        ("add", "b", "101"),
        ("update", "a", "102"),
        ("delete", "b", "103"),
    ]
    assert [o["metadata"]["name"] for o in informer.list()] == ["a"]
    assert informer.last_resource_version == "103"


def test_watch_end_resumes_from_last_resource_version_and_bookmarks(
    make_obj: Callable, list_watch_client: Any, make_informer: Callable
) -> None:
    informer, _ = make_informer()
    informer.start()
    first = list_watch_client.wait_for_watch(1)
    first.feed({"type": "ADDED", "object": make_obj("a", rv="105")})
    first.feed({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "150"}}})
    first.end()

    second = list_watch_client.wait_for_watch(2)
    assert second.resource_version == "150"
    assert len(list_watch_client.list_calls) == 1  # resumed, not relisted
    assert informer.get("default", "a") is not None


def test_gone_relists_and_reports_what_changed_meanwhile(
    make_obj: Callable, list_watch_client: Any, make_informer: Callable, wait_until: Callable
) -> None:
    list_watch_client.objects = [
        make_obj("keep", rv="1"),
        make_obj("change", rv="2"),
        make_obj("vanish", rv="3"),
    ]
    informer, recorder = make_informer()
    informer.start()
    watch = list_watch_client.wait_for_watch(1)
    assert informer.has_synced()

    list_watch_client.objects = [
        make_obj("keep", rv="1"),
        make_obj("change", rv="20"),
        make_obj("new", rv="21"),
    ]
    list_watch_client.resource_version = "300"
    watch.feed(Gone(410, "Expired", "too old"))

    assert list_watch_client.wait_for_watch(2).resource_version == "300"
    wait_until(lambda: len(recorder.snapshot()) == 6)
    assert recorder.snapshot()[3:] == [
        ("delete", "vanish", "3"),
        ("update", "change", "20"),
        ("add", "new", "21"),
    ]
    assert sorted(o["metadata"]["name"] for o in informer.list()) == ["change", "keep", "new"]


def test_errors_back_off_on_the_clock_then_recover(
    advance_until: Callable,
    make_obj: Callable,
    list_watch_client: Any,
    make_informer: Callable,
    clock: FakeClock,
    wait_until: Callable,
) -> None:
    list_watch_client.list_errors = [ServerError(500, "InternalError", "boom")]
    list_watch_client.objects = [make_obj("a")]
    informer, _ = make_informer()
    informer.start()

    wait_until(lambda: len(list_watch_client.list_calls) == 1)
    assert not informer.has_synced()  # waiting out its backoff on the fake clock
    advance_until(clock, informer.has_synced, step=0.05)
    assert len(list_watch_client.list_calls) == 2


def test_a_kind_not_served_yet_is_listed_again_and_found_once_its_crd_is_installed(
    advance_until: Callable,
    make_obj: Callable,
    list_watch_client: Any,
    make_informer: Callable,
    clock: FakeClock,
    wait_until: Callable,
) -> None:
    not_served = NotFound(404, "NotFound", "the server could not find the requested resource")
    list_watch_client.list_errors = [not_served, not_served]
    list_watch_client.objects = [make_obj("a")]
    informer, recorder = make_informer()
    informer.start()

    wait_until(lambda: informer.unserved)
    assert not informer.has_synced()
    advance_until(clock, informer.has_synced, step=0.05)  # the third list finds the CRD
    assert not informer.unserved
    assert len(list_watch_client.list_calls) == 3
    assert recorder.snapshot() == [("add", "a", "1")]


def test_a_refused_list_is_said_until_a_list_works_again(
    advance_until: Callable,
    make_obj: Callable,
    list_watch_client: Any,
    make_informer: Callable,
    clock: FakeClock,
    wait_until: Callable,
) -> None:
    list_watch_client.list_errors = [Forbidden(403, "Forbidden", 'secrets "hf" is forbidden')]
    list_watch_client.objects = [make_obj("a")]
    informer, _ = make_informer()
    informer.start()

    wait_until(lambda: informer.refused)
    assert not informer.unserved and not informer.has_synced()
    advance_until(clock, informer.has_synced, step=0.05)  # the RoleBinding granted
    assert not informer.refused


def test_broken_watch_retries_from_the_same_version(
    advance_until: Callable, list_watch_client: Any, make_informer: Callable, clock: FakeClock
) -> None:
    informer, _ = make_informer()
    informer.start()
    list_watch_client.wait_for_watch(1).feed(ServerError(500, "InternalError", "dropped"))
    advance_until(clock, lambda: len(list_watch_client.watches) == 2, step=0.05)
    assert list_watch_client.wait_for_watch(2).resource_version == "100"
    assert len(list_watch_client.list_calls) == 1


def test_a_failing_handler_does_not_stop_the_informer(
    make_obj: Callable, list_watch_client: Any, make_informer: Callable, wait_until: Callable
) -> None:
    informer, recorder = make_informer()

    def explode(obj: dict) -> None:
        raise RuntimeError("handler bug")

    informer.add_event_handler(on_add=explode)
    informer.start()
    watch = list_watch_client.wait_for_watch(1)
    watch.feed({"type": "ADDED", "object": make_obj("a", rv="101")})
    watch.feed({"type": "ADDED", "object": make_obj("b", rv="102")})
    wait_until(lambda: len(recorder.snapshot()) == 2)
    assert informer.get("default", "b") is not None


def test_late_handler_gets_existing_objects(
    make_obj: Callable, list_watch_client: Any, make_informer: Callable
) -> None:
    list_watch_client.objects = [make_obj("a"), make_obj("b")]
    informer, _ = make_informer()
    informer.start()
    assert informer.wait_for_sync(5)
    late = Recorder()
    informer.add_event_handler(on_add=late.on_add)
    assert sorted(name for _, name, _ in late.snapshot()) == ["a", "b"]


def test_resync_redelivers_every_object_as_update(
    advance_until: Callable,
    make_obj: Callable,
    list_watch_client: Any,
    make_informer: Callable,
    clock: FakeClock,
    wait_until: Callable,
) -> None:
    list_watch_client.objects = [make_obj("a", rv="7")]
    informer, recorder = make_informer(resync_period=60)
    informer.start()
    assert informer.wait_for_sync(5)
    list_watch_client.wait_for_watch(1)
    advance_until(clock, lambda: ("update", "a", "7") in recorder.snapshot(), step=5)
    # One resync per period, not one per wake-up.
    assert clock.monotonic() >= 60
    assert recorder.snapshot().count(("update", "a", "7")) == 1


def test_stop_closes_the_watch_promptly(list_watch_client: Any, make_informer: Callable) -> None:
    informer, _ = make_informer()
    informer.start()
    watch = list_watch_client.wait_for_watch(1)
    informer.stop(timeout=5)
    assert watch.closed.is_set()
    assert not any(thread.is_alive() for thread in informer._threads)


def test_store_keeps_indices_consistent_on_update_and_delete(make_obj: Callable) -> None:
    store = Store({"namespace": namespace_index})
    store.upsert("ns1/a", make_obj("a", "ns1"))
    store.upsert("ns1/a", make_obj("a", "ns2", rv="2"))  # moved index value
    assert store.by_index("namespace", "ns1") == []
    assert [o["metadata"]["resourceVersion"] for o in store.by_index("namespace", "ns2")] == ["2"]
    store.remove("ns1/a")
    assert store.by_index("namespace", "ns2") == []
    with pytest.raises(KeyError):
        store.by_index("nope", "x")


def test_backoff_grows_is_capped_and_resets() -> None:
    backoff = Backoff(initial=0.2, cap=30.0)
    delays = [backoff.next_delay() for _ in range(12)]
    assert 0.1 <= delays[0] <= 0.2
    assert all(delay <= 30.0 for delay in delays)
    assert delays[-1] >= 15.0
    backoff.reset()
    assert backoff.next_delay() <= 0.2


def test_stop_before_sync_ends_every_thread(
    list_watch_client: Any, make_informer: Callable, wait_until: Callable
) -> None:
    list_watch_client.list_errors = [ServerError(500, "InternalError", "down")] * 5
    informer, _ = make_informer(resync_period=60)
    informer.start()
    wait_until(lambda: len(list_watch_client.list_calls) == 1)
    informer.stop(timeout=5)
    assert not any(thread.is_alive() for thread in informer._threads)
    assert not informer.has_synced()


def test_throttled_list_waits_out_retry_after(
    advance_until: Callable,
    list_watch_client: Any,
    make_informer: Callable,
    clock: FakeClock,
    wait_until: Callable,
) -> None:
    list_watch_client.list_errors = [TooManyRequests(429, "TooManyRequests", "slow", None, 20.0)]
    informer, _ = make_informer()
    informer.start()
    wait_until(lambda: len(list_watch_client.list_calls) == 1)
    advance_until(clock, informer.has_synced, step=1.0)
    assert clock.monotonic() >= 20.0  # not the 0.2 s of a first backoff


def test_watches_that_keep_breaking_after_working_reconnect_without_growing_delays(
    advance_until: Callable,
    make_obj: Callable,
    list_watch_client: Any,
    make_informer: Callable,
    clock: FakeClock,
) -> None:
    # A flaky network: every watch delivers an event, then the connection breaks. Each
    # watch worked, so none may stretch the next reconnect towards the 30 s cap.
    informer, recorder = make_informer()
    informer.start()
    delays = []
    for n in range(1, 8):
        watch = list_watch_client.wait_for_watch(n)
        watch.feed({"type": "ADDED", "object": make_obj(f"o{n}", rv=str(200 + n))})
        watch.feed(ServerError(500, "InternalError", "connection reset"))
        broke_at = clock.monotonic()
        advance_until(clock, lambda n=n: len(list_watch_client.watches) > n, step=0.02)
        delays.append(clock.monotonic() - broke_at)
    # The initial backoff (at most 0.2 s) every time, give or take the polling steps;
    # without the reset the seventh reconnect alone would wait at least 6.4 s x 0.5.
    assert max(delays) < 1.0
    assert list_watch_client.wait_for_watch(8).resource_version == "207"
    assert [call[1] for call in recorder.snapshot()] == [f"o{n}" for n in range(1, 8)]


def test_watches_that_break_at_once_still_back_off(
    advance_until: Callable, list_watch_client: Any, make_informer: Callable, clock: FakeClock
) -> None:
    informer, _ = make_informer()
    informer.start()
    delays = []
    for n in range(1, 6):
        list_watch_client.wait_for_watch(n).feed(ServerError(500, "InternalError", "refused"))
        broke_at = clock.monotonic()
        advance_until(clock, lambda n=n: len(list_watch_client.watches) > n, step=0.02)
        delays.append(clock.monotonic() - broke_at)
    # Doubling: the fifth reconnect waits at least 3.2 s x 0.5 (the first at most 0.2 s),
    # so an API server that is down is not hammered.
    assert delays[-1] >= 1.6
