"""Whole objects fetched on demand behind a metadata-only cache."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.runtime.errors import NotFound, ServerError
from baseten_operator.runtime.fetched import FetchedObjects
from baseten_operator.runtime.resource import CONFIGMAPS, Resource


def configmap(name: str, version: str, script: str) -> dict[str, Any]:
    meta = {"namespace": "ns", "name": name, "resourceVersion": version}
    return {"kind": "ConfigMap", "metadata": meta, "data": {"setup.sh": script}}


class Server:
    """The API server's current objects, and every GET made of it."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str | None, str], dict[str, Any]] = {}
        self.gets: list[str] = []
        self.failing = False

    def get(self, res: Resource, name: str, namespace: str | None = None, /) -> dict[str, Any]:
        assert res is CONFIGMAPS
        self.gets.append(name)
        if self.failing:
            raise ServerError(500, "InternalError", "etcd is sad")
        if (namespace, name) not in self.objects:
            raise NotFound(404, "NotFound", f'configmaps "{name}" not found')
        return self.objects[(namespace, name)]


class MetadataOnly:
    """A metadata-only informer's store: what it last saw, without data."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str | None, str], dict[str, Any]] = {}

    def saw(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.seen[(meta["namespace"], meta["name"])] = {"metadata": dict(meta)}

    def get(self, namespace: str | None, name: str, /) -> dict[str, Any] | None:
        return self.seen.get((namespace, name))


@pytest.fixture
def world() -> tuple[Server, MetadataOnly, FetchedObjects]:
    server, metadata = Server(), MetadataOnly()
    return server, metadata, FetchedObjects(server, CONFIGMAPS, metadata)


def test_an_object_is_fetched_once_per_resource_version(world: Any) -> None:
    server, metadata, fetched = world
    server.objects[("ns", "setup")] = v1 = configmap("setup", "1", "echo one")
    metadata.saw(v1)
    assert fetched.get("ns", "setup")["data"] == {"setup.sh": "echo one"}
    assert fetched.get("ns", "setup")["data"] == {"setup.sh": "echo one"}
    assert server.gets == ["setup"]
    server.objects[("ns", "setup")] = v2 = configmap("setup", "2", "echo two")
    metadata.saw(v2)  # the watch brings the new version's metadata
    assert fetched.get("ns", "setup")["data"] == {"setup.sh": "echo two"}
    assert server.gets == ["setup", "setup"]


def test_what_the_informer_has_not_seen_does_not_exist(world: Any) -> None:
    server, _, fetched = world
    server.objects[("ns", "setup")] = configmap("setup", "1", "echo")  # not seen yet
    assert fetched.get("ns", "setup") is None
    assert server.gets == []  # no request for it


def test_an_object_deleted_since_the_informer_saw_it_is_missing(world: Any) -> None:
    server, metadata, fetched = world
    metadata.saw(configmap("setup", "1", "echo"))
    assert fetched.get("ns", "setup") is None


def test_a_failed_read_is_an_error_not_a_missing_object(world: Any) -> None:
    server, metadata, fetched = world
    server.objects[("ns", "setup")] = v1 = configmap("setup", "1", "echo")
    metadata.saw(v1)
    server.failing = True
    with pytest.raises(ServerError):
        fetched.get("ns", "setup")
