"""`baseten-operator sandbox --scenario tour` end to end, as `make tour` runs it."""

from __future__ import annotations

import re
from typing import Any

STEPS = (
    "samples converge",
    "click-ops drift is reverted",
    "a failed build is retried",
    "a TTL deactivation is healed",
    "pause, then resume",
    "observe mode reports drift without writing",
    "a rotated Secret reaches Baseten once",
    "a guarded deletion waits for the drain",
)

SHOWN_EVENTS = (
    "DeploymentPromoted",
    "TrussPushCompleted",
    "DeploymentRetried",
    "DeploymentReactivated",
    "ReconciliationPaused",
    "SecretSynced",
    "ModelDeleteBlocked",
    "ModelDeleted",
)


def test_tour_passes_every_step_and_shuts_down_cleanly(run_sandbox: Any) -> None:
    sandbox = run_sandbox("--scenario", "tour")
    sandbox.wait_for_line("Tour summary", timeout=100)
    code = sandbox.finish(timeout=30)
    output = sandbox.output

    assert code == 0, output
    for number, title in enumerate(STEPS, start=1):
        assert re.search(
            rf"^\s+OK\s+{number}\. {re.escape(title)}\s+\d+\.\ds$", output, re.M
        ), f"step {number} ({title}) not reported as passed:\n{output}"
    assert "steps passed: 8/8" in output
    calls = re.search(r"Baseten API calls by the operator: (\d+) \((\d+) writes", output)
    assert calls is not None and int(calls.group(1)) > int(calls.group(2)) > 0, output
    # The live display showed the outcomes the steps waited for.
    for reason in SHOWN_EVENTS:
        assert re.search(rf"^  event \w+\s+{reason}\s", output, re.M), reason
    assert "Leader election lease: released." in output
    # The rotation is shown by its write count and hash: no value, old or new, is printed.
    assert re.search(r"Baseten: hf_access_token writes 1 -> 2, value sha256 ", output), output
    for value in ("hf_sandbox_token_v1", "hf_sandbox_token_v2"):
        assert value not in output
