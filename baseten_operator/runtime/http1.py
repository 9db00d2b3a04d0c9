"""A lean HTTP/1.1 client: answers over kept-alive connections to one origin.

Both API clients' requests go through it, Kubernetes watches included. urllib3 and
http.client did the same job at several times the CPU per request: the email
package's header parser, a wrapper response object, header dictionaries, per-call timeout
and retry objects. That was most of a steady pass's cost (docs/performance.md). Here a
request is one `sendall`, and its answer is parsed from one buffer.

Its scope is what the operator's servers send: HTTP/1.1 or 1.0 answers, bodies framed by
Content-Length, chunked or ended by the close, gzip or deflate content coding, TLS, and a
proxy (absolute-form requests for http, a CONNECT tunnel for https). `Pool.request` reads
a whole answer; `Pool.stream` hands the body over line by line as it arrives (a watch).
Nothing is retried here: the callers decide what may be repeated, knowing from the
failure's type whether the server can have seen the request.

Failures are OSErrors:
- `ConnectFailed`: no connection (refused, no route, name unknown); the server never saw
  the request. Its subclasses: `ConnectTimedOut`, `TLSFailed`, `ProxyFailed`.
- `ReadTimedOut`: no answer within the read timeout; the server may have acted.
- `AnswerBroken`: the connection closed or broke mid-exchange, or the answer is not HTTP.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

# Bigger heads (status line and headers) are refused: no server of ours sends one.
MAX_HEAD_BYTES = 64 * 1024
# Bigger bodies (as sent, and once decoded) are refused rather than held in memory: the
# largest the operator reads (a page of 500 objects, a model list) is a few MB.
MAX_BODY_BYTES = 64 * 1024 * 1024
_RECV_BYTES = 256 * 1024
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Methods whose request has a body by definition: they always send a Content-Length.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class HttpFailure(OSError):
    """A request that got no answer."""


class ConnectFailed(HttpFailure):
    """No connection was made: the server never saw the request."""


class ConnectTimedOut(ConnectFailed):
    pass


class TLSFailed(ConnectFailed):
    pass


class ProxyFailed(ConnectFailed):
    pass


class ReadTimedOut(HttpFailure):
    """The request was sent and no answer came in time: the server may have acted on it."""


class AnswerBroken(HttpFailure):
    """The connection closed or broke mid-exchange, or what came back is not HTTP."""


class Headers:
    """An answer's headers, looked up case-insensitively; repeated ones joined by ", "."""

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, str]) -> None:
        self._fields = fields  # lowercase names

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._fields.get(name.lower(), default)


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    reason: str
    headers: Headers
    data: bytes


@dataclass(frozen=True, slots=True)
class _Head:
    """An answer's status line and headers, and how its body is framed."""

    status: int
    reason: str
    fields: dict[str, str]
    framing: Literal["none", "chunked", "length", "close"]
    length: int  # for "length"
    keep_alive: bool


class Connection:
    """One socket and what was read from it beyond the last answer (nothing, normally)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = bytearray()
        self._timeout = sock.gettimeout()
        self._poller = select.poll()
        self._poller.register(sock, select.POLLIN)
        # Whether the last answer left the connection fit for another request.
        self.reusable = False

    def exchange(self, request: bytes, read_timeout: float | None, *, head: bool) -> Answer:
        """Send `request` and read its whole answer."""
        with self.failures(read_timeout):
            answer = self.send(request, read_timeout, head=head)
            if answer.framing == "length":
                _check_body_size(answer.length)
            data = _whole(self.body(answer))
            return Answer(
                answer.status, answer.reason, Headers(answer.fields),
                _decoded(data, answer.fields),
            )  # fmt: skip

    def alive(self) -> bool:
        """Whether an idle connection may carry a request: the server has neither closed
        it nor sent anything unasked (either makes it readable, or leaves decrypted bytes
        in the TLS layer)."""
        if self._buffer or (isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()):
            return False
        return not self._poller.poll(0)

    def close(self) -> None:
        self.sock.close()

    # -- the exchange -------------------------------------------------------------------

    @contextlib.contextmanager
    def failures(self, read_timeout: float | None) -> Iterator[None]:
        """Socket errors as the HttpFailure that says how far the exchange got."""
        try:
            yield
        except TimeoutError as exc:
            raise ReadTimedOut(f"no answer within {read_timeout} s") from exc
        except (ssl.SSLError, OSError) as exc:
            if isinstance(exc, HttpFailure):
                raise
            raise AnswerBroken(f"connection broken: {exc}") from exc

    def send(self, request: bytes, read_timeout: float | None, *, head: bool) -> _Head:
        """Send `request` and read its answer's head (after any 1xx answers)."""
        if read_timeout != self._timeout:
            self.sock.settimeout(read_timeout)
            self._timeout = read_timeout
        self.reusable = False
        self.sock.sendall(request)
        while True:
            status, reason, http10, fields = _parse_head(self._read_head())
            if not 100 <= status < 200 or status == 101:
                break  # 1xx answers (100 Continue) precede the real one
        connection = fields.get("connection", "").lower()
        keep_alive = "keep-alive" in connection if http10 else "close" not in connection
        length = 0
        framing: Literal["none", "chunked", "length", "close"]
        if head or status in (204, 304) or 100 <= status < 200:
            framing = "none"
        elif "chunked" in fields.get("transfer-encoding", "").lower():
            framing = "chunked"
        elif "content-length" in fields:
            framing, length = "length", _length(fields["content-length"])
        else:
            framing = "close"
        return _Head(status, reason, fields, framing, length, keep_alive)

    def body(self, answer: _Head) -> Iterator[bytes]:
        """The body's pieces as they arrive (chunks, or what one read returned); at its
        end, `reusable` says whether another request may follow on this connection."""
        if answer.framing == "chunked":
            yield from self._chunks()
        elif answer.framing == "length":
            remaining = answer.length
            while remaining:
                if not self._buffer:
                    self._fill(mid_answer=True)
                piece = self._take(min(remaining, len(self._buffer)))
                remaining -= len(piece)
                yield piece
        elif answer.framing == "close":
            yield self._take(len(self._buffer))
            while chunk := self.sock.recv(_RECV_BYTES):
                yield chunk
            return  # ended by the close: never reusable
        self.reusable = answer.keep_alive and not self._buffer

    # -- reading ------------------------------------------------------------------------

    def _fill(self, *, mid_answer: bool = False) -> None:
        chunk = self.sock.recv(_RECV_BYTES)
        if not chunk:
            raise AnswerBroken(
                "connection closed mid-answer"
                if mid_answer or self._buffer
                else "connection closed"
            )
        self._buffer += chunk

    def _read_head(self) -> bytes:
        searched = 0
        while True:
            end = self._buffer.find(b"\n\r\n", searched)
            bare = self._buffer.find(b"\n\n", searched)  # tolerated: LF-only line ends
            if bare >= 0 and (end < 0 or bare < end):
                return self._take(bare + 2)[:bare]
            if end >= 0:
                return self._take(end + 3)[:end]
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise AnswerBroken(f"answer head longer than {MAX_HEAD_BYTES} bytes")
            searched = max(0, len(self._buffer) - 2)
            self._fill()

    def _read_line(self) -> bytes:
        while (end := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise AnswerBroken("chunk header line too long")
            self._fill(mid_answer=True)
        return self._take(end + 1).rstrip(b"\r\n")

    def _read_exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._fill(mid_answer=True)
        return self._take(size)

    def _chunks(self) -> Iterator[bytes]:
        while True:
            size_field = self._read_line().split(b";", 1)[0].strip()
            try:
                size = int(size_field, 16)
            except ValueError:
                raise AnswerBroken(f"bad chunk size {size_field[:20]!r}") from None
            if size == 0:
                break
            _check_body_size(size)
            yield self._read_exactly(size)
            if self._read_line():
                raise AnswerBroken("chunk not followed by its line end")
        while self._read_line():  # trailer fields, unused
            pass

    def _take(self, size: int) -> bytes:
        taken = bytes(self._buffer[:size])
        del self._buffer[:size]
        return taken


class Stream:
    """An answer whose body is read as it arrives, a line at a time (a watch's events).

    Iterating it yields the body's lines; the server ending the body ends the iteration,
    and the connection goes back to its pool if it can carry another request. `close()`
    may be called from another thread: it shuts the socket down, which wakes a reader
    blocked on it. Failures while reading are the HttpFailures of `Pool.request`.
    """

    def __init__(
        self, pool: Pool, connection: Connection, answer: _Head, read_timeout: float | None
    ) -> None:
        self.status = answer.status
        self.reason = answer.reason
        self.headers = Headers(answer.fields)
        self._pool = pool
        self._connection = connection
        self._answer = answer
        self._read_timeout = read_timeout
        self._lock = threading.Lock()
        self._done = False
        coding = answer.fields.get("content-encoding", "").strip().lower()
        if coding not in ("", "identity"):  # never asked for: requests send no Accept-Encoding
            self.close()
            raise AnswerBroken(f"a streamed answer in content coding {coding!r}")

    def __iter__(self) -> Iterator[bytes]:
        line = bytearray()
        for piece in self._pieces():
            line += piece
            *complete, rest = line.split(b"\n")
            yield from complete
            line = bytearray(rest)
            if len(line) > MAX_BODY_BYTES:
                self.close()
                raise AnswerBroken(f"a streamed line longer than {MAX_BODY_BYTES} bytes")
        if line:
            yield bytes(line)

    def read(self) -> bytes:
        """The rest of the body, whole (an error answer's Status)."""
        return _decoded(_whole(self._pieces()), self._answer.fields)

    def _pieces(self) -> Iterator[bytes]:
        """The body as it arrives; the connection is released at its end, closed if the
        reading stopped short of it."""
        try:
            with self._connection.failures(self._read_timeout):
                yield from self._connection.body(self._answer)
        except BaseException:
            self.close()
            raise
        self._finish(self._connection.reusable)

    def close(self) -> None:
        self._finish(False)

    def _finish(self, reusable: bool) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        if reusable:
            self._pool._checkin(self._connection)
            return
        with contextlib.suppress(OSError):  # what wakes a reader blocked in recv
            self._connection.sock.shutdown(socket.SHUT_RDWR)
        self._connection.close()


def _parse_head(head: bytes) -> tuple[int, str, bool, dict[str, str]]:
    """(status, reason, HTTP/1.0, fields with lowercase names)."""
    lines = head.decode("iso-8859-1").split("\n")
    version, _, rest = lines[0].rstrip("\r").partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise AnswerBroken(f"not an HTTP/1.x answer: {lines[0][:80]!r}")
    fields: dict[str, str] = {}
    name = ""
    for line in lines[1:]:
        line = line.rstrip("\r")
        if line[:1] in (" ", "\t") and name:  # an obsolete folded continuation
            fields[name] += " " + line.strip()
            continue
        raw_name, colon, value = line.partition(":")
        if not colon or not raw_name.strip():
            raise AnswerBroken(f"malformed header line {line[:80]!r}")
        name, value = raw_name.strip().lower(), value.strip()
        fields[name] = f"{fields[name]}, {value}" if name in fields else value
    return int(code), reason.strip(), version == "HTTP/1.0", fields


def _whole(pieces: Iterator[bytes]) -> bytes:
    """A body's pieces joined, refused once past MAX_BODY_BYTES."""
    data = bytearray()
    for piece in pieces:
        data += piece
        _check_body_size(len(data))
    return bytes(data)


def _check_body_size(size: int) -> None:
    if size > MAX_BODY_BYTES:
        raise AnswerBroken(f"answer body larger than {MAX_BODY_BYTES} bytes")


def _length(value: str) -> int:
    try:
        length = int(value)
    except ValueError:
        length = -1
    if length < 0:
        raise AnswerBroken(f"bad Content-Length {value[:20]!r}")
    return length


def _decoded(data: bytes, fields: Mapping[str, str]) -> bytes:
    coding = fields.get("content-encoding", "").strip().lower()
    if not data or coding in ("", "identity"):
        return data
    try:
        if coding in ("gzip", "x-gzip"):
            return _inflate(data, 16 + zlib.MAX_WBITS)
        if coding == "deflate":
            try:
                return _inflate(data, zlib.MAX_WBITS)
            except zlib.error:  # raw deflate, without the zlib wrapper some servers omit
                return _inflate(data, -zlib.MAX_WBITS)
    except zlib.error as exc:
        raise AnswerBroken(f"body does not decode as {coding}: {exc}") from None
    raise AnswerBroken(f"unsupported content coding {coding!r}")


def _inflate(data: bytes, wbits: int) -> bytes:
    """Decompress, refusing a body that grows past MAX_BODY_BYTES (a compression bomb)."""
    inflater = zlib.decompressobj(wbits)
    inflated = inflater.decompress(data, MAX_BODY_BYTES + 1)
    _check_body_size(len(inflated))
    if not inflater.eof:
        raise zlib.error("incomplete or truncated stream")
    return inflated


@dataclass(frozen=True)
class Proxy:
    """A forwarding proxy: its URL (no credentials) and the headers it is sent."""

    url: str
    headers: Mapping[str, str]


class Pool:
    """Kept-alive connections to one origin, used last in first out.

    Thread-safe; a connection serves one request at a time and goes back to the pool only
    after a complete answer that leaves it reusable. `on_use` is told each connection a
    request is about to use (a caller's total deadline can then shut its socket down).
    """

    def __init__(
        self,
        url: str,
        *,
        tls: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        proxy: Proxy | None = None,
        maxsize: int = 32,
        on_use: Callable[[Connection], None] | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or _DEFAULT_PORTS[parts.scheme]
        default_port = self.port == _DEFAULT_PORTS[parts.scheme]
        host = f"[{self.host}]" if ":" in self.host else self.host
        self._host_field = host if default_port else f"{host}:{self.port}"
        self.origin = f"{self.scheme}://{self._host_field}"
        self._tls = (tls or ssl.create_default_context()) if self.scheme == "https" else None
        self._server_hostname = server_hostname or self.host
        self._proxy = proxy
        # Plain HTTP through a proxy is forwarded (absolute-form targets); HTTPS tunnels.
        self._forwarded = proxy is not None and self._tls is None
        self._maxsize = maxsize
        self._on_use = on_use
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def request(
        self,
        method: str,
        target: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> Answer:
        """`target`: the path and query. Raises an HttpFailure when no answer came."""
        message = self._message(method, target, headers, body)
        connection = self._checkout(connect_timeout)
        if self._on_use is not None:
            self._on_use(connection)
        try:
            answer = connection.exchange(message, read_timeout, head=method == "HEAD")
        except BaseException:
            connection.close()
            raise
        self._checkin(connection)
        return answer

    def stream(
        self,
        method: str,
        target: str,
        *,
        headers: Mapping[str, str],
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> Stream:
        """Send a request without a body and return its answer as soon as its head is
        read; the body is then read from the Stream as it arrives."""
        message = self._message(method, target, headers, None)
        connection = self._checkout(connect_timeout)
        if self._on_use is not None:
            self._on_use(connection)
        try:
            with connection.failures(read_timeout):
                answer = connection.send(message, read_timeout, head=False)
        except BaseException:
            connection.close()
            raise
        return Stream(self, connection, answer, read_timeout)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    # -- connections ----------------------------------------------------------------------

    def _checkout(self, connect_timeout: float | None) -> Connection:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._connect(connect_timeout)
            if connection.alive():
                return connection
            connection.close()

    def _checkin(self, connection: Connection) -> None:
        if connection.reusable:
            with self._lock:
                if not self._closed and len(self._idle) < self._maxsize:
                    self._idle.append(connection)
                    return
        connection.close()

    def _connect(self, timeout: float | None) -> Connection:
        where = urlsplit(self._proxy.url) if self._proxy else None
        host = where.hostname if where else self.host
        port = (where.port or _DEFAULT_PORTS.get(where.scheme, 80)) if where else self.port
        try:
            sock = socket.create_connection((host, port), timeout)
        except TimeoutError:
            raise ConnectTimedOut(
                f"Connection to {host} timed out. (connect timeout={timeout})"
            ) from None
        except OSError as exc:
            raise ConnectFailed(f"Failed to establish a new connection: {exc}") from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                if self._proxy is not None:
                    self._tunnel(sock)
                sock = self._tls.wrap_socket(sock, server_hostname=self._server_hostname)
        except BaseException as exc:
            sock.close()
            if isinstance(exc, HttpFailure):
                raise
            if isinstance(exc, ssl.SSLError):
                raise TLSFailed(f"TLS with {self.host} failed: {exc}") from None
            if isinstance(exc, TimeoutError):
                raise ConnectTimedOut(f"Connection to {host} timed out during set-up") from None
            if isinstance(exc, OSError):
                raise ConnectFailed(f"Failed to establish a new connection: {exc}") from None
            raise
        return Connection(sock)

    def _tunnel(self, sock: socket.socket) -> None:
        """CONNECT through the proxy to this origin; the socket then carries TLS to it."""
        assert self._proxy is not None
        host = f"[{self.host}]" if ":" in self.host else self.host
        authority = f"{host}:{self.port}"
        fields = {"Host": authority, **self._proxy.headers}
        request = _encode(f"CONNECT {authority} HTTP/1.1", fields, None)
        tunnel = Connection(sock)
        try:
            answer = tunnel.exchange(request, sock.gettimeout(), head=True)
        except HttpFailure as exc:
            raise ProxyFailed(f"proxy tunnel to {authority} failed: {exc}") from None
        if not 200 <= answer.status < 300:
            raise ProxyFailed(
                f"proxy refused a tunnel to {authority}: {answer.status} {answer.reason}"
            )

    def _message(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes | None
    ) -> bytes:
        fields = {"Host": self._host_field, **headers}
        if self._forwarded:
            assert self._proxy is not None
            target = self.origin + target
            fields.update(self._proxy.headers)
        if body is not None or method in _BODY_METHODS:
            fields["Content-Length"] = str(len(body or b""))
        return _encode(f"{method} {target} HTTP/1.1", fields, body)


def _encode(request_line: str, fields: Mapping[str, str], body: bytes | None) -> bytes:
    lines = [request_line]
    for name, value in fields.items():
        lines.append(f"{name}: {value}")
    for line in lines:
        if "\n" in line or "\r" in line:  # would smuggle a header or a second request
            raise ValueError(f"line break in a request line or header: {line[:40]!r}")
    message = ("\r\n".join(lines) + "\r\n\r\n").encode("iso-8859-1")
    return message + body if body else message
