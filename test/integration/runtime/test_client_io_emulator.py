"""KubeClient against the Kubernetes API emulator: CRUD, typed errors, patches, watch."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from baseten_operator.runtime.errors import (
    AlreadyExists,
    Conflict,
    ConnectionFailed,
    Gone,
    NotFound,
    ServerError,
    TooManyRequests,
    UnsupportedMediaType,
)
from baseten_operator.runtime.fence import NotLeader, WriteFence
from baseten_operator.runtime.resource import CONFIGMAPS, CRDS, Resource
from baseten_operator.sim.kube import KubeApiServer

WIDGETS = Resource("io.example.com", "v1", "widgets", "Widget")


def configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "x"}},
        "data": dict(data),
    }


@pytest.fixture
def widgets(kube: Any, wait_until: Callable) -> Resource:
    kube.create(
        CRDS,
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.io.example.com"},
            "spec": {
                "group": "io.example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "subresources": {"status": {}},
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        },
    )
    return WIDGETS


def test_create_get_list_update_delete(kube: Any, namespace: str) -> None:
    created = kube.create(CONFIGMAPS, configmap("a", namespace, k="1"))
    assert created["metadata"]["uid"]
    assert kube.get(CONFIGMAPS, "a", namespace)["data"] == {"k": "1"}
    kube.create(CONFIGMAPS, {**configmap("b", namespace), "metadata": {"name": "b"}}, namespace)

    names = [o["metadata"]["name"] for o in kube.list(CONFIGMAPS, namespace)["items"]]
    assert names == ["a", "b"]
    selected = kube.list(CONFIGMAPS, namespace, label_selector="app=x")["items"]
    assert [o["metadata"]["name"] for o in selected] == ["a"]
    by_field = kube.list(CONFIGMAPS, namespace, field_selector="metadata.name=b")["items"]
    assert [o["metadata"]["name"] for o in by_field] == ["b"]

    created["data"] = {"k": "2"}
    updated = kube.update(CONFIGMAPS, created)
    assert updated["data"] == {"k": "2"}
    with pytest.raises(Conflict):
        kube.update(CONFIGMAPS, created)  # stale resourceVersion

    kube.delete(CONFIGMAPS, "a", namespace)
    with pytest.raises(NotFound):
        kube.get(CONFIGMAPS, "a", namespace)


def test_list_pages_with_limit_and_continue(kube: Any, namespace: str) -> None:
    for index in range(5):
        kube.create(CONFIGMAPS, configmap(f"cm{index}", namespace))
    first = kube.list(CONFIGMAPS, namespace, limit=2)
    assert len(first["items"]) == 2
    token = first["metadata"]["continue"]
    rest: list[str] = []
    while token:
        page = kube.list(CONFIGMAPS, namespace, limit=2, continue_token=token)
        rest += [o["metadata"]["name"] for o in page["items"]]
        token = page["metadata"].get("continue")
    assert [o["metadata"]["name"] for o in first["items"]] + rest == [
        f"cm{index}" for index in range(5)
    ]


def test_typed_errors(kube: Any, namespace: str, kube_server: KubeApiServer) -> None:
    kube.create(CONFIGMAPS, configmap("a", namespace))
    with pytest.raises(AlreadyExists) as exists:
        kube.create(CONFIGMAPS, configmap("a", namespace))
    assert exists.value.status == 409
    assert exists.value.body and exists.value.body["kind"] == "Status"
    with pytest.raises(NotFound):
        kube.create(CONFIGMAPS, configmap("a", "no-such-namespace"))

    kube_server.fail_next(1, status=429, verb="get", retry_after=3)
    with pytest.raises(TooManyRequests) as throttled:
        kube.get(CONFIGMAPS, "a", namespace)
    assert throttled.value.retry_after == 3.0
    kube_server.fail_next(1, status=503, verb="list")
    with pytest.raises(ServerError):
        kube.list(CONFIGMAPS, namespace)
    assert kube.get(CONFIGMAPS, "a", namespace)["metadata"]["name"] == "a"


def test_dry_run_create_persists_nothing(kube: Any, namespace: str) -> None:
    answer = kube.create(CONFIGMAPS, configmap("dry", namespace), dry_run=True)
    assert answer["metadata"]["name"] == "dry"
    with pytest.raises(NotFound):
        kube.get(CONFIGMAPS, "dry", namespace)


def test_patch_types(kube: Any, namespace: str) -> None:
    kube.create(CONFIGMAPS, configmap("p", namespace, a="1", b="2"))
    merged = kube.patch(CONFIGMAPS, "p", {"data": {"a": None, "c": "3"}}, namespace)
    assert merged["data"] == {"b": "2", "c": "3"}
    jsonpatched = kube.patch(
        CONFIGMAPS,
        "p",
        [{"op": "replace", "path": "/data/b", "value": "20"}],
        namespace,
        patch_type="json",
    )
    assert jsonpatched["data"] == {"b": "20", "c": "3"}
    strategic = kube.patch(
        CONFIGMAPS,
        "p",
        {"metadata": {"finalizers": ["x/one"]}},
        namespace,
        patch_type="strategic",
    )
    strategic = kube.patch(
        CONFIGMAPS,
        "p",
        {"metadata": {"finalizers": ["x/two"]}},
        namespace,
        patch_type="strategic",
    )
    assert sorted(strategic["metadata"]["finalizers"]) == ["x/one", "x/two"]


def test_delete_preconditions(kube: Any, namespace: str) -> None:
    created = kube.create(CONFIGMAPS, configmap("d", namespace))
    with pytest.raises(Conflict):
        kube.delete(CONFIGMAPS, "d", namespace, preconditions={"uid": str(uuid.uuid4())})
    kube.delete(
        CONFIGMAPS,
        "d",
        namespace,
        preconditions={"uid": created["metadata"]["uid"]},
        propagation_policy="Background",
    )
    with pytest.raises(NotFound):
        kube.get(CONFIGMAPS, "d", namespace)


def test_status_subresource_and_strategic_patch_on_custom_resource(
    kube: Any, namespace: str, widgets: Resource
) -> None:
    body = {
        "apiVersion": "io.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": namespace},
        "spec": {"size": 1},
    }
    created = kube.create(widgets, body)
    created["status"] = {"phase": "Ready"}
    created["spec"] = {"size": 99}  # ignored by the status subresource
    written = kube.update_status(widgets, created)
    assert written["status"] == {"phase": "Ready"}
    assert written["spec"] == {"size": 1}
    patched = kube.patch(
        widgets, "w", {"status": {"phase": "Gone"}}, namespace, subresource="status"
    )
    assert patched["status"] == {"phase": "Gone"}
    with pytest.raises(UnsupportedMediaType):
        kube.patch(widgets, "w", {"spec": {"size": 2}}, namespace, patch_type="strategic")


def test_watch_streams_events_bookmarks_and_ends_at_timeout(kube: Any, namespace: str) -> None:
    start = kube.list(CONFIGMAPS, namespace)["metadata"]["resourceVersion"]
    kube.create(CONFIGMAPS, configmap("w1", namespace))
    kube.patch(CONFIGMAPS, "w1", {"data": {"x": "1"}}, namespace)
    kube.delete(CONFIGMAPS, "w1", namespace)

    stream = kube.watch(CONFIGMAPS, namespace, resource_version=start, timeout_seconds=1)
    events = list(stream)  # returns when the server ends the stream at its timeout
    typed = [(e["type"], e["object"]["metadata"].get("name")) for e in events]
    assert [t for t in typed if t[0] != "BOOKMARK"] == [
        ("ADDED", "w1"),
        ("MODIFIED", "w1"),
        ("DELETED", "w1"),
    ]


def test_watch_from_compacted_history_raises_gone(
    kube: Any, namespace: str, kube_server: KubeApiServer
) -> None:
    old = kube.list(CONFIGMAPS, namespace)["metadata"]["resourceVersion"]
    kube.create(CONFIGMAPS, configmap("c", namespace))
    kube_server.compact()
    with pytest.raises(Gone):
        list(kube.watch(CONFIGMAPS, namespace, resource_version=old, timeout_seconds=5))


def test_unreachable_server_raises_connection_failed(kube: Any, kube_server: KubeApiServer) -> None:
    kube_server.stop()
    with pytest.raises(ConnectionFailed) as failed:
        kube.get(CONFIGMAPS, "a", "default")
    assert failed.value.status == 0


def test_a_fenced_client_reads_but_refuses_every_write_once_fenced_off(
    kube: Any, namespace: str
) -> None:
    refusal: list[str | None] = [None]
    fenced = kube.fenced(WriteFence(lambda: refusal[0]))
    created = fenced.create(CONFIGMAPS, configmap("fenced", namespace, k="1"))
    refusal[0] = "the lease is held by replica-b"
    assert fenced.get(CONFIGMAPS, "fenced", namespace)["data"] == {"k": "1"}
    created["data"] = {"k": "2"}
    for write in (
        lambda: fenced.update(CONFIGMAPS, created),
        lambda: fenced.patch(CONFIGMAPS, "fenced", {"data": {"k": "3"}}, namespace),
        lambda: fenced.delete(CONFIGMAPS, "fenced", namespace),
        lambda: fenced.create(CONFIGMAPS, configmap("other", namespace)),
    ):
        with pytest.raises(NotLeader, match="replica-b"):
            write()
    assert kube.get(CONFIGMAPS, "fenced", namespace)["data"] == {"k": "1"}


def test_a_client_without_connect_retries_is_the_same_replica_on_its_own_connections(
    kube: Any, namespace: str
) -> None:
    kube.user_agent = "baseten-operator/test (replica-a)"
    single = kube.without_connect_retries()
    assert single.user_agent == "baseten-operator/test (replica-a)"
    assert single._http is not kube._http
    created = single.create(CONFIGMAPS, configmap("single", namespace, k="1"))
    assert (
        kube.get(CONFIGMAPS, "single", namespace)["metadata"]["uid"] == created["metadata"]["uid"]
    )
