"""The interactive sandbox: it prints a kubeconfig and commands that work, and Ctrl-C ends it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from testsupport.polling import wait_for

COMMAND_PREFIX = "  $ "
READY_LINE = "Ctrl-C stops everything."
# A play as printed: `{n}. {title}: {note}`, then its commands.
PLAY_HEADING = re.compile(r"^\d+\. (?P<title>.+?): ")
PRODUCTION = "my-llm-model-production"
CI_BUILD = "img-1.0-wgt-1.0-p-1.3"
BAD_MODEL_PLAY = "A bad model, caught"
BAD_MODEL = "img-1.3-wgt-2.0-p-1.6"
# Longer than any printed `kubectl wait --timeout` at the test's time scale: it bounds itself.
COMMAND_TIMEOUT = 120

Result = subprocess.CompletedProcess[str]


def run(command: str, env: dict[str, str]) -> Result:
    return subprocess.run(
        ["bash", "-c", command], env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT
    )


def run_until(command: str, env: dict[str, str], done: Callable[[Result], bool]) -> None:
    """Run `command` until its result satisfies `done` (the operator acts asynchronously)."""
    last: list[Result] = []

    def attempt() -> bool:
        last[:] = [run(command, env)]
        return done(last[0])

    wait_for(
        attempt,
        timeout=30,
        interval=0.2,
        describe=lambda: f"{command}\n{last[0].stdout}\n{last[0].stderr}",
    )


def printed_plays(lines: list[str]) -> list[tuple[str, list[str]]]:
    """The playbook as printed: each play's title and its commands, in order."""
    plays: list[tuple[str, list[str]]] = []
    for line in lines:
        heading = PLAY_HEADING.match(line)
        if heading is not None:
            plays.append((heading["title"], []))
        elif line.startswith(COMMAND_PREFIX) and plays:
            plays[-1][1].append(line.removeprefix(COMMAND_PREFIX))
    return plays


def assert_bad_model_caught(outputs: dict[str, str], audit_log: str) -> None:
    """What the play's commands showed once the rollback happened (before production was
    pointed back at CI's build): ROLLED_BACK, the analysis Failed, the message, both
    Events, Baseten's production still on the old deployment, rolled back once."""
    baseten = next(out for command, out in outputs.items() if "/environments/production" in command)
    environment = json.loads(baseten)
    serving = environment["current_deployment"]["name"]
    assert serving != BAD_MODEL and environment["in_progress_promotion"] is None, environment
    row = outputs[f"kubectl get bm {PRODUCTION}"].splitlines()[-1].split()
    assert {serving, "ROLLED_BACK", "Failed"} <= set(row), row
    message = outputs[f"kubectl get bm {PRODUCTION} -o jsonpath='{{.status.message}}'"]
    expected = (
        rf"rolled back {re.escape(BAD_MODEL)}: errors [\d.]+% above 2% in 2 consecutive checks"
    )
    assert re.fullmatch(expected, message), message
    failed = outputs["kubectl get events --field-selector reason=AnalysisCheckFailed"]
    for count in (1, 2):
        assert f"{BAD_MODEL} failed ({count} of 2 in a row): errors" in failed, failed
    rolled_back = outputs["kubectl get events --field-selector reason=PromotionRolledBack"]
    assert f"Rolled back promotion of {BAD_MODEL} to production: errors" in rolled_back
    cancels = [e for e in json.loads(audit_log) if e["endpoint"] == "force_cancel_promotion"]
    assert len(cancels) == 1, cancels


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
    plays = printed_plays(sandbox.lines)
    commands = [command for _, play in plays for command in play]
    assert BAD_MODEL_PLAY in dict(plays)
    assert any(command.startswith("curl") for command in commands)
    assert any(command.startswith("kubectl delete bm") for command in commands)
    # The ready-made plan: read-only, so it runs (exit 0) whatever the operator is doing.
    assert any(" plan --cluster --kubeconfig " in command for command in commands)
    ready = run("kubectl get bm -o wide", env)
    for name in ("my-llm-model-production", "my-llm-model-staging", "my-vllm-model-production"):
        assert name in ready.stdout

    bad_model: dict[str, str] = {}
    for title, play in plays:
        for command in play:
            if command.endswith(" -w"):
                continue  # the watch runs until Ctrl-C by design
            if "jsonpath='{.status.message}'" in command and "vllm" in command:
                run_until(command, env, lambda r: "deletion blocked: production (min=" in r.stdout)
                continue
            result = run(command, env)
            assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
            if title == BAD_MODEL_PLAY:
                bad_model[command] = result.stdout

    audit_log = next(c for c in commands if c.endswith("/_sim/audit_log"))
    assert_bad_model_caught(bad_model, run(audit_log, env).stdout)
    # The play's last command points production back at CI's build: the rollback is behind it.
    run_until(
        f"kubectl get bm {PRODUCTION} "
        "-o jsonpath='{.status.sourceDeploymentName} {.status.deploymentStatus}'",
        env,
        lambda r: r.stdout.startswith(f"{CI_BUILD} ") and "ROLLED_BACK" not in r.stdout,
    )

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
