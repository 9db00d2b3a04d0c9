"""Bounded text: what an object's status, an Event or a log field may hold.

One oversized input (a 1 MB name copied into a message) must not make an object the API
server refuses to store, nor a log line megabytes long.
"""

from __future__ import annotations

MAX_TEXT = 1024
ELLIPSIS = "…"


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """`text` when it fits in `limit` characters, else its head ending in `…` (exactly `limit`)."""
    if len(text) <= limit:
        return text
    return text[: limit - len(ELLIPSIS)] + ELLIPSIS


def cut_tail(text: str, limit: int = MAX_TEXT) -> str:
    """Like `cut`, keeping the end instead (a traceback's last frames say what failed)."""
    if len(text) <= limit:
        return text
    return ELLIPSIS + text[len(text) - limit + len(ELLIPSIS) :]
