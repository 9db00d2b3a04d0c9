"""The sandbox as a user runs it: `baseten-operator sandbox` in a child process."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

# Fast, but leaves the truss push child (a few seconds of real time) inside the operator's
# scaled push timeout (5 minutes * scale).
TEST_TIME_SCALE = "0.015"


class SandboxProcess:
    """A running sandbox whose stdout is read line by line in the background.

    `command` is the `baseten-operator` to run (default: this checkout's, as a module).
    """

    def __init__(
        self,
        args: list[str],
        cwd: Path,
        command: Sequence[str] = (sys.executable, "-m", "baseten_operator.cli"),
        env: Mapping[str, str] = os.environ,
    ) -> None:
        self.process = subprocess.Popen(
            [*command, "sandbox", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**env, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for_line(self, text: str, timeout: float) -> str:
        """Read until a line containing `text`; fail with the output so far on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            if text in line:
                return line
        pytest.fail(f"no line with {text!r}; output so far:\n" + "\n".join(self.lines))

    def finish(self, timeout: float) -> int:
        """Wait for the exit and read the rest of the output."""
        code = self.process.wait(timeout)
        while (line := self._queue.get(timeout=5)) is not None:
            self.lines.append(line)
        return code

    @property
    def output(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture
def run_sandbox(tmp_path: Path) -> Iterator[Callable[..., SandboxProcess]]:
    started: list[SandboxProcess] = []

    def start(*args: str, **how: Any) -> SandboxProcess:
        """`how`: SandboxProcess's `command` and `env`."""
        sandbox = SandboxProcess(
            ["--work-dir", str(tmp_path / "work"), "--time-scale", TEST_TIME_SCALE, *args],
            tmp_path,
            **how,
        )
        started.append(sandbox)
        return sandbox

    yield start
    for sandbox in started:
        if sandbox.process.poll() is None:
            sandbox.process.kill()
            sandbox.process.wait(10)
