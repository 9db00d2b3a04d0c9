"""A server that answers too slowly cannot hold a call past its total deadline.

A real socket server trickles its answer a byte at a time: each read finishes well
within any per-read timeout, so only a total deadline ends the call.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.errors import BasetenAPIError

BODY = b'{"models": []}' + b" " * 200
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"


@dataclass
class DrippingServer:
    """Answers every request one byte per `interval`, from the status line on."""

    interval: float
    listener: socket.socket = field(default_factory=socket.socket)
    cut_short: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> str:
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        threading.Thread(target=self._serve, daemon=True).start()
        host, port = self.listener.getsockname()
        return f"http://{host}:{port}/v1"

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            conn.recv(65536)
            answer = HEAD % len(BODY) + BODY
            for byte in answer:
                if self.stop.wait(self.interval):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    self.cut_short.set()  # the client hung up mid-answer
                    return

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


@pytest.fixture
def server() -> Iterator[DrippingServer]:
    dripping = DrippingServer(interval=0.05)
    yield dripping
    dripping.close()


def test_a_trickled_answer_fails_at_the_call_deadline(server: DrippingServer) -> None:
    # The whole answer would take ~14 s; every single byte arrives within 0.05 s.
    client = BasetenClient("k", server.start(), timeout=0.5, max_attempts=1)
    with pytest.raises(BasetenAPIError) as caught:
        client.list_models()
    assert caught.value.status_code == 0
    assert str(caught.value) == (
        "timeout on GET /v1/models: no complete answer within the 0.5s deadline"
    )
    assert server.cut_short.wait(5), "the client never hung up on the dripping server"


def test_the_deadline_covers_retries_too(server: DrippingServer) -> None:
    # Idempotent GETs are retried, but all attempts share the one deadline.
    client = BasetenClient("k", server.start(), timeout=0.5, max_attempts=4)
    with pytest.raises(BasetenAPIError, match="0.5s deadline"):
        client.list_models()
