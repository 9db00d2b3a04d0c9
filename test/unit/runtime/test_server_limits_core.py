"""The operator's HTTP servers bound what a client can cost: a thread per connection at
most `max_connections` times, and a connection that goes quiet is closed."""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator

import pytest

from baseten_operator.runtime.httpserver import ConnectionLimits, Response, RoutedHTTPServer
from testsupport.forward_proxy import ipv6_loopback
from testsupport.polling import wait_for


def _ok(path: str, query: object) -> Response:
    return Response(200, b"ok")


def _serving(name: str, idle_timeout: float) -> Iterator[RoutedHTTPServer]:
    server = RoutedHTTPServer(
        "127.0.0.1:0",
        {"/metrics": _ok},
        name=name,
        limits=ConnectionLimits(max_connections=4, idle_timeout=idle_timeout),
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture
def server() -> Iterator[RoutedHTTPServer]:
    yield from _serving("limited", 30.0)


@pytest.fixture
def impatient() -> Iterator[RoutedHTTPServer]:
    """A server whose connections may stay idle 0.5 s."""
    yield from _serving("impatient", 0.5)


def _connect(address: tuple[str, int] | None) -> socket.socket:
    assert address is not None
    return socket.create_connection(address, timeout=5)


def _closed_by_server(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False  # still open, nothing sent
    except ConnectionResetError:
        return True
    finally:
        sock.setblocking(True)


def _get(address: tuple[str, int] | None) -> int:
    assert address is not None
    connection = http.client.HTTPConnection(*address, timeout=5)
    try:
        connection.request("GET", "/metrics")
        return connection.getresponse().status
    finally:
        connection.close()


def test_idle_connections_beyond_the_cap_are_closed_instead_of_costing_threads(
    server: RoutedHTTPServer,
) -> None:
    threads_before = threading.active_count()
    idle = [_connect(server.bound_address) for _ in range(40)]
    try:
        assert wait_for(lambda: sum(_closed_by_server(s) for s in idle) == 36, timeout=10)
        assert threading.active_count() - threads_before <= 4
        with pytest.raises((ConnectionError, http.client.HTTPException)):
            _get(server.bound_address)  # every slot is held by an idle connection
    finally:
        for sock in idle:
            sock.close()
    # Slots come back as the idle connections go away.
    assert wait_for(lambda: _get_or_none(server.bound_address) == 200, timeout=10)


def _get_or_none(address: tuple[str, int] | None) -> int | None:
    try:
        return _get(address)
    except (ConnectionError, http.client.HTTPException):
        return None


def test_a_connection_that_stops_sending_is_closed_after_the_idle_timeout(
    impatient: RoutedHTTPServer,
) -> None:
    address = impatient.bound_address
    assert address is not None
    half_sent = _connect(address)
    half_sent.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # headers never end
    keep_alive = http.client.HTTPConnection(*address, timeout=5)
    keep_alive.request("GET", "/metrics")
    assert keep_alive.getresponse().read() == b"ok"
    assert keep_alive.sock is not None
    idle_after_response = keep_alive.sock
    assert wait_for(lambda: _closed_by_server(half_sent), timeout=5)
    assert wait_for(lambda: _closed_by_server(idle_after_response), timeout=5)
    half_sent.close()
    keep_alive.close()


@pytest.mark.parametrize("simulator", ["kube", "baseten"])
def test_the_simulators_servers_are_bounded_the_same_way(
    simulator: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urllib.parse import urlsplit

    from baseten_operator.sim.baseten import http as baseten_http
    from baseten_operator.sim.baseten.simulator import BasetenSimulator
    from baseten_operator.sim.kube import KubeApiServer
    from baseten_operator.sim.kube import handler as kube_handler

    tight = ConnectionLimits(max_connections=2, idle_timeout=1.0)
    monkeypatch.setattr(kube_handler if simulator == "kube" else baseten_http, "LIMITS", tight)
    server = KubeApiServer() if simulator == "kube" else BasetenSimulator("key")
    url = urlsplit(server.start())
    try:
        address = (url.hostname, url.port)
        held = [_connect(address) for _ in range(2)]  # type: ignore[arg-type]
        refused = _connect(address)  # type: ignore[arg-type]
        assert wait_for(lambda: _closed_by_server(refused), timeout=5)  # beyond the limit
        assert not any(_closed_by_server(s) for s in held)  # still within their idle time
        assert wait_for(lambda: all(_closed_by_server(s) for s in held), timeout=5)  # idle
        for sock in (*held, refused):
            sock.close()
    finally:
        server.stop()


def test_a_request_head_trickling_in_is_cut_at_the_idle_timeout_as_a_whole(
    impatient: RoutedHTTPServer,
) -> None:
    # One byte at a time, each well within the idle timeout: a per-read timeout never
    # trips, so only a deadline on the whole head frees the slot.
    trickle = _connect(impatient.bound_address)
    head = b"GET /metrics HTTP/1.1\r\n" + b"X-Slow: " + b"a" * 200
    sent = 0
    for byte in head:
        try:
            trickle.sendall(bytes([byte]))
        except OSError:
            break  # the server closed it
        sent += 1
        if _closed_by_server(trickle):
            break
        threading.Event().wait(0.05)  # the slow client's pace, not a synchronisation
    assert sent < len(head), "the whole trickle was accepted"
    assert wait_for(lambda: _closed_by_server(trickle), timeout=5)
    trickle.close()


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 on this machine")
def test_an_address_without_a_host_serves_ipv4_and_ipv6_clients() -> None:
    server = RoutedHTTPServer(":0", {"/metrics": _ok}, name="dual")
    server.start()
    try:
        assert server.bound_address is not None
        port = server.bound_address[1]
        assert _get(("127.0.0.1", port)) == 200
        assert _get(("::1", port)) == 200
    finally:
        server.stop()
