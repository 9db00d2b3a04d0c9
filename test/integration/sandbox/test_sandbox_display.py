"""The display's pieces in-process: rows change only when a column does, events once each."""

from __future__ import annotations

import io
import json
import shlex
from typing import Any

from baseten_operator.sandbox.console import Console
from baseten_operator.sandbox.display import DELETED, row_of
from baseten_operator.sandbox.events import EventLog
from baseten_operator.sandbox.playbook import PlaybookIds, build_playbook, render_playbook

IDS = PlaybookIds("a1", "b2", "c3", "d4")


def model(status: dict[str, Any], mode: str = "Reconcile") -> dict[str, Any]:
    return {
        "metadata": {"name": "m", "namespace": "default"},
        "spec": {"modelName": "llm", "mode": mode, "environment": {"name": "production"}},
        "status": status,
    }


def event(uid: str, reason: str, count: int) -> dict[str, Any]:
    return {
        "metadata": {"uid": uid},
        "type": "Normal",
        "reason": reason,
        "message": "minReplicas 5→2",
        "count": count,
        "involvedObject": {"kind": "BasetenModel", "name": "m"},
    }


def test_row_takes_the_printer_columns_and_marks_deletion() -> None:
    status = {"activeDeploymentName": "d1", "activeReplicaCount": 0, "deploymentStatus": "ACTIVE"}
    row = row_of(model(status, mode="Observe"))
    assert row.cells() == ("m", "llm", "production", "d1", "0", "ACTIVE", "Observe")
    assert row_of(model(status), deleted=True).status == DELETED
    paused = model({})
    paused["spec"]["paused"] = True
    assert row_of(paused).mode == "Pause"


def test_event_log_counts_each_occurrence_once() -> None:
    log = EventLog()
    first = log.record(event("u1", "AutoscalingUpdated", 1))
    assert first is not None
    assert log.record(event("u1", "AutoscalingUpdated", 1)) is None  # a relist, not news
    again = log.record(event("u1", "AutoscalingUpdated", 2))
    assert again is not None and again.count == 2
    assert len(log) == 2
    assert log.find("AutoscalingUpdated", "m", since=again.seen_at) is again
    assert log.find("AutoscalingUpdated", "other") is None


def test_playbook_commands_are_printed_one_per_line() -> None:
    plays = build_playbook("/k/config", "http://127.0.0.1:1", IDS)
    out = io.StringIO()
    Console(out).lines(render_playbook(plays))
    commands = [line for line in out.getvalue().splitlines() if line.startswith("  $ ")]
    assert "  $ export KUBECONFIG=/k/config" in commands
    assert any('"deployment_id":"c3"' in command for command in commands)
    assert any(
        '"model_id":"b2"' in command and '"min_replica":0' in command for command in commands
    )


def test_the_playbook_tells_a_bad_rollout_reverted() -> None:
    plays = build_playbook("/k/config", "http://127.0.0.1:1", IDS)
    (play,) = [p for p in plays if p.title == "A bad rollout, revert"]
    sources = [c for c in play.commands if "sourceDeploymentName" in c]
    # Out to the bad build, then back to the one it replaced.
    assert "img-1.2-wgt-1.0-p-1.5" in sources[0]
    assert "img-1.0-wgt-1.0-p-1.3" in sources[1]
    assert any('"ramp_up_while_promoting":true' in c for c in play.commands)
    assert play.commands[-1] == "kubectl get events --field-selector reason=PromotionCancelled"


def test_the_playbook_rotates_a_secret_and_shows_its_hash_not_its_value() -> None:
    plays = build_playbook("/k/config", "http://127.0.0.1:1", IDS)
    (play,) = [p for p in plays if p.title == "Rotate a Secret"]
    assert any(c.startswith("kubectl create secret generic hf-token ") for c in play.commands)
    assert play.commands[-1] == "curl -sS --fail-with-body http://127.0.0.1:1/_sim/secrets"


def test_the_playbook_catches_a_bad_model_after_the_revert_and_restores_production() -> None:
    plays = build_playbook("/k/config", "http://127.0.0.1:1", IDS, time_scale=0.02)
    titles = [p.title for p in plays]
    assert titles.index("A bad model, caught") == titles.index("A bad rollout, revert") + 1
    (play,) = [p for p in plays if p.title == "A bad model, caught"]
    # The seeded candidate answers 30% of its requests with 5xx.
    assert '"deployment_id":"d4","requests_per_second":20.0,"share_5xx":0.3' in play.commands[0]
    patches = [json.loads(shlex.split(c)[-1])["spec"] for c in play.commands if " patch " in c]
    assert patches[0]["sourceDeploymentName"] == "img-1.3-wgt-2.0-p-1.6"
    assert patches[0]["environment"]["promotionSettings"]["rampUpWhilePromoting"] is True
    analysis = patches[0]["promotion"]["analysis"]
    assert analysis["mode"] == "Guard" and analysis["failureLimit"] == 2
    assert analysis["interval"] == "30s"
    assert analysis["metrics"] == [{"name": "errors", "errorRatio": {"maxPercent": 2}}]
    # The wait outlasts a cancelled ramp's way down at this time scale (60 s) and the checks.
    assert (
        "--for=jsonpath='{.status.deploymentStatus}'=ROLLED_BACK --timeout=96s"
        in (play.commands[2])
    )
    # The play ends where the ones after it expect production: CI's build, no analysis.
    assert patches[-1] == {
        "sourceDeploymentName": "img-1.0-wgt-1.0-p-1.3",
        "environment": {"promotionSettings": None},
        "promotion": None,
    }
