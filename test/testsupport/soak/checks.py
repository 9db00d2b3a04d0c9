"""The soak's verdicts: each check reads the evidence and returns its violations (plain text,
quoting the audit-log entries or log lines that show them)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from testsupport.e2e.harness import RENEW_DEADLINE
from testsupport.soak.stack import Replica, identity_in_user_agent

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Excerpts quoted per violated check: enough to see the pattern, not a wall of text.
MAX_QUOTED = 5
_MODEL_PATH = re.compile(r"^/v1/models/([^/]+)")


@dataclass
class Tracked:
    """One CR of the soak and what the harness did to it, with when (epoch seconds)."""

    name: str
    kind: str  # reconcile | observe | pause | guardrails | retain
    model_id: str = ""
    deployments: dict[str, str] = field(default_factory=dict)  # name -> id
    source: str = "build-1"
    drift: bool = False
    created_at: float = 0.0
    ready_at: float | None = None
    changed_at: float | None = None  # source changed or drift made
    reconverged_at: float | None = None
    paused_at: float | None = None  # status PAUSED first seen
    unpaused_at: float | None = None  # mode Reconcile applied again
    deleted_at: float | None = None
    blocked_at: float | None = None
    drained_at: float | None = None


@dataclass
class Freeze:
    label: str
    identity: str
    stopped_at: float
    takeover_at: float | None = None
    resumed_at: float | None = None
    exit_code: int | None = None
    exited_at: float | None = None


@dataclass
class Evidence:
    tracked: list[Tracked]
    audit: list[dict[str, Any]]
    requests: list[dict[str, Any]]
    kube_writes: list[dict[str, Any]]
    replicas: list[Replica]
    freezes: list[Freeze]
    final_objects: dict[str, dict[str, Any]]  # the CRs left, by name
    environments: dict[str, dict[str, Any] | None]  # the production environment, by CR name
    models_present: dict[str, bool]
    events_json: str
    logs: dict[str, str]  # process name -> its whole log
    api_key: str


def model_of(path: str) -> str | None:
    found = _MODEL_PATH.match(path)
    return found.group(1) if found else None


def _quote(entries: Iterable[dict[str, Any]]) -> str:
    shown = list(entries)[:MAX_QUOTED]
    return "\n      ".join(json.dumps(e, sort_keys=True, default=str) for e in shown)


def _by_model(entries: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in entries:
        model_id = model_of(entry["path"])
        if model_id:
            grouped[model_id].append(entry)
    return grouped


# --------------------------------------------------------------------------- outcomes


def check_convergence(ev: Evidence) -> list[str]:
    """Every CR still reconciled is Ready with its environment serving its source."""
    violations = []
    for t in ev.tracked:
        if t.kind not in ("reconcile", "pause"):
            continue
        obj = ev.final_objects.get(t.name)
        status = (obj or {}).get("status") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        env = ev.environments.get(t.name) or {}
        serving = (
            (env.get("current_deployment") or {}).get("name"),
            env.get("autoscaling_settings"),
        )
        settings = serving[1] or {}
        if not ready or serving[0] != t.source or settings.get("max_replica") != 2:
            violations.append(
                f"{t.name} ({t.kind}) did not converge: Ready={ready} "
                f"status={status.get('deploymentStatus')!r} {status.get('message')!r}; "
                f"environment serves {serving[0]!r} (want {t.source!r}), "
                f"max_replica={settings.get('max_replica')} (want 2)"
            )
    return violations


def check_one_promote_per_source(ev: Evidence) -> list[str]:
    promotes: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for entry in ev.audit:
        if entry.get("endpoint") == "promote" and entry.get("status") == 200:
            deployment = (entry.get("body") or {}).get("deployment_id")
            promotes[(entry["path"], str(deployment))].append(entry)
    return [
        f"{len(entries)} promotes of deployment {deployment} on {path}:\n      {_quote(entries)}"
        for (path, deployment), entries in sorted(promotes.items())
        if len(entries) > 1
    ]


def check_observe_and_pause(ev: Evidence) -> list[str]:
    """Observe CRs: no Baseten write ever. Pause CRs: no request at all while paused."""
    requests = _by_model(ev.requests)
    violations = []
    for t in ev.tracked:
        mine = requests.get(t.model_id, [])
        if t.kind == "observe":
            writes = [e for e in mine if e["method"] in WRITE_METHODS]
            if writes:
                violations.append(
                    f"{len(writes)} Baseten writes for Observe CR {t.name}:\n      {_quote(writes)}"
                )
        if t.kind == "pause" and t.paused_at is not None:
            until = t.unpaused_at or float("inf")
            during = [e for e in mine if t.paused_at <= e["time"] < until]
            if during:
                violations.append(
                    f"{len(during)} Baseten requests for {t.name} while paused:\n"
                    f"      {_quote(during)}"
                )
    return violations


def check_deletions(ev: Evidence) -> list[str]:
    """Guardrails: no delete before the drain, then deleted. Retain: never deleted, kept."""
    deletes = _by_model([e for e in ev.audit if e["method"] == "DELETE" and e["status"] == 200])
    violations = []
    for t in ev.tracked:
        mine = [e for e in deletes.get(t.model_id, []) if e["path"] == f"/v1/models/{t.model_id}"]
        if t.kind == "guardrails":
            early = [e for e in mine if t.drained_at is None or e["time"] < t.drained_at]
            if early:
                violations.append(
                    f"model of {t.name} deleted while serving:\n      {_quote(early)}"
                )
            if ev.models_present.get(t.name) or t.name in ev.final_objects:
                violations.append(f"{t.name}: drained but not deleted (CR or model left)")
        elif mine:
            violations.append(f"model of {t.name} ({t.kind}) deleted:\n      {_quote(mine)}")
        if t.kind == "retain":
            if not ev.models_present.get(t.name):
                violations.append(f"Retain model of {t.name} is gone from Baseten")
            if t.name in ev.final_objects:
                violations.append(f"Retain CR {t.name} was not released")
    return violations


# --------------------------------------------------------------------------- fencing


def deposed_at(replica: Replica, replicas: list[Replica]) -> float | None:
    """When another replica became leader after this one did (None: never deposed)."""
    mine = replica.became_leader()
    if not mine:
        return None
    later = [t for r in replicas if r is not replica for t in r.became_leader() if t > mine[0]]
    return min(later) if later else None


def writes_after_deposition(
    replicas: list[Replica], writes: list[dict[str, Any]], what: str
) -> list[str]:
    """No write by a replica after it lost the Lease, told apart by User-Agent identity.

    A write without an identity counts when a deposed replica was still running at that
    moment: it may be that replica's, and nothing shows it is not.
    """
    by_identity = {r.identity: r for r in replicas if r.identity}
    deposed = {r.label: deposed_at(r, replicas) for r in replicas}
    violations = []
    for replica in replicas:
        since = deposed[replica.label]
        if since is None:
            continue
        late = [
            w
            for w in writes
            if identity_in_user_agent(w.get("user_agent")) == replica.identity and w["time"] > since
        ]
        if late:
            violations.append(
                f"{len(late)} {what} writes by {replica.label} ({replica.identity}) after it "
                f"lost the Lease at {since:.3f}:\n      {_quote(late)}"
            )
        until = replica.stopped_at or float("inf")
        unknown = [
            w
            for w in writes
            if identity_in_user_agent(w.get("user_agent")) not in by_identity
            and since < w["time"] < until
        ]
        if unknown:
            agents = sorted({str(w.get("user_agent")) for w in unknown})
            violations.append(
                f"{len(unknown)} {what} writes while deposed {replica.label} still ran cannot be "
                f"told apart (User-Agent carries no replica identity: {agents}):\n"
                f"      {_quote(unknown)}"
            )
    return violations


def operator_kube_writes(writes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The operators' writes: not the harness's kubectl, not the Lease (the election itself)."""
    return [
        w
        for w in writes
        if not str(w.get("user_agent") or "").startswith("kubectl/") and w["resource"] != "leases"
    ]


def check_fencing(ev: Evidence) -> list[str]:
    baseten = [
        e for e in ev.requests if e["method"] in WRITE_METHODS and e["path"].startswith("/v1")
    ]
    return writes_after_deposition(ev.replicas, baseten, "Baseten") + writes_after_deposition(
        ev.replicas, operator_kube_writes(ev.kube_writes), "Kubernetes"
    )


def check_frozen_exit(ev: Evidence) -> list[str]:
    violations = []
    for freeze in ev.freezes:
        if freeze.exit_code is None or freeze.exited_at is None or freeze.resumed_at is None:
            violations.append(f"frozen replica {freeze.label} did not exit after SIGCONT")
            continue
        took = freeze.exited_at - freeze.resumed_at
        if freeze.exit_code == 0:
            violations.append(f"frozen replica {freeze.label} exited 0 ({took:.1f}s after SIGCONT)")
        if took > RENEW_DEADLINE + 1:
            violations.append(
                f"frozen replica {freeze.label} exited {took:.1f}s after SIGCONT "
                f"(more than the renew deadline {RENEW_DEADLINE:.0f}s + 1s)"
            )
    return violations


# --------------------------------------------------------------------------- hygiene


def check_no_traceback(ev: Evidence) -> list[str]:
    """No operator log line carries a traceback; each kind is quoted once, with its count."""
    violations = []
    for name, text in ev.logs.items():
        if not name.startswith("operator"):
            continue
        kinds: Counter[str] = Counter()
        for line in text.splitlines():
            if "Traceback" in line:
                kinds[_traceback_kind(line)] += 1
        violations += [f"{name}: {count} x {kind}" for kind, count in kinds.most_common()]
    return violations


def _traceback_kind(line: str) -> str:
    """`msg: last line of the stacktrace` of a JSON record, else the raw line."""
    try:
        record = json.loads(line)
    except ValueError:
        return line.strip()[:200]
    stacktrace = str(record.get("stacktrace") or "").strip().splitlines()
    last = stacktrace[-1] if stacktrace else "?"
    return f"{record.get('msg')!r} with {last[:200]}"


def check_api_key_hidden(ev: Evidence) -> list[str]:
    places = {f"log of {name}": text for name, text in ev.logs.items()}
    places["Events"] = ev.events_json
    places["BasetenModel objects"] = json.dumps(ev.final_objects)
    return [
        f"the API key appears in {where}" for where, text in places.items() if ev.api_key in text
    ]


CHECKS = (
    ("every Reconcile CR converges on its source", check_convergence),
    ("at most one promote per (model, environment, source)", check_one_promote_per_source),
    ("Observe writes nothing, Pause requests nothing", check_observe_and_pause),
    ("no model deleted while serving; Retain kept", check_deletions),
    ("no write after losing the Lease", check_fencing),
    ("the frozen replica exits non-zero in time", check_frozen_exit),
    ("no traceback in the operator logs", check_no_traceback),
    ("the API key in no log, Event or status", check_api_key_hidden),
)


def run_checks(ev: Evidence) -> dict[str, list[str]]:
    return {title: check(ev) for title, check in CHECKS}
