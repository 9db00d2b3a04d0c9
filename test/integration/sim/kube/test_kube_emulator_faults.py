"""What only the emulator does: fault injection, its control API, the standalone server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from kubernetes import config

from baseten_operator.sim.kube import KubeApiServer


def _cm(name: str) -> dict:
    return {"metadata": {"name": name}, "data": {"k": "v"}}


def test_fail_next_by_verb_and_resource(kube, emulator, namespace):
    kube.create(kube.CONFIGMAPS, _cm("f"), namespace)
    emulator.fail_next(2, 500, verb="get", resource="configmaps")
    kube.get(kube.WIDGETS.__class__("", "v1", "namespaces", False), namespace)  # other resource
    kube.list(kube.CONFIGMAPS, namespace)  # other verb
    for _ in range(2):
        with pytest.raises(kube.Error) as failed:
            kube.get(kube.CONFIGMAPS, "f", namespace)
        assert failed.value.status == 500 and failed.value.body["reason"] == "InternalError"
    assert kube.get(kube.CONFIGMAPS, "f", namespace)["metadata"]["name"] == "f"


def test_429_carries_retry_after(kube, emulator, namespace):
    emulator.fail_next(
        1, 429, verb="create", resource="widgets.contract.example.com", retry_after=3
    )
    with pytest.raises(kube.Error) as throttled:
        kube.create(kube.WIDGETS, {"metadata": {"name": "t"}, "spec": {"size": 1}}, namespace)
    assert throttled.value.status == 429 and throttled.value.body["reason"] == "TooManyRequests"
    assert throttled.value.headers["Retry-After"] == "3"
    assert kube.create(kube.WIDGETS, {"metadata": {"name": "t"}, "spec": {"size": 1}}, namespace)


def test_fault_api_over_http(kube, emulator, namespace):
    answer = kube.call(
        "POST",
        "/_sim/faults",
        body={"action": "fail_next", "count": 1, "status": 503, "verb": "list"},
    )
    assert answer == {"ok": True}
    with pytest.raises(kube.Error) as unavailable:
        kube.list(kube.CONFIGMAPS, namespace)
    assert unavailable.value.status == 503
    with pytest.raises(kube.Error) as unknown:
        kube.call("POST", "/_sim/faults", body={"action": "explode"})
    assert unknown.value.status == 400


def test_write_log_keeps_every_write_with_its_user_agent(kube, emulator, namespace):
    first = len(kube.call("GET", "/_sim/writes"))
    emulator.fail_next(1, 500, verb="delete", resource="configmaps")
    kube.create(kube.CONFIGMAPS, _cm("w"), namespace)
    kube.get(kube.CONFIGMAPS, "w", namespace)
    with pytest.raises(kube.Error):
        kube.call("DELETE", kube.CONFIGMAPS.path(namespace, "w"))
    writes = kube.call("GET", "/_sim/writes", query={"since": first})
    assert [(w["verb"], w["resource"], w["namespace"], w["name"]) for w in writes] == [
        ("create", "configmaps", namespace, None),
        ("delete", "configmaps", namespace, "w"),
    ]
    assert {w["user_agent"] for w in writes} == {kube.api.user_agent}


def test_dropped_watches_end_abruptly_and_graceful_ones_cleanly(kube, emulator, namespace):
    abrupt = kube.watch(kube.CONFIGMAPS, namespace)
    kube.eventually(lambda: emulator.watch_count() >= 1)
    assert kube.call("POST", "/_sim/faults", body={"action": "drop_watches"})["dropped"] >= 1
    assert abrupt.ended.wait(5)
    assert abrupt.error is not None  # no end-of-stream chunk: the client sees a broken stream
    graceful = kube.watch(kube.CONFIGMAPS, namespace)
    kube.eventually(lambda: emulator.watch_count() >= 1)
    emulator.drop_watches(graceful=True)
    assert graceful.ended.wait(5)
    assert graceful.error is None


def test_stalled_watches_deliver_once_resumed(kube, emulator, namespace):
    rv = kube.list(kube.CONFIGMAPS, namespace)["metadata"]["resourceVersion"]
    stream = kube.watch(kube.CONFIGMAPS, namespace, resourceVersion=rv)
    try:
        emulator.stall_watches(True)
        kube.create(kube.CONFIGMAPS, _cm("late"), namespace)
        with pytest.raises(TimeoutError):
            stream.next(timeout=0.5)
        emulator.stall_watches(False)
        assert stream.next()["object"]["metadata"]["name"] == "late"
    finally:
        emulator.stall_watches(False)
        stream.close()


def test_latency_delays_requests(kube, emulator, namespace):
    emulator.set_latency(0.2)
    started = time.monotonic()
    kube.list(kube.CONFIGMAPS, namespace)
    assert time.monotonic() - started >= 0.2
    emulator.set_latency(0)


def test_closed_watches_are_released(kube, emulator, namespace):
    before = emulator.watch_count()
    streams = [kube.watch(kube.CONFIGMAPS, namespace) for _ in range(3)]
    state = lambda: kube.call("GET", "/_sim/state")["watches"]  # noqa: E731
    kube.eventually(lambda: state() == before + 3)
    for stream in streams:
        stream.close()
    kube.eventually(lambda: state() == before, timeout=10)


def test_concurrent_writes_get_distinct_versions(kube, namespace):
    versions: list[int] = []
    lock = threading.Lock()

    def write(i: int) -> None:
        created = kube.create(kube.CONFIGMAPS, _cm(f"c{i}"), namespace)
        with lock:
            versions.append(int(created["metadata"]["resourceVersion"]))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(versions)) == 40


def test_reset_restores_a_fresh_server(tmp_path: Path):
    with KubeApiServer() as server:
        api = config.new_client_from_config(server.write_kubeconfig(tmp_path / "kc"))
        from kubernetes import client

        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "scratch"}})
        server.fail_next(5)
        server.reset()
        names = {n.metadata.name for n in core.list_namespace().items}
        assert names == {"default", "kube-system", "kube-public", "kube-node-lease"}


def test_history_limit_expires_old_versions(tmp_path: Path):
    with KubeApiServer(history_limit=3) as server:
        namespaces = server.store.lookup("", "v1", "namespaces")
        assert namespaces is not None
        first = server.store.create(namespaces, None, {"metadata": {"name": "h0"}})
        for i in range(1, 5):
            server.store.create(namespaces, None, {"metadata": {"name": f"h{i}"}})
        request = urllib.request.Request(
            f"{server.url}/api/v1/namespaces?watch=true&resourceVersion="
            f"{first['metadata']['resourceVersion']}"
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            event = json.loads(response.readline())
        assert event["type"] == "ERROR" and event["object"]["code"] == 410


def test_standalone_server_runs_until_sigterm(tmp_path: Path):
    kubeconfig = tmp_path / "kc"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "baseten_operator.sim.kube",
            "--port",
            "0",
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{url}/version", timeout=5) as response:
            assert json.loads(response.read())["major"] == "1"
        assert url in kubeconfig.read_text()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()


def test_stop_hangs_up_and_start_resumes_on_the_same_port(tmp_path: Path):
    server = KubeApiServer()
    url = server.start()
    try:
        from kubernetes import client

        core = client.CoreV1Api(
            config.new_client_from_config(server.write_kubeconfig(tmp_path / "kc"))
        )
        core.create_namespace({"metadata": {"name": "kept"}})
        server.stop()
        with pytest.raises(Exception):  # noqa: B017 - urllib3 raises several connection errors
            core.list_namespace(_request_timeout=2)
        assert server.start() == url
        assert "kept" in {n.metadata.name for n in core.list_namespace().items}
    finally:
        server.stop()


def test_builtin_tables_have_their_usual_columns(kube, namespace):
    table = kube.call("GET", kube.NAMESPACES.path(), accept=kube.TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Status", "Age"]
    row = next(r for r in table["rows"] if r["cells"][0] == namespace)
    assert row["cells"][1] == "Active"
    assert row["object"]["kind"] == "PartialObjectMetadata"


def test_continue_token_expires_with_compaction(kube, emulator, namespace):
    for i in range(3):
        kube.create(kube.CONFIGMAPS, _cm(f"page{i}"), namespace)
    first = kube.list(kube.CONFIGMAPS, namespace, limit=1)
    kube.patch(kube.CONFIGMAPS, "page0", {"data": {"k": "changed"}}, namespace)
    emulator.compact()
    with pytest.raises(kube.Error) as expired:
        kube.list(
            kube.CONFIGMAPS, namespace, limit=1, **{"continue": first["metadata"]["continue"]}
        )
    assert expired.value.status == 410 and expired.value.body["reason"] == "Expired"
