"""A TCP relay on loopback whose connections a test can cut: the network fault a real API
server cannot be asked to play (the emulator drops watches on request; a relay in front of the
real one resets every connection through it, watches included, as a broken link would)."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

# SO_LINGER on with a zero timeout: close() sends a reset, not an orderly end.
_RESET_ON_CLOSE = struct.pack("ii", 1, 0)


class _Link:
    """One client connection and its upstream, relayed both ways by two threads."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.sockets = (client, upstream)
        self.cut = threading.Event()

    def run(self) -> None:
        client, upstream = self.sockets
        back = threading.Thread(target=self._pump, args=(upstream, client), daemon=True)
        back.start()
        self._pump(client, upstream)
        back.join()
        for sock in self.sockets:
            sock.close()  # a reset if cut (SO_LINGER 0), else the end of a finished exchange

    def reset(self) -> None:
        self.cut.set()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET_ON_CLOSE)
                # Wakes the pumps blocked in recv (closing from here would not, and the
                # kernel would keep the connection open under them).
                sock.shutdown(socket.SHUT_RD)

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        if not self.cut.is_set():  # pass an orderly end on; a cut ends in a reset instead
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)


class Relay:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._links: set[_Link] = set()

    def start(self) -> Relay:
        threading.Thread(target=self._accept, name="relay-accept", daemon=True).start()
        return self

    def cut(self) -> int:
        """Reset every connection through the relay; how many there were."""
        with self._lock:
            links, self._links = self._links, set()
        for link in links:
            link.reset()
        return len(links)

    def close(self) -> None:
        self._listener.close()
        self.cut()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            link = _Link(client, upstream)
            with self._lock:
                self._links.add(link)
            threading.Thread(target=self._serve, args=(link,), daemon=True).start()

    def _serve(self, link: _Link) -> None:
        link.run()
        with self._lock:
            self._links.discard(link)
