"""Serving one watch request: a chunked stream of JSON event lines until its timeout, until the
watch is ended (a fault, a stopping server), or until the client goes away."""

from __future__ import annotations

import json
import select
import socket
import time
from io import BufferedIOBase

from .calls import ApiCall, truthy
from .emulator import KubeEmulator
from .errors import ApiError
from .selectors import FieldSelector, LabelSelector
from .watch import Delivery, Watcher

DEFAULT_WATCH_TIMEOUT = 1800.0
# How often an idle watch stream checks whether its client went away.
LIVENESS_CHECK_INTERVAL = 1.0


class AbortConnection(Exception):
    """The connection must be dropped without a proper end of stream."""


class WatchStream:
    def __init__(
        self, emulator: KubeEmulator, call: ApiCall, out: BufferedIOBase, connection: socket.socket
    ) -> None:
        self._emulator = emulator
        self._call = call
        self._out = out
        self._connection = connection

    def serve(self) -> bool:
        """Stream the watch; False when the client went away (the connection must close).
        Raises AbortConnection when the watch was dropped abruptly (a fault)."""
        call, store = self._call, self._emulator.store
        rt, query = call.target.rt, call.query
        bookmarks = truthy(query.get("allowWatchBookmarks"))
        labels = LabelSelector.parse(query.get("labelSelector"))
        selected = query.get("fieldSelector")
        if call.target.name is not None:  # GET .../name?watch=true: a watch of one object
            selected = ",".join(filter(None, [selected, f"metadata.name={call.target.name}"]))
        fields = FieldSelector.parse(selected, rt.field_labels)
        try:
            watcher = store.watch(
                rt,
                call.target.namespace,
                labels,
                fields,
                query.get("resourceVersion"),
                send_initial_events=truthy(query.get("sendInitialEvents")),
                bookmarks=bookmarks,
            )
        except ApiError as error:
            if error.code != 410:
                raise
            self._start()
            error_line = json.dumps({"type": "ERROR", "object": error.status()}).encode() + b"\n"
            self._write_chunk(error_line)
            self._end()
            return True
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        try:
            self._start()
            return self._pump(watcher, timeout or DEFAULT_WATCH_TIMEOUT, bookmarks)
        finally:
            store.watches.remove(watcher)

    def _pump(self, watcher: Watcher, timeout: float, bookmarks: bool) -> bool:
        emulator = self._emulator
        stalled = emulator.store.watches.stalled
        start = time.monotonic()
        deadline = start + timeout
        next_bookmark = start + emulator.bookmark_interval
        first = True  # a Table's first event carries the column definitions
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            wait = min(deadline, now + LIVENESS_CHECK_INTERVAL)
            if bookmarks:
                wait = min(wait, next_bookmark)
            items = watcher.take(max(wait - now, 0.0), stalled)
            if watcher.closed == "abrupt":
                raise AbortConnection()
            if watcher.closed is not None:
                break
            if items:
                encoded = []
                for delivery in items:
                    encoded.append(self._encode(delivery, with_columns=first))
                    first = False
                self._write_chunk(b"".join(encoded))
            elif bookmarks and time.monotonic() >= next_bookmark and not stalled.is_set():
                bookmark = emulator.store.idle_bookmark(watcher)
                if bookmark is not None:
                    self._write_chunk(self._encode(bookmark, with_columns=first))
                next_bookmark = time.monotonic() + emulator.bookmark_interval
            elif self._client_gone():
                return False
        self._end()
        return True

    def _encode(self, delivery: Delivery, *, with_columns: bool) -> bytes:
        """One event line; the plain JSON form is shared by every watcher of the event."""
        call, rt = self._call, self._call.target.rt
        table = call.wants_table and delivery.type != "BOOKMARK"
        source = None if table or call.wants_metadata else delivery.source
        cache_key = (delivery.type, rt.api_version)
        if source is not None and cache_key in source.encoded:
            return source.encoded[cache_key]
        obj = call.shaped(
            rt.from_storage(delivery.obj),
            self._emulator.clock.now(),
            table_allowed=table,
            with_columns=with_columns,
        )
        line = json.dumps({"type": delivery.type, "object": obj}, separators=(",", ":")).encode()
        encoded = line + b"\n"
        if source is not None:
            source.encoded[cache_key] = encoded
        return encoded

    def _start(self) -> None:
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\nCache-Control: no-cache, private\r\n\r\n"
        )
        self._out.write(head.encode("latin-1"))

    def _write_chunk(self, data: bytes) -> None:
        self._out.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def _end(self) -> None:
        self._out.write(b"0\r\n\r\n")

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self._connection], [], [], 0)
            return bool(readable) and self._connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True
