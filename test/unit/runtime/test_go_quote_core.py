"""go_quote writes what Go's %q writes (values checked against strconv.Quote's rules)."""

from __future__ import annotations

import pytest

from baseten_operator.runtime.text import go_quote


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("my-model", '"my-model"'),
        ("", '""'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("line\nbreak\ttab", '"line\\nbreak\\ttab"'),
        ("\x00\x7f", '"\\x00\\x7f"'),
        ("café ünïcode 模型", '"café ünïcode 模型"'),
        ("\u200b", '"\\u200b"'),
        ("\U000e0001", '"\\U000e0001"'),
        ("a b", '"a b"'),
        ("\u00a0", '"\\u00a0"'),
    ],
)
def test_go_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted
