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


class Relay:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._pairs: set[tuple[socket.socket, socket.socket]] = set()

    def start(self) -> Relay:
        threading.Thread(target=self._accept, name="relay-accept", daemon=True).start()
        return self

    def cut(self) -> int:
        """Reset every connection through the relay; how many there were."""
        with self._lock:
            pairs, self._pairs = self._pairs, set()
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET_ON_CLOSE)
                    sock.close()
        return len(pairs)

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
            pair = (client, upstream)
            with self._lock:
                self._pairs.add(pair)
            threading.Thread(target=self._relay, args=(pair,), daemon=True).start()

    def _relay(self, pair: tuple[socket.socket, socket.socket]) -> None:
        client, upstream = pair
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
        with self._lock:
            self._pairs.discard(pair)
        for sock in pair:
            sock.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
