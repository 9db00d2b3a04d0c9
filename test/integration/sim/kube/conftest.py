"""Fixtures for the Kubernetes API contract tests.

The same tests run against the emulator and against a real kube-apiserver (built from source,
or the cluster KUBE_CONTRACT_REAL=1 and KUBECONFIG point at). They talk through `Kube`, a thin
wrapper over the official client's ApiClient (raw paths, JSON in and out), so what they
check is the API's behaviour, not any wrapper's.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from baseten_operator.sim.kube import KubeApiServer
from testsupport.clusters import start_kube

HERE = Path(__file__).parent
# A cluster of your own for the "real" runs instead of the one built here.
EXTERNAL = os.environ.get("KUBE_CONTRACT_REAL") == "1" and bool(os.environ.get("KUBECONFIG"))


@dataclass(frozen=True)
class Res:
    group: str
    version: str
    plural: str
    namespaced: bool = True

    def path(
        self, namespace: str | None = None, name: str | None = None, sub: str | None = None
    ) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        parts = [base, self.plural] + [p for p in (name, sub) if p]
        return "/".join(parts)


CONFIGMAPS = Res("", "v1", "configmaps")
SECRETS = Res("", "v1", "secrets")
SERVICES = Res("", "v1", "services")
NAMESPACES = Res("", "v1", "namespaces", namespaced=False)
EVENTS = Res("", "v1", "events")
NEW_EVENTS = Res("events.k8s.io", "v1", "events")
LEASES = Res("coordination.k8s.io", "v1", "leases")
CRDS = Res("apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False)
WIDGETS = Res("contract.example.com", "v1", "widgets")

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"


class KubeError(Exception):
    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        super().__init__(f"{status}: {body.get('message')}")
        self.status = status
        self.body = body
        self.headers = headers


class EventStream:
    """A watch read on a background thread; `next()` waits with a deadline."""

    def __init__(self, response: Any) -> None:
        self.response = response
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.ended = threading.Event()
        self.error: BaseException | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        try:
            for chunk in self.response.stream(amt=None, decode_content=False):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        self.events.put(json.loads(line))
        except Exception as exc:  # a dropped connection surfaces here
            self.error = exc
        finally:
            self.ended.set()
            self.events.put(None)

    def next(self, timeout: float = 5.0, *, skip_bookmarks: bool = True) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no watch event in time")
            try:
                event = self.events.get(timeout=remaining)
            except queue.Empty:
                raise TimeoutError("no watch event in time") from None
            if event is None:
                self.events.put(None)
                raise EOFError("the watch ended")
            if skip_bookmarks and event["type"] == "BOOKMARK":
                continue
            return event

    def until(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 5.0
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            event = self.next(max(deadline - time.monotonic(), 0.001))
            if predicate(event):
                return event

    def close(self) -> None:
        if not self.ended.is_set():
            # close() alone would wait for the reader thread's recv: shut the socket instead.
            sock = getattr(self.response.connection, "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            self.ended.wait(5)
        self.response.close()


class Kube:
    # Tests cannot import this module: they reach the shared names through the fixture.
    Error = KubeError
    CONFIGMAPS, SECRETS, NAMESPACES, EVENTS, NEW_EVENTS = (
        CONFIGMAPS,
        SECRETS,
        NAMESPACES,
        EVENTS,
        NEW_EVENTS,
    )
    LEASES, CRDS, WIDGETS, SERVICES = LEASES, CRDS, WIDGETS, SERVICES
    MERGE, JSON_PATCH, STRATEGIC, TABLE = MERGE, JSON_PATCH, STRATEGIC, TABLE

    def __init__(self, api_client: client.ApiClient, server: KubeApiServer | None) -> None:
        self.api = api_client
        self.server = server  # None on a real cluster

    @property
    def emulated(self) -> bool:
        return self.server is not None

    def raw(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: dict[str, Any] | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        stream: bool = False,
        timeout: float = 10.0,
    ) -> Any:
        query_params = [
            (k, str(v).lower() if isinstance(v, bool) else v)
            for k, v in (query or {}).items()
            if v is not None
        ]
        method, url, headers, payload, _ = self.api.param_serialize(
            method,
            path,
            query_params=query_params,
            header_params={"Content-Type": content_type, "Accept": accept},
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(
            method,
            url,
            header_params=headers,
            body=payload,
            _request_timeout=None if stream else timeout,
        )
        if response.status >= 400:
            data = response.read()
            try:
                status = json.loads(data or b"{}")
            except ValueError:
                status = {"message": data.decode(errors="replace")}
            raise KubeError(response.status, status, dict(response.headers))
        return response

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        data = self.raw(method, path, **kwargs).read()
        return json.loads(data) if data else None

    def get(self, res: Res, name: str, namespace: str | None = None, **kw: Any) -> dict[str, Any]:
        return self.call("GET", res.path(namespace, name), **kw)

    def list(self, res: Res, namespace: str | None = None, **query: Any) -> dict[str, Any]:
        return self.call("GET", res.path(namespace), query=query)

    def create(
        self, res: Res, body: dict[str, Any], namespace: str | None = None, **query: Any
    ) -> dict[str, Any]:
        return self.call("POST", res.path(namespace), body=body, query=query)

    def update(
        self, res: Res, body: dict[str, Any], *, sub: str | None = None, **query: Any
    ) -> dict[str, Any]:
        meta = body["metadata"]
        return self.call(
            "PUT", res.path(meta.get("namespace"), meta["name"], sub), body=body, query=query
        )

    def patch(
        self,
        res: Res,
        name: str,
        body: Any,
        namespace: str | None = None,
        *,
        content_type: str = MERGE,
        sub: str | None = None,
        **query: Any,
    ) -> dict[str, Any]:
        return self.call(
            "PATCH",
            res.path(namespace, name, sub),
            body=body,
            content_type=content_type,
            query=query,
        )

    def delete(
        self, res: Res, name: str, namespace: str | None = None, body: dict[str, Any] | None = None
    ) -> Any:
        return self.call("DELETE", res.path(namespace, name), body=body or {})

    def watch(self, res: Res, namespace: str | None = None, **query: Any) -> EventStream:
        query.setdefault("timeoutSeconds", 30)
        response = self.raw(
            "GET", res.path(namespace), query={"watch": "true", **query}, stream=True
        )
        return EventStream(response.response)

    def eventually(self, predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError("condition not reached in time")
            time.sleep(0.05)

    def exists(self, res: Res, name: str, namespace: str | None = None) -> bool:
        try:
            self.get(res, name, namespace)
        except KubeError as exc:
            if exc.status == 404:
                return False
            raise
        return True


def widget_crd() -> dict[str, Any]:
    return yaml.safe_load((HERE / "widget_crd.yaml").read_text())


def ensure_crd(kube: Kube, crd: dict[str, Any]) -> None:
    name = crd["metadata"]["name"]
    if not kube.exists(CRDS, name):
        kube.create(CRDS, crd)

    def established() -> bool:
        # A real server may first answer `conditions: null`, before its controller runs.
        status = kube.get(CRDS, name).get("status") or {}
        return any(
            c["type"] == "Established" and c["status"] == "True"
            for c in status.get("conditions") or []
        )

    kube.eventually(established)
    group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
    version = crd["spec"]["versions"][0]["name"]
    # Discovery catches up with the CRD asynchronously on a cluster.
    kube.eventually(lambda: _served(kube, group, version, plural))


def _served(kube: Kube, group: str, version: str, plural: str) -> bool:
    try:
        resources = kube.call("GET", f"/apis/{group}/{version}")["resources"]
    except KubeError:
        return False
    return any(r["name"] == plural for r in resources)


@pytest.fixture(scope="session", params=["emulator", "real"])
def kube_session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Kube]:
    """Every contract test runs on the emulator and on a real kube-apiserver: the emulator's
    fidelity is measured in every run. The real one is built from source and started for the
    session, or is the cluster KUBE_CONTRACT_REAL=1 and KUBECONFIG name."""
    if request.param == "real" and EXTERNAL:
        kube = Kube(config.new_client_from_config(os.environ["KUBECONFIG"]), None)
        ensure_crd(kube, widget_crd())
        yield kube
        return
    if request.param == "real":
        cluster = start_kube(tmp_path_factory.mktemp("kube-real"), "real")
        try:
            kube = Kube(config.new_client_from_config(str(cluster.kubeconfig)), None)
            ensure_crd(kube, widget_crd())
            yield kube
        finally:
            cluster.stop()
        return
    server = KubeApiServer(bookmark_interval=0.3)
    server.start()
    path = server.write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig")
    kube = Kube(config.new_client_from_config(path), server)
    ensure_crd(kube, widget_crd())
    yield kube
    server.stop()


@pytest.fixture
def kube(kube_session: Kube) -> Iterator[Kube]:
    yield kube_session
    if kube_session.server is not None:
        kube_session.server.clear_faults()


@pytest.fixture
def emulator(kube: Kube) -> KubeApiServer:
    """The emulator itself, for tests of what only it can do (fault injection)."""
    if kube.server is None:
        pytest.skip("emulator-only behaviour")
    return kube.server


@pytest.fixture
def namespace(kube: Kube) -> Iterator[str]:
    name = f"kc-{uuid.uuid4().hex[:8]}"
    kube.create(NAMESPACES, {"metadata": {"name": name}})
    yield name
    with contextlib.suppress(KubeError):
        kube.delete(NAMESPACES, name)


@pytest.fixture
def kubeconfig(emulator: KubeApiServer, tmp_path: Path) -> str:
    return emulator.write_kubeconfig(tmp_path / "kubeconfig")
