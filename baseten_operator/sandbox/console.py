"""One place that writes the sandbox's output: whole lines, flushed, never interleaved.

The live display, the tour's narration and the start-up banner all write from
different threads; a line is the unit a person (or a test reading a pipe) reads.
"""

from __future__ import annotations

import shutil
import sys
import threading
from typing import TextIO

DEFAULT_WIDTH = 200


class Console:
    def __init__(self, stream: TextIO | None = None, *, width: int | None = None) -> None:
        self._stream = stream or sys.stdout
        self._lock = threading.Lock()
        self.width = width or _terminal_width(self._stream)

    def line(self, text: str = "") -> None:
        with self._lock:
            self._stream.write(text + "\n")
            self._stream.flush()

    def lines(self, texts: list[str]) -> None:
        """Several lines kept together (a block other threads cannot cut into)."""
        with self._lock:
            self._stream.write("".join(text + "\n" for text in texts))
            self._stream.flush()


def _terminal_width(stream: TextIO) -> int:
    """The terminal's width, or a wide default when piped (a file has no width)."""
    if stream.isatty():
        return max(shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns, 80)
    return DEFAULT_WIDTH


def trim(text: str, width: int) -> str:
    """`text` on one line, cut to `width` characters with an ellipsis."""
    flat = " ".join(text.split())
    if width <= 1:
        return flat[: max(width, 0)]
    return flat if len(flat) <= width else flat[: width - 1] + "…"
