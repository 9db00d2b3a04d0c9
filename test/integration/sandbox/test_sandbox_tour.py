"""`baseten-operator sandbox --scenario tour` end to end, as `make tour` runs it."""

from __future__ import annotations

import re
from typing import Any

STEPS = (
    "samples converge",
    "click-ops drift is reverted",
    "a failed build is retried",
    "a bad model is caught and rolled back",
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
    "AnalysisCheckFailed",
    "PromotionRolledBack",
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
    assert f"steps passed: {len(STEPS)}/{len(STEPS)}" in output
    calls = re.search(r"Baseten API calls by the operator: (\d+) \((\d+) writes", output)
    assert calls is not None and int(calls.group(1)) > int(calls.group(2)) > 0, output
    # The live display showed the outcomes the steps waited for.
    for reason in SHOWN_EVENTS:
        assert re.search(rf"^  event \w+\s+{reason}\s", output, re.M), reason
    assert "Leader election lease: released." in output
    # The bad model: two failed checks, rolled back while the build before it served.
    assert re.search(
        r"^<== \[4/\d+\] ok in [\d.]+s: PromotionRolledBack after 2 checks: Rolled back "
        r"promotion of img-1\.3-wgt-2\.0-p-1\.6 to production: errors [\d.]+% above 2% in 2 "
        r"consecutive checks; img-1\.1-wgt-1\.0-p-1\.4 served throughout$",
        output,
        re.M,
    ), output
    assert re.search(r"^my-llm-model-production .* ROLLED_BACK ", output, re.M), output
    # The rotation is shown by its write count and hash: no value, old or new, is printed.
    assert re.search(r"Baseten: hf_access_token writes 1 -> 2, value sha256 ", output), output
    for value in ("hf_sandbox_token_v1", "hf_sandbox_token_v2"):
        assert value not in output
