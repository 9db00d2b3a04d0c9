"""`--scenario tour`: the README's stories, scripted and narrated, ending with a summary.

Each step says in one line what it does, acts the way a person would (kubectl-style
writes through the Kubernetes API, click-ops through the Baseten simulator's control
API), then waits (bounded) for the outcome the operator must produce, read back from
the APIs: Events, BasetenModel status, the simulator's state and its audit log.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from baseten_operator.api.constants import BASETENMODELS, BASETENSECRETS, ROLLED_BACK
from baseten_operator.baseten.metrics import BASETEN_API_REQUESTS
from baseten_operator.controller.shared.timing import Timing
from baseten_operator.runtime.errors import NotFound
from baseten_operator.runtime.resource import SECRETS
from baseten_operator.sandbox.cluster import SAMPLES_NAMESPACE
from baseten_operator.sandbox.console import Console
from baseten_operator.sandbox.display import LiveDisplay
from baseten_operator.sandbox.events import EventLog, Occurrence
from baseten_operator.sandbox.playbook import (
    BAD_MODEL_FAILURE_LIMIT,
    BAD_MODEL_INTERVAL,
    BAD_MODEL_MAX_ERRORS,
    BASETEN_SECRET_CR,
    BASETEN_SECRET_NAME,
    DESIRED_MIN_REPLICAS,
    DRIFT_MIN_REPLICAS,
    GUARDED_CR,
    PRODUCTION_CR,
    STAGING_CR,
    analysed,
    unanalysed,
)
from baseten_operator.sandbox.seed import (
    BAD_MODEL_DEPLOYMENT,
    BAD_MODEL_TRAFFIC,
    CI_DEPLOYMENT,
    HEALTHY_TRAFFIC,
    HF_SECRET,
    HF_SECRET_KEY,
    HF_TOKEN,
    HF_TOKEN_ROTATED,
    NEXT_CI_DEPLOYMENT,
    PRODUCTION,
    VLLM_MODEL,
)
from baseten_operator.sandbox.stack import Sandbox
from baseten_operator.sandbox.waiting import Interrupted, WaitTimeout, wait_until

T = TypeVar("T")
SAMPLE_CRS = (PRODUCTION_CR, STAGING_CR, GUARDED_CR)
# Observation window of "nothing must happen" checks, in operator steady periods.
QUIET_PERIODS = 1.1


class StepFailed(Exception):
    """A step's outcome did not show up, or showed up wrong."""


@dataclass(frozen=True)
class StepResult:
    number: int
    title: str
    outcome: str  # "ok" | "failed" | "skipped"
    seconds: float
    detail: str


@dataclass(frozen=True)
class Step:
    title: str
    narration: str
    run: Callable[[], str]  # returns the one-line result


def ready(obj: dict[str, Any] | None) -> bool:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def api_call_counts() -> tuple[int, int]:
    """(all, writes) Baseten Management API requests the operator made in this process."""
    total = writes = 0
    for metric in BASETEN_API_REQUESTS.collect():
        for sample in metric.samples:
            if not sample.name.endswith("_total"):
                continue
            total += int(sample.value)
            if sample.labels.get("method") != "GET":
                writes += int(sample.value)
    return total, writes


class Tour:
    def __init__(
        self,
        sandbox: Sandbox,
        display: LiveDisplay,
        events: EventLog,
        console: Console,
        *,
        step_timeout: float,
        stop: threading.Event,
    ) -> None:
        self.sandbox = sandbox
        self.display = display
        self.events = events
        self.console = console
        self.step_timeout = step_timeout
        self.stop = stop
        self.timing = Timing.scaled(sandbox.settings.time_scale)
        self.sim = sandbox.simulator
        self.llm_id = sandbox.account.llm_model_id
        self.steps = [
            Step(
                "samples converge",
                "Applied config/samples: the operator promotes CI's build and truss-pushes "
                "the two trussConfig models.",
                self.converge,
            ),
            Step(
                "click-ops drift is reverted",
                f"Someone sets minReplicas {DRIFT_MIN_REPLICAS} on {PRODUCTION} in the Baseten "
                "UI; the operator puts the spec's value back on its next pass.",
                self.drift,
            ),
            Step(
                "a failed build is retried",
                f"CI's next build {NEXT_CI_DEPLOYMENT} failed; {PRODUCTION_CR} is pointed at it.",
                self.failed_build,
            ),
            Step(
                "a bad model is caught and rolled back",
                f"{BAD_MODEL_DEPLOYMENT} answers 30% of its requests with 5xx; {PRODUCTION_CR} "
                f"promotes it in ramp stages, its errors checked every {BAD_MODEL_INTERVAL}s.",
                self.bad_model,
            ),
            Step(
                "a TTL deactivation is healed",
                "Baseten's inactivity TTL deactivates the production deployment.",
                self.ttl,
            ),
            Step(
                "pause, then resume",
                f"{PRODUCTION_CR} is paused (spec.mode: Pause), then drifts in the UI.",
                self.pause,
            ),
            Step(
                "observe mode reports drift without writing",
                f"{PRODUCTION_CR} switches to spec.mode: Observe, then drifts in the UI.",
                self.observe,
            ),
            Step(
                "a rotated Secret reaches Baseten once",
                f"The Secret {HF_SECRET} behind BasetenSecret {BASETEN_SECRET_CR} is rotated "
                "(kubectl apply); the operator writes the new value to Baseten, once.",
                self.rotate,
            ),
            Step(
                "a guarded deletion waits for the drain",
                f"kubectl delete bm {GUARDED_CR} (deletionPolicy: DeleteWithGuardrails) while "
                "production still has replicas.",
                self.guarded_delete,
            ),
        ]

    # -- driving ---------------------------------------------------------------------------

    def run(self) -> list[StepResult]:
        results: list[StepResult] = []
        total = len(self.steps)
        for number, step in enumerate(self.steps, start=1):
            if self.stop.is_set() or (results and results[0].outcome != "ok"):
                results.append(StepResult(number, step.title, "skipped", 0.0, ""))
                continue
            self.console.line("")
            self.console.line(f"==> [{number}/{total}] {step.narration}")
            started = time.monotonic()
            try:
                detail, outcome = step.run(), "ok"
            except Interrupted:
                detail, outcome = "interrupted", "failed"
            except (StepFailed, WaitTimeout) as error:
                detail, outcome = str(error), "failed"
            seconds = time.monotonic() - started
            self.console.line(f"<== [{number}/{total}] {outcome} in {seconds:.1f}s: {detail}")
            results.append(StepResult(number, step.title, outcome, seconds, detail))
        return results

    def _wait(self, probe: Callable[[], T | None], what: str) -> T:
        return wait_until(probe, self.step_timeout, what, stop=self.stop)

    def _say(self, text: str) -> None:
        self.console.line(f"    {text}")

    def _event(self, reason: str, name: str, since: float, **kwargs: Any) -> Occurrence:
        return self._wait(
            lambda: self.events.find(reason, name, since=since, **kwargs),
            f"event {reason} on {name}",
        )

    def _cr(self, name: str) -> dict[str, Any] | None:
        return self.display.model(SAMPLES_NAMESPACE, name)

    def _status(self, name: str) -> dict[str, Any]:
        return (self._cr(name) or {}).get("status") or {}

    def _spec(self, name: str) -> dict[str, Any]:
        return (self._cr(name) or {}).get("spec") or {}

    def _environment(self, model_id: str, env: str = PRODUCTION) -> dict[str, Any]:
        return self.sim.engine.get_environment(model_id, env)

    def _min_replicas(self, model_id: str) -> int:
        return int(self._environment(model_id)["autoscaling_settings"]["min_replica"])

    def _patch_spec(self, name: str, spec: dict[str, Any]) -> int:
        """A merge patch of the CR's spec; returns the new generation."""
        patched = self.sandbox.kube.patch(BASETENMODELS, name, {"spec": spec}, SAMPLES_NAMESPACE)
        return int(patched["metadata"]["generation"])

    def _observed(self, name: str, generation: int) -> bool:
        return int(self._status(name).get("observedGeneration") or 0) >= generation

    def _writes_on(self, model_id: str, since_index: int) -> list[dict[str, Any]]:
        return [
            entry
            for entry in self.sim.audit_log()[since_index:]
            if f"/models/{model_id}/" in entry["path"]
        ]

    def _ui_drift(self, model_id: str, minimum: int) -> None:
        self.sim.ui_update_environment(
            model_id, PRODUCTION, autoscaling_settings={"min_replica": minimum}
        )
        self._say(f"UI: {PRODUCTION} minReplicas -> {minimum}")

    def _reverted(self, since: float) -> Occurrence:
        occurrence = self._event("AutoscalingUpdated", PRODUCTION_CR, since)
        self._wait(
            lambda: self._min_replicas(self.llm_id) == DESIRED_MIN_REPLICAS,
            f"minReplicas back to {DESIRED_MIN_REPLICAS} in Baseten",
        )
        return occurrence

    # -- the steps -------------------------------------------------------------------------

    def converge(self) -> str:
        self._wait(
            lambda: all(ready(self._cr(name)) for name in SAMPLE_CRS),
            "every sample to be Ready",
        )
        promoted = self._event("DeploymentPromoted", PRODUCTION_CR, 0.0)
        pushes = [self._event("TrussPushCompleted", name, 0.0) for name in (STAGING_CR, GUARDED_CR)]
        active = self._status(PRODUCTION_CR).get("activeDeploymentName") or ""
        if not active.startswith(CI_DEPLOYMENT):
            raise StepFailed(f"{PRODUCTION_CR} serves {active!r}, expected {CI_DEPLOYMENT}")
        return f"{promoted.message}; {len(pushes)} truss pushes completed; all 3 Ready"

    def drift(self) -> str:
        since = time.monotonic()
        self._ui_drift(self.llm_id, DRIFT_MIN_REPLICAS)
        occurrence = self._reverted(since)
        return f"AutoscalingUpdated: {occurrence.message}"

    def failed_build(self) -> str:
        since = time.monotonic()
        self.sim.seed_deployment(self.llm_id, NEXT_CI_DEPLOYMENT, status="BUILD_FAILED")
        self._say(f"Baseten: {NEXT_CI_DEPLOYMENT} is BUILD_FAILED")
        self._patch_spec(PRODUCTION_CR, {"sourceDeploymentName": NEXT_CI_DEPLOYMENT})
        self._say(f"kubectl patch: sourceDeploymentName -> {NEXT_CI_DEPLOYMENT}")
        retried = self._event("DeploymentRetried", PRODUCTION_CR, since)
        self._wait(
            lambda: ready(self._cr(PRODUCTION_CR))
            and (self._status(PRODUCTION_CR).get("activeDeploymentName") or "").startswith(
                NEXT_CI_DEPLOYMENT
            ),
            f"{NEXT_CI_DEPLOYMENT} active in {PRODUCTION}",
        )
        return f"DeploymentRetried: {retried.message}; then promoted and ACTIVE"

    def bad_model(self) -> str:
        since = time.monotonic()
        old = self._environment(self.llm_id)["current_deployment"]
        source = self._spec(PRODUCTION_CR)["sourceDeploymentName"]
        self._promote_bad_model(old)
        checks = self._caught(since)
        rolled_back = self._event("PromotionRolledBack", PRODUCTION_CR, since)
        self._still_serving(old)
        self._restore(source, old["name"])
        return (
            f"PromotionRolledBack after {checks} checks: {rolled_back.message}; "
            f"{old['name']} served throughout"
        )

    def _promote_bad_model(self, old: dict[str, Any]) -> None:
        """Production's deployment answers healthily, the bad model 30% 5xx; production is
        pointed at the bad model, with the analysis."""
        self.sim.set_traffic_profile(old["id"], **HEALTHY_TRAFFIC)
        bad_id = self.sandbox.account.bad_model_deployment_id
        self.sim.set_traffic_profile(bad_id, **BAD_MODEL_TRAFFIC)
        self._say(f"Baseten: {old['name']} serves healthily; {BAD_MODEL_DEPLOYMENT} 30% 5xx")
        self._patch_spec(PRODUCTION_CR, analysed(BAD_MODEL_DEPLOYMENT))
        self._say(
            f"kubectl patch: sourceDeploymentName -> {BAD_MODEL_DEPLOYMENT}, ramp stages, "
            f"analysis errors <= {BAD_MODEL_MAX_ERRORS}%, failureLimit {BAD_MODEL_FAILURE_LIMIT}"
        )

    def _caught(self, since: float) -> int:
        """The analysis failed the bad model in as many checks as its limit, each in a row,
        and rolled it back: the last check's Event, ROLLED_BACK and its message. Returns
        the number of checks."""
        limit = BAD_MODEL_FAILURE_LIMIT
        in_a_row = f"({limit} of {limit} in a row)"
        last_failed = self._event(
            "AnalysisCheckFailed", PRODUCTION_CR, since, matching=lambda o: in_a_row in o.message
        )
        self._say(f"AnalysisCheckFailed: {last_failed.message}")
        status = self._wait(self._rolled_back, f"{PRODUCTION_CR} {ROLLED_BACK}")
        message = status.get("message") or ""
        self._say(f"status.message: {message}")
        if not (
            message.startswith(f"rolled back {BAD_MODEL_DEPLOYMENT}: errors ")
            and message.endswith(f"in {limit} consecutive checks")
        ):
            raise StepFailed(f"unexpected {ROLLED_BACK} message: {message!r}")
        checks = int(status["promotion"]["analysis"]["checks"])
        if checks != limit:
            # A check that passed or was inconclusive came first: the errors went unseen.
            raise StepFailed(f"rolled back after {checks} checks, not within {limit}")
        return checks

    def _rolled_back(self) -> dict[str, Any] | None:
        status = self._status(PRODUCTION_CR)
        return status if status.get("deploymentStatus") == ROLLED_BACK else None

    def _still_serving(self, old: dict[str, Any]) -> None:
        """The rolled-back candidate has no traffic left: the old deployment serves alone."""
        environment = self._environment(self.llm_id)
        current = environment["current_deployment"]
        if current["id"] != old["id"]:
            raise StepFailed(f"{PRODUCTION} serves {current['name']}, not {old['name']}")
        if environment.get("in_progress_promotion") is not None:
            raise StepFailed(f"still promoting: {environment['in_progress_promotion']}")

    def _restore(self, source: str, serving: str) -> None:
        """Back to the source the step found, without the analysis: Ready, serving it."""
        generation = self._patch_spec(PRODUCTION_CR, unanalysed(source))
        self._say(f"kubectl patch: sourceDeploymentName -> {source}, no analysis")
        self._wait(
            lambda: self._observed(PRODUCTION_CR, generation)
            and ready(self._cr(PRODUCTION_CR))
            and self._status(PRODUCTION_CR).get("activeDeploymentName") == serving,
            f"{PRODUCTION_CR} Ready, serving {serving}",
        )

    def ttl(self) -> str:
        since = time.monotonic()
        current = self._environment(self.llm_id)["current_deployment"]
        self.sim.deactivate(current["id"])
        self._say(f"Baseten TTL: deactivating {current['name']}")
        reactivated = self._event("DeploymentReactivated", PRODUCTION_CR, since)
        self._wait(
            lambda: self.sim.engine.get_deployment(self.llm_id, current["id"])["status"] == "ACTIVE"
            and self._status(PRODUCTION_CR).get("deploymentStatus") == "ACTIVE",
            f"{current['name']} ACTIVE again",
        )
        return f"DeploymentReactivated: {reactivated.message}; ACTIVE again"

    def pause(self) -> str:
        since = time.monotonic()
        self._patch_spec(PRODUCTION_CR, {"mode": "Pause"})
        self._say("kubectl patch: spec.mode -> Pause")
        self._event("ReconciliationPaused", PRODUCTION_CR, since)
        self._wait(
            lambda: self._status(PRODUCTION_CR).get("deploymentStatus") == "PAUSED", "PAUSED"
        )
        audit_mark = len(self.sim.audit_log())
        self._ui_drift(self.llm_id, DRIFT_MIN_REPLICAS)
        quiet = self.timing.steady * (1 + self.timing.steady_earliest) * QUIET_PERIODS
        self._say(f"watching {quiet:.1f}s (longer than an operator pass): the drift must stay")
        if self.stop.wait(quiet):
            raise Interrupted("pause window")
        if self._min_replicas(self.llm_id) != DRIFT_MIN_REPLICAS:
            raise StepFailed("the drift was reverted while paused")
        writes = self._writes_on(self.llm_id, audit_mark)
        if writes:
            raise StepFailed(f"Baseten writes while paused: {writes}")
        resumed = time.monotonic()
        self._patch_spec(PRODUCTION_CR, {"mode": "Reconcile"})
        self._say("kubectl patch: spec.mode -> Reconcile")
        self._reverted(resumed)
        return "PAUSED left the drift alone (no Baseten write); resuming reverted it"

    def observe(self) -> str:
        generation = self._patch_spec(PRODUCTION_CR, {"mode": "Observe"})
        self._say("kubectl patch: spec.mode -> Observe")
        self._wait(lambda: self._observed(PRODUCTION_CR, generation), "observe mode in status")
        audit_mark = len(self.sim.audit_log())
        self._ui_drift(self.llm_id, DRIFT_MIN_REPLICAS)
        expected = f"drift: minReplicas {DESIRED_MIN_REPLICAS}→{DRIFT_MIN_REPLICAS}"
        message = self._wait(
            lambda: (self._status(PRODUCTION_CR).get("message") or "")
            if expected in (self._status(PRODUCTION_CR).get("message") or "")
            else "",
            f"status.message reporting {expected!r}",
        )
        self._say(f"status.message: {message}")
        writes = self._writes_on(self.llm_id, audit_mark)
        if writes:
            raise StepFailed(f"Baseten writes in observe mode: {writes}")
        resumed = time.monotonic()
        self._patch_spec(PRODUCTION_CR, {"mode": "Reconcile"})
        self._say("kubectl patch: spec.mode -> Reconcile")
        self._reverted(resumed)
        return "drift reported, audit log shows no write; back to Reconcile, reverted"

    def _baseten_secret(self) -> dict[str, Any] | None:
        """The simulator's view of the sample's secret: writes and the value's SHA-256."""
        return next((s for s in self.sim.secrets() if s["name"] == BASETEN_SECRET_NAME), None)

    def _holds(self, value: str) -> dict[str, Any] | None:
        held = self._baseten_secret()
        digest = hashlib.sha256(value.encode()).hexdigest()
        return held if held is not None and held["value_sha256"] == digest else None

    def rotate(self) -> str:
        # The sample synced at start: Baseten holds the seeded value, written once.
        first = self._wait(lambda: self._holds(HF_TOKEN), f"{BASETEN_SECRET_NAME} in Baseten")
        self._wait(
            lambda: (self._basetensecret_status().get("state") == "SYNCED"),
            f"{BASETEN_SECRET_CR} SYNCED",
        )
        since = time.monotonic()
        secret = self.sandbox.kube.get(SECRETS, HF_SECRET, SAMPLES_NAMESPACE)
        secret["data"] = {HF_SECRET_KEY: base64.b64encode(HF_TOKEN_ROTATED.encode()).decode()}
        self.sandbox.kube.update(SECRETS, secret)
        self._say(f"kubectl apply: Secret {HF_SECRET} key {HF_SECRET_KEY} rotated")
        synced = self._event("SecretSynced", BASETEN_SECRET_CR, since)
        rotated = self._wait(
            lambda: self._holds(HF_TOKEN_ROTATED), f"the new value in {BASETEN_SECRET_NAME}"
        )
        self._say(
            f"Baseten: {BASETEN_SECRET_NAME} writes {first['writes']} -> {rotated['writes']}, "
            f"value sha256 {first['value_sha256'][:12]}... -> {rotated['value_sha256'][:12]}..."
        )
        if rotated["writes"] != first["writes"] + 1:
            raise StepFailed(
                f"{rotated['writes'] - first['writes']} upserts for one rotation, expected 1"
            )
        return f"SecretSynced: {synced.message}; one upsert, the value never shown"

    def _basetensecret_status(self) -> dict[str, Any]:
        obj = self.sandbox.kube.get(BASETENSECRETS, BASETEN_SECRET_CR, SAMPLES_NAMESPACE)
        status: dict[str, Any] = obj.get("status") or {}
        return status

    def guarded_delete(self) -> str:
        since = time.monotonic()
        vllm_id = self.sim.engine.find_model_id(VLLM_MODEL)
        if vllm_id is None:
            raise StepFailed(f"model {VLLM_MODEL} does not exist in Baseten")
        self.sandbox.kube.delete(BASETENMODELS, GUARDED_CR, SAMPLES_NAMESPACE)
        self._say(f"kubectl delete bm {GUARDED_CR}")
        blocked = self._event("ModelDeleteBlocked", GUARDED_CR, since)
        if f"{PRODUCTION} (min=" not in blocked.message:
            raise StepFailed(f"the block does not name {PRODUCTION}: {blocked.message}")
        self._wait(
            lambda: self._status(GUARDED_CR).get("deploymentStatus") == "DELETE_BLOCKED",
            "DELETE_BLOCKED",
        )
        # A drain as someone in a hurry does it: replicas go after one minute, not fifteen.
        self.sim.ui_update_environment(
            vllm_id, PRODUCTION, autoscaling_settings={"min_replica": 0, "scale_down_delay": 60}
        )
        self._say(f"UI: drain {VLLM_MODEL}/{PRODUCTION} (minReplicas 0, scaleDownDelay 60 s)")
        deleted = self._event("ModelDeleted", GUARDED_CR, since)
        self._wait(lambda: self._gone(GUARDED_CR), f"{GUARDED_CR} gone")
        if self.sim.engine.find_model_id(VLLM_MODEL) is not None:
            raise StepFailed(f"{VLLM_MODEL} still exists in Baseten")
        return f"blocked ({blocked.message}); after the drain: {deleted.message}"

    def _gone(self, name: str) -> bool:
        try:
            self.sandbox.kube.get(BASETENMODELS, name, SAMPLES_NAMESPACE)
        except NotFound:
            return True
        return False


def summary_lines(results: list[StepResult], wall_seconds: float, audit_writes: int) -> list[str]:
    calls, writes = api_call_counts()
    passed = sum(result.outcome == "ok" for result in results)
    lines = ["", "Tour summary", "------------"]
    for result in results:
        lines.append(
            f"  {result.outcome.upper():<8}{result.number}. {result.title:<45}"
            f"{result.seconds:6.1f}s"
        )
        if result.outcome == "failed":
            lines.append(f"          {result.detail}")
    lines += [
        "",
        f"  steps passed: {passed}/{len(results)}",
        f"  Baseten API calls by the operator: {calls} ({writes} writes; "
        f"{audit_writes} writes in the simulator's audit log, truss pushes included)",
        f"  wall time: {wall_seconds:.1f}s",
    ]
    return lines
