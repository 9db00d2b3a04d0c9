"""The lean HTTP/1.1 client against scripted servers on real sockets: framing, reuse,
content coding, failures by how far the request got, TLS trust and proxies."""

from __future__ import annotations

import gzip
import socket
import ssl
import threading
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from baseten_operator.runtime import http1
from baseten_operator.runtime.http1 import (
    Answer,
    AnswerBroken,
    ConnectFailed,
    Pool,
    Proxy,
    ProxyFailed,
    ReadTimedOut,
    TLSFailed,
)
from baseten_operator.runtime.tlscert import self_signed_pem
from testsupport.scripted_http import Peer, RecordingPeer, ScriptedServer, answering, every_request


def get(pool: Pool, target: str = "/x") -> Answer:
    return pool.request(
        "GET", target, headers={"Accept": "application/json"}, connect_timeout=5, read_timeout=5
    )


OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


def test_answers_with_a_length_reuse_one_connection(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(every_request(OK))
    pool = Pool(server.url)
    for _ in range(3):
        answer = get(pool)
        assert (answer.status, answer.reason, answer.data) == (200, "OK", b"{}")
        assert answer.headers.get("content-TYPE") == "application/json"
    assert server.connections == 1
    head, body = server.requests[0]
    assert head.split(b"\r\n")[:2] == [
        b"GET /x HTTP/1.1",
        f"Host: 127.0.0.1:{server.port}".encode(),
    ]
    assert b"Accept: application/json" in head and body == b""


def test_a_body_is_sent_with_its_length_and_a_bodiless_write_says_zero(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve(every_request(OK))
    pool = Pool(server.url)
    pool.request("POST", "/p", headers={}, body=b'{"a": 1}', connect_timeout=5, read_timeout=5)
    pool.request("PUT", "/q", headers={}, connect_timeout=5, read_timeout=5)
    (first_head, first_body), (second_head, _) = server.requests
    assert b"Content-Length: 8" in first_head and first_body == b'{"a": 1}'
    assert b"Content-Length: 0" in second_head


def test_chunked_answers_are_joined_extensions_and_trailers_skipped(
    serve: Callable[..., ScriptedServer],
) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4;ext=1\r\nWiki\r\n6\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n0\r\nTrailer: x\r\n\r\n"
    )
    server = serve(answering(chunked, OK))
    pool = Pool(server.url)
    assert get(pool).data == b"Wikipedia in \r\n\r\nchunks."
    assert get(pool).data == b"{}"
    assert server.connections == 1  # the chunked answer left the connection in step


def test_an_answer_ended_by_the_close_is_read_whole_and_not_reused(
    serve: Callable[..., ScriptedServer],
) -> None:
    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(b"HTTP/1.1 200 OK\r\n\r\nall of it")

    server = serve(script)
    pool = Pool(server.url)
    assert get(pool).data == b"all of it"
    assert get(pool).data == b"all of it"
    assert server.connections == 2


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}",
    ],
)
def test_a_connection_the_server_ends_is_not_reused(
    serve: Callable[..., ScriptedServer], answer: bytes
) -> None:
    server = serve(every_request(answer))
    pool = Pool(server.url)
    get(pool)
    get(pool)
    assert server.connections == 2


def test_an_idle_connection_the_server_closed_is_replaced_without_a_failure(
    serve: Callable[..., ScriptedServer],
) -> None:
    closed = threading.Event()

    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(OK)  # keep-alive says the answer, then the server closes anyway
        peer.sock.close()
        closed.set()

    server = serve(script)
    pool = Pool(server.url)
    get(pool)
    assert closed.wait(5)
    assert get(pool).data == b"{}"
    assert server.connections == 2


@pytest.mark.parametrize(
    ("coding", "encoded"),
    [
        ("gzip", gzip.compress(b'{"big": true}')),
        ("deflate", zlib.compress(b'{"big": true}')),
        ("deflate", zlib.compress(b'{"big": true}')[2:-4]),  # raw deflate, no zlib wrapper
    ],
)
def test_gzip_and_deflate_bodies_are_decoded(
    serve: Callable[..., ScriptedServer], coding: str, encoded: bytes
) -> None:
    head = f"HTTP/1.1 200 OK\r\nContent-Encoding: {coding}\r\nContent-Length: {len(encoded)}"
    server = serve(every_request(head.encode() + b"\r\n\r\n" + encoded))
    assert get(Pool(server.url)).data == b'{"big": true}'


def test_interim_answers_are_skipped(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(every_request(b"HTTP/1.1 100 Continue\r\n\r\n" + OK))
    assert get(Pool(server.url)).status == 200


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x answer"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", "bad Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "closed mid-answer"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\nx", "br"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000, "longer than"),
    ],
)
def test_what_is_not_a_whole_http_answer_is_a_broken_answer(
    serve: Callable[..., ScriptedServer], answer: bytes, problem: str
) -> None:
    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(answer)

    server = serve(script)
    with pytest.raises(AnswerBroken, match=problem):
        get(Pool(server.url))


def test_no_answer_in_time_is_a_read_timeout(serve: Callable[..., ScriptedServer]) -> None:
    answered = threading.Event()

    def script(peer: Peer) -> None:
        peer.read_request()
        answered.wait(10)  # never answers while the client waits

    server = serve(script)
    pool = Pool(server.url)
    try:
        with pytest.raises(ReadTimedOut):
            pool.request("GET", "/", headers={}, connect_timeout=5, read_timeout=0.2)
    finally:
        answered.set()


def test_a_refused_connection_says_so_and_is_a_connect_failure() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    with pytest.raises(ConnectFailed, match="Failed to establish a new connection.*refused"):
        get(Pool(f"http://127.0.0.1:{port}"))


def test_a_line_break_in_a_header_is_refused_before_anything_is_sent(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve(every_request(OK))
    pool = Pool(server.url)
    with pytest.raises(ValueError, match="line break"):
        pool.request(
            "GET", "/", headers={"X": "a\r\nInjected: 1"}, connect_timeout=5, read_timeout=5
        )
    assert server.requests == []


def test_plain_http_through_a_proxy_is_sent_in_absolute_form_with_its_headers(
    serve: Callable[..., ScriptedServer],
) -> None:
    proxy = serve(every_request(OK))
    pool = Pool(
        "http://api.test:8080",
        proxy=Proxy(proxy.url, {"Proxy-Authorization": "Basic dTpw"}),
    )
    get(pool, "/v1/models")
    head, _ = proxy.requests[0]
    assert head.startswith(b"GET http://api.test:8080/v1/models HTTP/1.1\r\n")
    assert b"Host: api.test:8080" in head and b"Proxy-Authorization: Basic dTpw" in head


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, ssl.SSLContext]:
    """A self-signed certificate for `api.test` (its file, to trust) and a server context."""
    cert_pem, key_pem = self_signed_pem(("api.test",))
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(cert_pem)
    key.write_bytes(key_pem)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    return cert, server


def test_tls_is_verified_against_the_trusted_certificates(
    serve: Callable[..., ScriptedServer], certificate: tuple[Path, ssl.SSLContext]
) -> None:
    cert, server_tls = certificate
    server = serve(every_request(OK), tls=server_tls)
    trusted = ssl.create_default_context(cafile=str(cert))
    pool = Pool(server.url, tls=trusted, server_hostname="api.test")
    assert get(pool).status == 200
    with pytest.raises(TLSFailed, match="CERTIFICATE_VERIFY_FAILED"):
        get(Pool(server.url, server_hostname="api.test"))  # the system's CAs only
    with pytest.raises(TLSFailed, match="hostname|match"):
        get(Pool(server.url, tls=trusted, server_hostname="other.test"))


def test_https_through_a_proxy_tunnels_with_connect(
    serve: Callable[..., ScriptedServer], certificate: tuple[Path, ssl.SSLContext]
) -> None:
    cert, server_tls = certificate
    tunnels: list[bytes] = []

    def proxy_script(peer: Peer) -> None:
        request = peer.read_request()
        assert request is not None
        tunnels.append(request[0])
        peer.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
        # The proxy now carries the TLS session: play the origin at the tunnel's end.
        origin = RecordingPeer(server_tls.wrap_socket(peer.sock, server_side=True), [])
        every_request(OK)(origin)

    proxy = serve(proxy_script)
    pool = Pool(
        "https://api.test",
        tls=ssl.create_default_context(cafile=str(cert)),
        proxy=Proxy(proxy.url, {"Proxy-Authorization": "Basic dTpw"}),
    )
    assert get(pool).data == b"{}"
    assert get(pool).data == b"{}"
    assert proxy.connections == 1
    assert tunnels[0].startswith(b"CONNECT api.test:443 HTTP/1.1\r\n")
    assert b"Proxy-Authorization: Basic dTpw" in tunnels[0]


def test_a_proxy_refusing_the_tunnel_is_a_proxy_failure(
    serve: Callable[..., ScriptedServer],
) -> None:
    proxy = serve(
        every_request(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
    )
    pool = Pool("https://api.test", proxy=Proxy(proxy.url, {}))
    with pytest.raises(ProxyFailed, match="407"):
        get(pool)


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n",  # refused before reading it
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"200\r\n"
        + b"x" * 512
        + b"\r\n"
        + b"200\r\n"
        + b"x" * 512
        + b"\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 2000,  # ended by the close
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
        % (len(gzip.compress(b"0" * 5000)), gzip.compress(b"0" * 5000)),  # small, inflates
    ],
    ids=["length", "chunked", "close", "gzip"],
)
def test_a_body_past_the_bound_is_refused_as_sent_or_once_decoded(
    serve: Callable[..., ScriptedServer], monkeypatch: pytest.MonkeyPatch, answer: bytes
) -> None:
    monkeypatch.setattr(http1, "MAX_BODY_BYTES", 1000)

    def script(peer: Peer) -> None:
        peer.read_request()
        peer.send(answer)

    server = serve(script)
    with pytest.raises(AnswerBroken, match="larger than 1000 bytes"):
        get(Pool(server.url))


def test_a_truncated_gzip_body_is_a_broken_answer(serve: Callable[..., ScriptedServer]) -> None:
    cut = gzip.compress(b'{"big": true}' * 50)[:-12]
    head = f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {len(cut)}\r\n\r\n"
    server = serve(every_request(head.encode() + cut))
    with pytest.raises(AnswerBroken, match="does not decode as gzip"):
        get(Pool(server.url))
