"""The interactive sandbox: it prints a kubeconfig and commands that work, and Ctrl-C ends it."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

COMMAND_PREFIX = "  $ "
READY_LINE = "Ctrl-C stops everything."


def run(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], env=env, capture_output=True, text=True, timeout=30
    )


def run_until(
    command: str, env: dict[str, str], done: Callable[[subprocess.CompletedProcess[str]], bool]
) -> None:
    """Run `command` until its result satisfies `done` (the operator acts asynchronously)."""
    deadline = time.monotonic() + 30
    while True:
        result = run(command, env)
        if done(result):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{command}\n{result.stdout}\n{result.stderr}")
        time.sleep(0.2)


@pytest.mark.parametrize("kube", ["emulator", "real"])
def test_interactive_prints_working_commands_and_stops_on_sigint(
    run_sandbox: Any, kube: str
) -> None:
    sandbox = run_sandbox("--kube", kube)
    # A real API server may be built first (minutes on a cold machine).
    export = sandbox.wait_for_line("export KUBECONFIG=", timeout=60 if kube == "emulator" else 900)
    kubeconfig = export.split("export KUBECONFIG=", 1)[1].strip()
    env = {**os.environ, "KUBECONFIG": kubeconfig}

    listed = run("kubectl get bm", env)
    assert listed.returncode == 0, listed.stderr

    sandbox.wait_for_line(READY_LINE, timeout=60)
    commands = [
        line.removeprefix(COMMAND_PREFIX)
        for line in sandbox.lines
        if line.startswith(COMMAND_PREFIX)
    ]
    assert any(command.startswith("curl") for command in commands)
    assert any(command.startswith("kubectl delete bm") for command in commands)
    # The ready-made plan: read-only, so it runs (exit 0) whatever the operator is doing.
    assert any(" plan --cluster --kubeconfig " in command for command in commands)
    ready = run("kubectl get bm -o wide", env)
    for name in ("my-llm-model-production", "my-llm-model-staging", "my-vllm-model-production"):
        assert name in ready.stdout

    for command in commands:
        if command.endswith(" -w"):
            continue  # the watch runs until Ctrl-C by design
        if "jsonpath='{.status.message}'" in command and "vllm" in command:
            run_until(command, env, lambda r: "deletion blocked: production (min=" in r.stdout)
            continue
        result = run(command, env)
        assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"

    # The rotation reached Baseten: the simulator holds the new value's hash (its count of
    # writes: the first sync's and the rotation's, or only the latter's if it came first).
    rotated = hashlib.sha256(b"hf_my_rotated_token").hexdigest()

    def holds_rotated(result: subprocess.CompletedProcess[str]) -> bool:
        held = [s for s in json.loads(result.stdout or "[]") if s["name"] == "hf_access_token"]
        return bool(held) and held[0]["value_sha256"] == rotated and held[0]["writes"] <= 2

    secrets = next(c for c in commands if c.endswith("/_sim/secrets"))
    run_until(secrets, env, holds_rotated)

    # The last play deletes the guarded model and drains it: the operator lets it go.
    run_until(
        "kubectl get bm my-vllm-model-production",
        env,
        lambda r: r.returncode != 0 and "NotFound" in r.stderr,
    )

    sandbox.process.send_signal(signal.SIGINT)
    assert sandbox.finish(timeout=30) == 0, sandbox.output
    assert "Leader election lease: released." in sandbox.output
    assert not (Path(kubeconfig).parent / "control-plane").exists()  # the real one's data
