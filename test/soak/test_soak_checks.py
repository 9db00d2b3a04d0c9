"""The soak's verdicts on hand-made evidence: each check finds what it must, and only that."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from testsupport.e2e.harness import Process
from testsupport.soak.checks import (
    Evidence,
    Tracked,
    check_deletions,
    check_no_traceback,
    check_observe_and_pause,
    check_one_promote_per_source,
    writes_after_deposition,
)
from testsupport.soak.stack import Replica

pytestmark = pytest.mark.soak

UA = "baseten-operator/dev ({})"


def replica(tmp_path: Path, label: str, identity: str, led_at: float | None) -> Replica:
    """A replica known only by its log (the checks read nothing else of it)."""
    log = tmp_path / f"{label}.log"
    records = [{"msg": "manager started", "identity": identity, "ts": _stamp(0.0)}]
    if led_at is not None:
        records.append({"msg": "became leader", "identity": identity, "ts": _stamp(led_at)})
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = subprocess.Popen(["true"])
    done.wait()
    return Replica(label, Process(label, done, log), started_at=0.0)


def _stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def write(at: float, identity: str | None, path: str = "/v1/models/m1/environments/p") -> dict:
    agent = UA.format(identity) if identity else "python-requests/2"
    return {"time": at, "method": "PATCH", "path": path, "user_agent": agent}


def evidence(tracked: list[Tracked], **parts: Any) -> Evidence:
    base: dict[str, Any] = {
        "tracked": tracked, "audit": [], "requests": [], "kube_writes": [], "replicas": [],
        "freezes": [], "final_objects": {}, "environments": {}, "models_present": {},
        "events_json": "", "logs": {}, "api_key": "k",
    }  # fmt: skip
    return Evidence(**{**base, **parts})


def test_a_deposed_replicas_writes_are_found_by_identity(tmp_path: Path) -> None:
    old = replica(tmp_path, "r1", "host_a", led_at=100.0)
    new = replica(tmp_path, "r2", "host_b", led_at=120.0)
    old.stopped_at = 130.0
    writes = [write(110.0, "host_a"), write(121.0, "host_b"), write(125.0, "host_a")]
    found = writes_after_deposition([old, new], writes, "Baseten")
    assert len(found) == 1
    assert found[0].startswith("1 Baseten writes by r1 (host_a) after it lost the Lease at 120")
    assert '"time": 125.0' in found[0]


def test_writes_without_identity_count_only_while_a_deposed_replica_runs(tmp_path: Path) -> None:
    old = replica(tmp_path, "r1", "host_a", led_at=100.0)
    new = replica(tmp_path, "r2", "host_b", led_at=120.0)
    old.stopped_at = 130.0
    assert writes_after_deposition([old, new], [write(110.0, None), write(131.0, None)], "x") == []
    found = writes_after_deposition([old, new], [write(125.0, None)], "Kubernetes")
    assert len(found) == 1 and "cannot be told apart" in found[0]
    assert "python-requests/2" in found[0]


def test_a_second_promote_of_the_same_source_is_a_violation() -> None:
    def promote(deployment: str, status: int = 200) -> dict:
        body = {"deployment_id": deployment}
        return {"endpoint": "promote", "path": "/v1/models/m/environments/p/promote",
                "body": body, "status": status, "time": 1.0, "method": "POST"}  # fmt: skip

    ok = evidence([], audit=[promote("d1"), promote("d2"), promote("d1", status=409)])
    assert check_one_promote_per_source(ok) == []
    twice = evidence([], audit=[promote("d1"), promote("d2"), promote("d1")])
    assert check_one_promote_per_source(twice)[0].startswith("2 promotes of deployment d1")


def test_observe_writes_and_requests_while_paused() -> None:
    observed = Tracked("o", "observe", model_id="mo")
    paused = Tracked("p", "pause", model_id="mp", paused_at=10.0, unpaused_at=20.0)
    requests = [
        {"time": 5.0, "method": "GET", "path": "/v1/models/mo"},
        {"time": 5.0, "method": "GET", "path": "/v1/models/mp/environments/production"},
        {"time": 25.0, "method": "PATCH", "path": "/v1/models/mp/environments/production"},
    ]
    assert check_observe_and_pause(evidence([observed, paused], requests=requests)) == []
    requests += [
        {"time": 6.0, "method": "DELETE", "path": "/v1/models/mo"},
        {"time": 15.0, "method": "GET", "path": "/v1/models/mp"},
    ]
    found = check_observe_and_pause(evidence([observed, paused], requests=requests))
    assert [f.split(":")[0] for f in found] == [
        "1 Baseten writes for Observe CR o",
        "1 Baseten requests for p while paused",
    ]


def test_deletions_respect_guardrails_and_retain() -> None:
    guarded = Tracked("g", "guardrails", model_id="mg", drained_at=50.0)
    retained = Tracked("r", "retain", model_id="mr")

    def delete(model: str, at: float) -> dict:
        return {"method": "DELETE", "path": f"/v1/models/{model}", "status": 200, "time": at}

    kept = {"g": False, "r": True}
    good = evidence([guarded, retained], audit=[delete("mg", 60.0)], models_present=kept)
    assert check_deletions(good) == []
    bad = evidence(
        [guarded, retained],
        audit=[delete("mg", 40.0), delete("mr", 70.0)],
        models_present={"g": False, "r": False},
    )
    assert [f.split(":")[0] for f in check_deletions(bad)] == [
        "model of g deleted while serving",
        "model of r (retain) deleted",
        "Retain model of r is gone from Baseten",
    ]


def test_tracebacks_are_counted_by_kind() -> None:
    record = {"msg": "reconcile failed", "stacktrace": "Traceback (most recent call last):\n"
              "  ...\nValueError: boom"}  # fmt: skip
    logs = {
        "operator r1": json.dumps(record) + "\n" + json.dumps(record),
        "kube emulator": "Traceback",
    }
    assert check_no_traceback(evidence([], logs=logs)) == [
        "operator r1: 2 x 'reconcile failed' with ValueError: boom"
    ]
