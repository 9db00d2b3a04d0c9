"""A forward proxy on loopback, for tests whose requests must really go through one.

It speaks what HTTP clients ask of a proxy: `CONNECT host:port` opens a tunnel (for
https targets), and an absolute-form request (`GET http://host:port/path`) is forwarded
(for plain-http targets). Every host name is "resolved" to 127.0.0.1, so a client can
reach a name like `api.test` only through the proxy: a request that arrives proves the
proxy carried it. It can listen on IPv6 (`host="::1"`) and speak TLS itself (an
https:// proxy). It records each request's line and Proxy-Authorization.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import ssl
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from testsupport.loopback import accept_each, closed_after


@dataclass(frozen=True)
class Asked:
    line: str  # "CONNECT api.test:443 HTTP/1.1", "GET http://api.test:80/x HTTP/1.1"
    authorization: str | None  # the Proxy-Authorization it came with


class ForwardProxy:
    def __init__(self, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> None:
        self._tls = tls
        self.asked: list[Asked] = []
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, 0), family=family)
        self.port = self._listener.getsockname()[1]
        netloc = f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"
        self.url = f"{'https' if tls else 'http'}://{netloc}"
        self.address = netloc
        accept_each(self._listener, self._serve)

    def close(self) -> None:
        self._listener.close()

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            if self._tls is not None:
                client = self._tls.wrap_socket(client, server_side=True)
            head, rest = _read_head(client)
            line, *fields = head.decode("iso-8859-1").split("\r\n")
            headers = {
                n.strip().lower(): v.strip() for n, _, v in (f.partition(":") for f in fields)
            }
            self.asked.append(Asked(line, headers.get("proxy-authorization")))
            method, target, version = line.split(" ")
            if method == "CONNECT":
                upstream = socket.create_connection(("127.0.0.1", _port(target)))
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                parts = urlsplit(target)
                upstream = socket.create_connection(("127.0.0.1", parts.port or 80))
                kept = [f for f in fields if not f.lower().startswith(("proxy-", "connection"))]
                origin_form = parts.path + (f"?{parts.query}" if parts.query else "")
                forwarded = "\r\n".join([f"{method} {origin_form} {version}", *kept])
                upstream.sendall(forwarded.encode("iso-8859-1") + b"\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            _relay(client, upstream)
        except (OSError, ValueError):
            pass
        finally:
            client.close()
            if upstream is not None:
                upstream.close()


def _port(authority: str) -> int:
    return int(authority.rpartition(":")[2])


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("closed before a request head")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until either side closes (one thread: an SSL socket must
    not be read and written from two at once)."""
    peers = {client: upstream, upstream: client}
    with selectors.DefaultSelector() as selector:
        for sock in peers:
            selector.register(sock, selectors.EVENT_READ)
        while True:
            if isinstance(client, ssl.SSLSocket) and client.pending():
                ready = [client]  # decrypted already: select would not see it
            else:
                ready = [key.fileobj for key, _ in selector.select()]
            for sock in ready:
                assert isinstance(sock, socket.socket)
                data = sock.recv(65536)
                if not data:
                    with contextlib.suppress(OSError):
                        peers[sock].shutdown(socket.SHUT_WR)
                    return
                peers[sock].sendall(data)


def ipv6_loopback() -> bool:
    """Whether this machine has ::1 (some CI containers have no IPv6)."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.fixture
def proxies() -> Iterator[Callable[..., ForwardProxy]]:
    """Starts forward proxies (`proxies()`, `proxies("::1")`, `proxies(tls=context)`),
    closed after the test. Import it into a conftest to use it."""
    with closed_after(ForwardProxy) as start:
        yield start
