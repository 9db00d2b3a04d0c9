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


def head_bytes(text: str, limit: int) -> str:
    """The longest head of `text` that is at most `limit` bytes of UTF-8: a cut through a
    multi-byte character drops that character, never writes half of it."""
    return text.encode()[:limit].decode(errors="ignore")


def cut_bytes(text: str, limit: int) -> str:
    """`text` when it fits in `limit` bytes, else its head ending in `…` (at most `limit`)."""
    if len(text.encode()) <= limit:
        return text
    return head_bytes(text, limit - len(ELLIPSIS.encode())) + ELLIPSIS


_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str) -> str:
    """`text` as Go's `%q` (strconv.Quote) writes it: in double quotes, with quotes,
    backslashes and non-printable characters escaped. Go's printable set (letters, marks,
    numbers, punctuation, symbols, the ASCII space) is Python's `str.isprintable`."""
    out = []
    for char in text:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'
