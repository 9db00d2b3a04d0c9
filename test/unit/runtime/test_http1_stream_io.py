"""Streamed answers (watches) of the lean HTTP/1.1 client, against scripted servers on
real sockets: lines as they arrive under each framing, the connection's fate at the end,
closing from another thread, failures."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from baseten_operator.runtime.http1 import (
    AnswerBroken,
    HttpFailure,
    Pool,
    ReadTimedOut,
    Stream,
)
from testsupport.scripted_http import Peer, ScriptedServer

CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def open_stream(pool: Pool, read_timeout: float = 5) -> Stream:
    return pool.stream(
        "GET", "/watch", headers={"Accept": "application/json"},
        connect_timeout=5, read_timeout=read_timeout,
    )  # fmt: skip


def test_lines_arrive_as_sent_across_chunks_and_the_connection_is_reused_after(
    serve: Callable[..., ScriptedServer],
) -> None:
    first_read = threading.Event()

    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(CHUNKED_HEAD + chunk(b'{"n": 1}\n{"n"'))
        first_read.wait(5)  # the rest only once the client has the first line
        peer.send(chunk(b": 2}\n") + chunk(b'{"n": 3}') + b"0\r\n\r\n")
        peer.read_request()
        peer.send(OK)

    server = serve(script)
    pool = Pool(server.url)
    stream = open_stream(pool)
    assert stream.status == 200
    lines = iter(stream)
    assert next(lines) == b'{"n": 1}'
    first_read.set()
    assert list(lines) == [b'{"n": 2}', b'{"n": 3}']  # the last line needs no line end
    assert pool.request("GET", "/x", headers={}, connect_timeout=5, read_timeout=5).data == b"{}"
    assert server.connections == 1


@pytest.mark.parametrize(
    "head",
    [b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", b"HTTP/1.1 200 OK\r\n\r\n"],
    ids=["length", "ended-by-close"],
)
def test_a_body_framed_by_length_or_by_the_close_streams_alike(
    serve: Callable[..., ScriptedServer], head: bytes
) -> None:
    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(head + b"one\ntwo\n\n")

    server = serve(script)
    assert list(open_stream(Pool(server.url))) == [b"one", b"two", b""]


def test_an_error_answer_is_read_whole(serve: Callable[..., ScriptedServer]) -> None:
    status = b'{"kind": "Status",\n "code": 403}'

    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(b"HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n")
        peer.send(chunk(status[:10]) + chunk(status[10:]) + b"0\r\n\r\n")

    stream = open_stream(Pool(serve(script).url))
    assert (stream.status, stream.reason, stream.read()) == (403, "Forbidden", status)


def test_close_from_another_thread_wakes_the_blocked_reader(
    serve: Callable[..., ScriptedServer],
) -> None:
    done = threading.Event()

    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(CHUNKED_HEAD + chunk(b"first\n"))
        done.wait(10)  # then silence: the reader blocks

    stream = open_stream(Pool(serve(script).url), read_timeout=30)
    lines = iter(stream)
    assert next(lines) == b"first"
    outcome: list[BaseException] = []

    def read_on() -> None:
        try:
            next(lines)
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read_on)
    reader.start()
    stream.close()
    reader.join(5)
    done.set()
    assert not reader.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], HttpFailure)


def test_silence_past_the_read_timeout_is_a_read_timeout(
    serve: Callable[..., ScriptedServer],
) -> None:
    done = threading.Event()

    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(CHUNKED_HEAD)
        done.wait(10)

    stream = open_stream(Pool(serve(script).url), read_timeout=0.2)
    with pytest.raises(ReadTimedOut):
        list(stream)
    done.set()


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (CHUNKED_HEAD + chunk(b"cut"), "closed mid-answer"),
        (CHUNKED_HEAD + b"zz\r\n", "bad chunk size"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n", "content coding 'gzip'"),
    ],
    ids=["cut", "bad-chunk", "coded"],
)
def test_a_stream_that_breaks_or_cannot_be_read_is_a_broken_answer(
    serve: Callable[..., ScriptedServer], answer: bytes, problem: str
) -> None:
    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(answer)

    with pytest.raises(AnswerBroken, match=problem):
        list(open_stream(Pool(serve(script).url)))
