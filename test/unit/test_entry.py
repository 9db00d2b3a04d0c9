"""The installed executable (entry.py) keeps rich out of the operator's process, and logging
still renders exceptions without it."""

from __future__ import annotations

import json
import subprocess
import sys

# A fresh interpreter, as the console script starts one: pytest's own process has long
# imported structlog (and may import truss, which needs rich).
PROBE = r"""
import io, json, sys
from baseten_operator import entry
sys.argv = ["baseten-operator", "crd"]
sys.stdout = io.StringIO()
code = entry.main()
crd = sys.stdout.getvalue()
sys.stdout = sys.__stdout__

import structlog
from baseten_operator.runtime.logging import configure_logging
lines = io.StringIO()
configure_logging("info", "console", stream=lines)
try:
    raise RuntimeError("probe failure")
except RuntimeError:
    structlog.get_logger("probe").exception("probe logged")
print(json.dumps({
    "code": code,
    "crd": "kind: CustomResourceDefinition" in crd,
    "rich": repr(sys.modules.get("rich", "absent")),
    "structlog_dev": "structlog.dev" in sys.modules,
    "logged": lines.getvalue(),
}))
"""


def test_the_executable_runs_its_command_without_importing_rich() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    probe = json.loads(done.stdout.splitlines()[-1])
    assert probe["code"] == 0 and probe["crd"]
    assert probe["structlog_dev"]
    assert probe["rich"] == "None"  # blocked, not merely not imported yet
    assert "probe logged" in probe["logged"]
    assert "Traceback (most recent call last)" in probe["logged"]
    assert "RuntimeError: probe failure" in probe["logged"]
