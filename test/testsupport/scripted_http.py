"""Scripted HTTP servers on real sockets: each connection runs a script that reads the
requests and writes whatever answer bytes a test needs (malformed ones included)."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Iterator

import pytest

from testsupport.loopback import accept_each, closed_after

# A request's head and body as the server read them.
Request = tuple[bytes, bytes]
# What the server does with one connection: read requests and write answers through it.
Script = Callable[["Peer"], None]


class Peer:
    """The server's end of one connection."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = b""

    def read_request(self) -> Request | None:
        while b"\r\n\r\n" not in self._buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self._buffer += chunk
        head, _, self._buffer = self._buffer.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(self._buffer) < length:
            self._buffer += self.sock.recv(65536)
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        return head, body

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)


class ScriptedServer:
    """Accepts connections on 127.0.0.1 and runs `script` on each, one thread per
    connection; records every request and counts connections."""

    def __init__(self, script: Script, tls: ssl.SSLContext | None = None) -> None:
        self._script = script
        self._tls = tls
        self.requests: list[Request] = []
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self._count = threading.Lock()
        accept_each(self._listener, self._serve)

    def _serve(self, sock: socket.socket) -> None:
        with self._count:
            self.connections += 1
        try:
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_side=True)
            self._script(RecordingPeer(sock, self.requests))
        except OSError:
            pass
        finally:
            sock.close()

    def close(self) -> None:
        self._listener.close()


class RecordingPeer(Peer):
    def __init__(self, sock: socket.socket, requests: list[Request]) -> None:
        super().__init__(sock)
        self._requests = requests

    def read_request(self) -> Request | None:
        request = super().read_request()
        if request is not None:
            self._requests.append(request)
        return request


def answering(*answers: bytes) -> Script:
    """Each request on a connection gets the next answer; then the connection stays open
    until the client closes it."""

    def script(peer: Peer) -> None:
        for answer in answers:
            if peer.read_request() is None:
                return
            peer.send(answer)
        while peer.read_request() is not None:
            pass

    return script


def dropping_reused_connections(answer: bytes) -> Script:
    """Each connection answers one request, then closes as the next one arrives without
    answering it: a kept-alive connection the server dropped just as a client reused it."""

    def script(peer: Peer) -> None:
        if peer.read_request() is not None:
            peer.send(answer)
            peer.read_request()

    return script


def never_answering(released: threading.Event) -> Script:
    """Reads requests and answers none, until `released` is set (then the connection
    closes): a server too slow for any read timeout."""

    def script(peer: Peer) -> None:
        while peer.read_request() is not None:
            if released.wait(10):
                return

    return script


def every_request(answer: bytes) -> Script:
    def script(peer: Peer) -> None:
        while peer.read_request() is not None:
            peer.send(answer)

    return script


@pytest.fixture
def serve() -> Iterator[Callable[..., ScriptedServer]]:
    """Starts scripted servers (`serve(script, tls=None)`), closed after the test. Import it
    into a conftest to use it."""
    with closed_after(ScriptedServer) as start:
        yield start
