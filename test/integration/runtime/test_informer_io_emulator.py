"""Informer against the Kubernetes API emulator, with its watch faults."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from baseten_operator.runtime.informer import Informer
from baseten_operator.runtime.resource import CONFIGMAPS
from baseten_operator.sim.kube import KubeApiServer


class Events:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.items: list[tuple[str, str]] = []

    def handlers(self) -> dict[str, Callable[..., None]]:
        return {
            "on_add": lambda obj: self._add("add", obj),
            "on_update": lambda old, new: self._add("update", new),
            "on_delete": lambda obj: self._add("delete", obj),
        }

    def _add(self, kind: str, obj: dict) -> None:
        with self._lock:
            self.items.append((kind, obj["metadata"]["name"]))

    def snapshot(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self.items)


def configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": dict(data)}


@pytest.fixture
def start_informer(kube: Any, namespace: str) -> Iterator[Callable[..., tuple[Informer, Events]]]:
    informers: list[Informer] = []

    def start(**kwargs: Any) -> tuple[Informer, Events]:
        informer = Informer(kube, CONFIGMAPS, namespace, **kwargs)
        events = Events()
        informer.add_event_handler(**events.handlers())
        informers.append(informer)
        informer.start()
        assert informer.wait_for_sync(10)
        return informer, events

    yield start
    for informer in informers:
        informer.stop()


def test_initial_sync_then_live_events(
    kube: Any, namespace: str, start_informer: Callable, wait_until: Callable
) -> None:
    for index in range(3):
        kube.create(CONFIGMAPS, configmap(f"pre{index}", namespace))
    informer, events = start_informer(page_size=2)
    assert sorted(name for _, name in events.snapshot()) == ["pre0", "pre1", "pre2"]
    assert kube.count("GET") >= 2  # two pages

    kube.create(CONFIGMAPS, configmap("live", namespace))
    kube.patch(CONFIGMAPS, "pre0", {"data": {"k": "v"}}, namespace)
    kube.delete(CONFIGMAPS, "pre1", namespace)
    wait_until(lambda: len(events.snapshot()) == 6)
    assert events.snapshot()[3:] == [("add", "live"), ("update", "pre0"), ("delete", "pre1")]
    assert informer.get(namespace, "pre0")["data"] == {"k": "v"}
    assert sorted(o["metadata"]["name"] for o in informer.list(namespace)) == [
        "live",
        "pre0",
        "pre2",
    ]


def test_a_metadata_only_informer_caches_no_data(
    kube: Any, namespace: str, start_informer: Callable, wait_until: Callable
) -> None:
    kube.create(CONFIGMAPS, configmap("listed", namespace, secret="listed-data"))
    informer, events = start_informer(metadata_only=True)
    kube.create(
        CONFIGMAPS,
        {**configmap("watched", namespace, secret="watched-data"), "metadata": {
            "name": "watched", "namespace": namespace, "annotations": {"a": "1"}}},
    )  # fmt: skip
    wait_until(lambda: ("add", "watched") in events.snapshot())
    listed, watched = informer.get(namespace, "listed"), informer.get(namespace, "watched")
    assert listed["kind"] == watched["kind"] == "PartialObjectMetadata"
    assert "data" not in listed and "data" not in watched
    assert watched["metadata"]["annotations"] == {"a": "1"}


def test_watch_timeout_resumes_without_relisting(
    kube: Any, namespace: str, start_informer: Callable, wait_until: Callable
) -> None:
    informer, events = start_informer(watch_timeout=1)
    lists = kube.count("GET")
    # Outlive a few server-side watch timeouts, then check nothing was missed.
    wait_until(lambda: kube.count("watch") >= 3, timeout=15)
    kube.create(CONFIGMAPS, configmap("after-timeouts", namespace))
    wait_until(lambda: ("add", "after-timeouts") in events.snapshot())
    assert kube.count("GET") == lists


def test_dropped_connection_resumes_and_misses_nothing(
    kube: Any,
    namespace: str,
    start_informer: Callable,
    kube_server: KubeApiServer,
    wait_until: Callable,
) -> None:
    informer, events = start_informer()
    lists = kube.count("GET")
    wait_until(lambda: kube_server.watch_count() >= 1)
    kube_server.stall_watches(True)
    kube.create(CONFIGMAPS, configmap("during-outage", namespace))
    assert kube_server.drop_watches() >= 1
    kube_server.stall_watches(False)
    kube.create(CONFIGMAPS, configmap("after-outage", namespace))
    wait_until(lambda: len(events.snapshot()) == 2)
    assert events.snapshot() == [("add", "during-outage"), ("add", "after-outage")]
    assert kube.count("GET") == lists  # resumed from its resourceVersion, no relist
    assert kube.count("watch") >= 2


def test_gone_relists_and_emits_the_changes_missed(
    kube: Any,
    namespace: str,
    start_informer: Callable,
    kube_server: KubeApiServer,
    wait_until: Callable,
) -> None:
    for name in ("keep", "change", "vanish"):
        kube.create(CONFIGMAPS, configmap(name, namespace))
    informer, events = start_informer()
    lists = kube.count("GET")
    wait_until(lambda: kube_server.watch_count() >= 1)

    kube_server.stall_watches(True)  # the informer sees none of what follows
    kube.patch(CONFIGMAPS, "change", {"data": {"v": "2"}}, namespace)
    kube.delete(CONFIGMAPS, "vanish", namespace)
    kube.create(CONFIGMAPS, configmap("new", namespace))
    kube_server.compact()  # its resourceVersion is now too old: 410 on the next watch
    kube_server.drop_watches()
    kube_server.stall_watches(False)

    wait_until(lambda: len(events.snapshot()) == 6)
    assert sorted(events.snapshot()[3:]) == [
        ("add", "new"),
        ("delete", "vanish"),
        ("update", "change"),
    ]
    assert kube.count("GET") > lists
    assert informer.get(namespace, "change")["data"] == {"v": "2"}
    assert informer.get(namespace, "vanish") is None


def test_stop_ends_the_watch_promptly(
    start_informer: Callable, kube_server: KubeApiServer, wait_until: Callable
) -> None:
    informer, _ = start_informer()
    wait_until(lambda: kube_server.watch_count() == 1)
    informer.stop(timeout=5)
    assert not any(thread.is_alive() for thread in informer._threads)
    wait_until(lambda: kube_server.watch_count() == 0)  # the server saw the stream close
