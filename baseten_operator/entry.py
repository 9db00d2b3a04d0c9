"""The `baseten-operator` executable: the command line of cli.py, in a process of its own.

Only the installed executable comes through here; tests and tools that import `cli` do not,
so what this module does to the process never leaks into theirs.
"""

from __future__ import annotations

import sys


def main() -> int:
    # rich is installed because truss needs it, and pushes run truss in a child process of
    # their own: this process never draws with rich. structlog's dev module imports rich's
    # traceback renderer whenever rich can be imported, which costs every start about 50 ms
    # and 5 MB for nothing. A None entry in sys.modules is the import system's documented way
    # to make an import fail; structlog then renders exceptions in plain text.
    if "rich" not in sys.modules:
        sys.modules["rich"] = None  # type: ignore[assignment]  # typeshed omits the None entry
    from baseten_operator.cli import main as cli_main

    return cli_main()
