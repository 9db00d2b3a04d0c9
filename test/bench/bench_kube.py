"""Scale figures for the Kubernetes API emulator (printed, never asserted).

.venv/bin/python test/bench/bench_kube.py
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from baseten_operator.sim.kube import KubeApiServer

LIST_SIZE = 5000
WATCHERS = 200
WRITES = 2000
WRITER_THREADS = 8


def _connection(url: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)


def _request(
    conn: http.client.HTTPConnection, method: str, path: str, body: object = None
) -> bytes:
    payload = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=payload, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    if response.status >= 300:
        raise RuntimeError(f"{method} {path}: {response.status} {data[:200]!r}")
    return data


def _configmap(name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "labels": {"bench": "yes"}}, "data": {"key": "x" * 64}}


def bench_list(server: KubeApiServer) -> list[tuple[str, float, str]]:
    configmaps = server.store.lookup("", "v1", "configmaps")
    assert configmaps is not None
    for i in range(LIST_SIZE):
        server.store.create(configmaps, "default", _configmap(f"list-{i:05d}"))
    conn = _connection(server.url)
    timings = []
    size = 0
    for _ in range(5):
        started = time.perf_counter()
        size = len(_request(conn, "GET", "/api/v1/namespaces/default/configmaps"))
        timings.append(time.perf_counter() - started)
    paged_started = time.perf_counter()
    token = ""
    while True:
        page = json.loads(
            _request(
                conn, "GET", f"/api/v1/namespaces/default/configmaps?limit=500&continue={token}"
            )
        )
        token = page["metadata"].get("continue", "")
        if not token:
            break
    paged = time.perf_counter() - paged_started
    conn.close()
    return [
        (
            f"list {LIST_SIZE} configmaps (median of 5)",
            statistics.median(timings),
            f"s ({size / 1e6:.1f} MB)",
        ),
        (f"list {LIST_SIZE} configmaps in pages of 500", paged, "s"),
    ]


def bench_fanout(server: KubeApiServer) -> list[tuple[str, float, str]]:
    received: list[float] = []
    lock = threading.Lock()
    ready = threading.Barrier(WATCHERS + 1)
    rv = json.loads(
        _request(_connection(server.url), "GET", "/api/v1/namespaces/default/configmaps?limit=1")
    )["metadata"]["resourceVersion"]

    def watch() -> None:
        conn = _connection(server.url)
        conn.request(
            "GET",
            f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=60",
        )
        response = conn.getresponse()
        ready.wait()
        response.readline()  # the single event
        with lock:
            received.append(time.perf_counter())
        conn.close()

    threads = [threading.Thread(target=watch, daemon=True) for _ in range(WATCHERS)]
    for thread in threads:
        thread.start()
    ready.wait()
    deadline = time.monotonic() + 30
    while server.watch_count() < WATCHERS and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.perf_counter()
    _request(
        _connection(server.url),
        "POST",
        "/api/v1/namespaces/default/configmaps",
        _configmap("fanout"),
    )
    for thread in threads:
        thread.join(timeout=30)
    latencies = sorted(t - started for t in received)
    return [
        (f"fan-out of one write to {WATCHERS} watchers: all delivered", latencies[-1], "s"),
        (
            f"fan-out of one write to {WATCHERS} watchers: median delivery",
            statistics.median(latencies),
            "s",
        ),
    ]


def bench_writes(server: KubeApiServer) -> list[tuple[str, float, str]]:
    results = []
    for threads_count in (1, WRITER_THREADS):
        per_thread = WRITES // threads_count

        def write(index: int, count: int = per_thread, tag: int = threads_count) -> None:
            conn = _connection(server.url)
            for i in range(count):
                _request(
                    conn,
                    "POST",
                    "/api/v1/namespaces/default/configmaps",
                    _configmap(f"w{tag}-{index}-{i}"),
                )
            conn.close()

        started = time.perf_counter()
        workers = [threading.Thread(target=write, args=(n,)) for n in range(threads_count)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        elapsed = time.perf_counter() - started
        results.append(
            (
                f"sustained creates, {threads_count} client thread(s)",
                per_thread * threads_count / elapsed,
                "writes/s",
            )
        )
    return results


def run() -> list[tuple[str, float, str]]:
    figures: list[tuple[str, float, str]] = []
    benches: list[Callable[[KubeApiServer], list[tuple[str, float, str]]]] = [
        bench_list,
        bench_fanout,
        bench_writes,
    ]
    for bench in benches:
        with KubeApiServer() as server:
            figures += bench(server)
    for name, value, unit in figures:
        print(f"{name:<60} {value:12.4f} {unit}")
    return figures


if __name__ == "__main__":
    run()
