"""Progressive delivery of this CR's own promotion (docs/contract.md section 14): the manual
hold, and the analysis that judges the candidate by its own metrics while Baseten moves
traffic to it in steps: every `interval` a check (checks.py); in Guard, `failureLimit`
failed checks in a row act (`onFailure`: roll back or pause); in Gate, the promotion is also
paused as each step starts and resumed only after a check in which every metric passed.

Only a promotion this CR started is held, judged or signalled (`ours`). Every signal is on
record before its call (`status.promotion.control`, written as a version-checked intent,
with the failure count that decided it) and acknowledged after it: a new leader continues
the count, acts once, and never sends an acknowledged signal again; one Baseten refuses is
an error in the status, retried with the work queue's backoff, never assumed done.
"""

from __future__ import annotations

from typing import NoReturn

from baseten_operator.api.analysis import (
    AnalysisMode,
    AnalysisPhase,
    AnalysisStatus,
    ControlAction,
    ControlReason,
    FailureAction,
    MetricResult,
    PromotionAnalysis,
    PromotionControl,
    Verdict,
)
from baseten_operator.api.constants import (
    PROMOTING,
    REANALYZE_ANNOTATION,
    ROLLED_BACK,
    EventReason,
)
from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.models import DeploymentV1, EnvironmentV1
from baseten_operator.controller.basetenmodel import messages
from baseten_operator.controller.basetenmodel.checks import Check, MetricVerdict, run_check
from baseten_operator.controller.basetenmodel.context import Pass
from baseten_operator.controller.basetenmodel.source import matches_source
from baseten_operator.controller.basetenmodel.telemetry import count_check, count_rollback
from baseten_operator.controller.shared.endings import ReconcileError, RequeueAfter
from baseten_operator.runtime.clock import format_rfc3339, parse_rfc3339

RAMPING_UP = "RAMPING_UP"
PAUSED = "PAUSED"
# The shortest wait for a check that is due: a clock a little early does not spin.
_MIN_WAIT = 0.05


def ours(p: Pass, candidate: DeploymentV1) -> bool:
    """The environment's candidate is of a promotion this CR started: it called promote for
    the source the candidate belongs to (`sourceDeploymentID`, on record before the call)."""
    status = p.status
    return bool(status.source_deployment_id) and matches_source(
        candidate.name, status.source_deployment_name or ""
    )


def supervise(
    p: Pass, model_id: str, candidate: DeploymentV1, environment: EnvironmentV1, promoting: str
) -> float | None:
    """Hold and analysis of this CR's promotion of `candidate` in progress: the status is
    set (from `promoting`, the step-11 message) and the wait until the pass wants to look
    again returned; or the pass ends (a signal refused, a hold, a failure acted on). None:
    nothing to supervise (no spec.promotion, or not this CR's promotion)."""
    spec = p.spec.promotion
    if spec is None or not ours(p, candidate):
        return None
    run = _Run(p, model_id, candidate, environment, promoting)
    analysis = spec.analysis
    gate = analysis is not None and analysis.mode == AnalysisMode.GATE
    if analysis is not None:
        run.start_analysis(analysis)
        if run.state.phase == AnalysisPhase.FAILED:
            run.act_on_failure(analysis)
        if gate and not spec.hold:
            # First, before a check (which can take a while): a step that just started is
            # paused at its end, not one step later.
            run.gate_pause()
        if run.check_due():
            run.check(analysis)
    if spec.hold:
        run.hold()
    if run.control_is(ControlAction.PAUSE, ControlReason.HOLD):
        run.release_hold(gate=gate)
    if gate:
        return run.gate()
    return run.report_progress()


def begin(p: Pass, candidate: DeploymentV1, analysis: PromotionAnalysis) -> AnalysisStatus:
    """The analysis of a promotion this CR starts: its first check is due an interval
    after it (and the reanalyze annotation as it stands is remembered)."""
    annotations = p.obj["metadata"].get("annotations") or {}
    state = AnalysisStatus(
        phase=AnalysisPhase.RUNNING,
        candidateDeploymentID=candidate.id,
        next_check_time=format_rfc3339(p.deps.clock.now() + interval(p, analysis)),
        reanalyze=annotations.get(REANALYZE_ANNOTATION),
    )
    p.record_analysis(state)
    return state


def interval(p: Pass, analysis: PromotionAnalysis) -> float:
    """The spec's interval, scaled as every other delay (--time-scale)."""
    return analysis.interval_seconds * p.deps.timing.scale


def rolled_back(p: Pass, candidate: DeploymentV1, reason: str, *, announce: bool) -> NoReturn:
    """ROLLED_BACK: the previous deployment serves; the candidate is not promoted again by
    this CR until the spec names another source or the reanalyze annotation changes."""
    p.record_rollback(candidate)
    p.report(ROLLED_BACK, messages.rolled_back(candidate.name, reason))
    if announce:
        p.event(
            EventReason.PROMOTION_ROLLED_BACK,
            messages.rolled_back_event(candidate.name, p.env, reason),
        )
    raise RequeueAfter(p.steady_period, stalled=True)


class _Run:
    """One pass's supervision of one candidate."""

    def __init__(
        self,
        p: Pass,
        model_id: str,
        candidate: DeploymentV1,
        environment: EnvironmentV1,
        promoting: str,
    ) -> None:
        self.p = p
        self.model_id = model_id
        self.candidate = candidate
        self.promoting = promoting
        self.ap = messages.active_prefix(environment.current_deployment)
        progress = environment.in_progress_promotion
        self.phase = progress.status if progress is not None else None
        self.percent = progress.percent_traffic_to_new_version if progress is not None else None
        self.now = p.deps.clock.now()
        self.last_check: Check | None = None
        self.state = AnalysisStatus(phase=AnalysisPhase.RUNNING)

    # --- the record ----------------------------------------------------------------------

    def start_analysis(self, analysis: PromotionAnalysis) -> None:
        """This candidate's analysis record: the one on record (begun with the promotion),
        else a new one."""
        recorded = self.p.status.promotion.analysis if self.p.status.promotion else None
        if recorded is not None and recorded.candidate_deployment_id == self.candidate.id:
            self.state = recorded
            return
        self.state = begin(self.p, self.candidate, analysis)

    def _interval(self, analysis: PromotionAnalysis) -> float:
        return interval(self.p, analysis)

    def _save(self) -> None:
        self.p.record_analysis(self.state)

    def control(self) -> PromotionControl | None:
        """The last signal about this candidate."""
        recorded = self.p.status.promotion.control if self.p.status.promotion else None
        if recorded is None or recorded.candidate_deployment_id != self.candidate.id:
            return None
        return recorded

    def control_is(self, action: ControlAction, reason: ControlReason | None = None) -> bool:
        control = self.control()
        return (
            control is not None
            and control.action == action
            and (reason is None or control.reason == reason)
        )

    # --- checks --------------------------------------------------------------------------

    def check_due(self) -> bool:
        due = parse_rfc3339(self.state.next_check_time)
        return due is None or due <= self.now

    def check(self, analysis: PromotionAnalysis, *, act: bool = True) -> None:
        """One check; its verdict recorded, counted, and (`act`: not in Observe) acted on
        at the failure limit."""
        check = run_check(self.p, self.model_id, self.candidate, analysis)
        self.last_check = check
        verdict = check.verdict
        count_check(verdict)
        state = self.state.model_copy()
        state.checks += 1
        state.last_check_time = format_rfc3339(self.now)
        state.next_check_time = format_rfc3339(self.now + self._interval(analysis))
        state.step_percent = self.percent
        state.results = [_result(r) for r in check.results]
        if verdict == Verdict.FAIL:
            state.consecutive_failures += 1
            state.phase = AnalysisPhase.RUNNING
        elif verdict == Verdict.PASS:
            # An inconclusive check neither counts a failure nor ends a run of them.
            state.consecutive_failures = 0
            state.phase = AnalysisPhase.RUNNING
        else:
            state.phase = AnalysisPhase.INCONCLUSIVE
        self.state = state
        self._save()
        if verdict == Verdict.FAIL:
            self._failed(analysis, check, act=act)

    def _failed(self, analysis: PromotionAnalysis, check: Check, *, act: bool) -> None:
        failed = check.deciding
        assert failed is not None
        self.p.event(
            EventReason.ANALYSIS_CHECK_FAILED,
            messages.check_failed_event(
                self.candidate.name,
                self.state.checks,
                failed.describe(),
                self.state.consecutive_failures,
                analysis.failure_limit,
            ),
        )
        if act and self.state.consecutive_failures >= analysis.failure_limit:
            self.state = self.state.model_copy(update={"phase": AnalysisPhase.FAILED})
            self._save()
            self.act_on_failure(analysis)

    # --- acting ------------------------------------------------------------------------

    def act_on_failure(self, analysis: PromotionAnalysis) -> NoReturn:
        """onFailure: roll back (force_cancel_promotion) or pause, once; ends the pass."""
        rollback = analysis.on_failure == FailureAction.ROLLBACK
        action = ControlAction.ROLLBACK if rollback else ControlAction.PAUSE
        reason = failure_reason(self.state)
        sent = not self._acknowledged(action, ControlReason.ANALYSIS)
        if sent:
            self.signal(action, ControlReason.ANALYSIS)
        if rollback:
            rolled_back(self.p, self.candidate, reason, announce=sent)
        self.p.report(
            PROMOTING, messages.failure_paused(self.ap, self.candidate.name, self.percent, reason)
        )
        if sent:
            self.p.event(
                EventReason.PROMOTION_HELD,
                messages.held_event(self.candidate.name, self.p.env, self.percent, reason),
            )
        raise RequeueAfter(self.p.steady_period, stalled=True)

    def _acknowledged(self, action: ControlAction, reason: ControlReason) -> bool:
        control = self.control()
        return (
            control is not None
            and control.action == action
            and control.reason == reason
            and control.acknowledged_time is not None
        )

    def signal(self, action: ControlAction, reason: ControlReason) -> None:
        """The signal, on record before the call and acknowledged after it; a refusal ends
        the pass in an error (the intent stays, unacknowledged: the retry sends it again)."""
        p = self.p
        p.record_control(
            PromotionControl(
                action=action,
                reason=reason,
                candidateDeploymentID=self.candidate.id,
                percent=self.percent,
                requested_time=format_rfc3339(self.now),
            )
        )
        p.persist_intent()
        send = {
            ControlAction.PAUSE: p.deps.baseten.pause_promotion,
            ControlAction.RESUME: p.deps.baseten.resume_promotion,
            ControlAction.ROLLBACK: p.deps.baseten.force_cancel_promotion,
        }[action]
        try:
            send(self.model_id, p.env)
        except BasetenAPIError as error:
            message = messages.signal_failed(self.ap, action, self.candidate.name, p.env, error)
            p.report(PROMOTING, message)
            raise ReconcileError(message) from error
        p.acknowledge_control(format_rfc3339(self.now))
        if action == ControlAction.ROLLBACK:
            count_rollback(self._trigger())

    def _trigger(self) -> str:
        failed = next((r for r in self.state.results or [] if r.verdict == Verdict.FAIL), None)
        return failed.kind if failed is not None else "analysis"

    # --- the hold ----------------------------------------------------------------------

    def hold(self) -> NoReturn:
        """spec.promotion.hold: paused at the next step, and kept so; ends the pass."""
        if not self.control_is(ControlAction.PAUSE):
            self.signal(ControlAction.PAUSE, ControlReason.HOLD)
            self.p.event(
                EventReason.PROMOTION_HELD,
                messages.held_event(
                    self.candidate.name, self.p.env, self.percent, messages.HOLD_REASON
                ),
            )
        if self.state.candidate_deployment_id == self.candidate.id:
            self.state = self.state.model_copy(update={"phase": AnalysisPhase.HELD})
            self.p.record_analysis(self.state)
        self.p.report(PROMOTING, messages.held(self.ap, self.candidate.name, self.percent))
        raise RequeueAfter(self.wait(), stalled=True)

    def release_hold(self, *, gate: bool) -> None:
        """The hold is lifted: a promotion it paused goes on (in Gate, only once a check
        passes: the gate keeps it paused until then). A hold pause Baseten never took is
        forgotten: there is nothing to resume."""
        if self.state.phase == AnalysisPhase.HELD:
            self.state = self.state.model_copy(update={"phase": AnalysisPhase.RUNNING})
            self.p.record_analysis(self.state)
        control = self.control()
        assert control is not None
        if control.acknowledged_time is None:
            self.p.record_control(None)
            return
        if gate:
            # The gate's own pause from now on: resumed after a passing check.
            self.p.record_control(control.model_copy(update={"reason": ControlReason.GATE}))
            return
        self.signal(ControlAction.RESUME, ControlReason.HOLD)
        self.p.event(
            EventReason.PROMOTION_RESUMED,
            messages.resumed_event(self.candidate.name, self.p.env, self.percent),
        )

    # --- the gate ----------------------------------------------------------------------

    def gate_pause(self) -> None:
        """Gate: each step paused as it starts (Baseten pauses when it ends)."""
        control = self.control()
        if self.phase == RAMPING_UP and not (
            control is not None
            and control.action == ControlAction.PAUSE
            and control.percent == self.percent
        ):
            self.signal(ControlAction.PAUSE, ControlReason.GATE)

    def gate(self) -> float:
        """Gate: resume after a check in which every metric passed; otherwise hold the
        promotion and say why."""
        if (
            self.phase == PAUSED
            and self.control_is(ControlAction.PAUSE, ControlReason.GATE)
            and self._passed_here()
        ):
            self.signal(ControlAction.RESUME, ControlReason.GATE)
            # The next step's window starts now.
            self.state = self.state.model_copy(
                update={"next_check_time": format_rfc3339(self.now + self._gate_interval())}
            )
            self.p.record_analysis(self.state)
        if self.phase == PAUSED and self.control_is(ControlAction.PAUSE, ControlReason.GATE):
            message = messages.gate_holding(
                self.ap, self.candidate.name, self.percent, self.summary()
            )
            self.p.report(PROMOTING, message)
            return self.wait()
        return self.report_progress()

    def _gate_interval(self) -> float:
        analysis = self.p.spec.promotion.analysis if self.p.spec.promotion else None
        assert analysis is not None
        return self._interval(analysis)

    def _passed_here(self) -> bool:
        """The last check passed, at this step, after the gate paused it."""
        control = self.control()
        last = parse_rfc3339(self.state.last_check_time)
        requested = parse_rfc3339(control.requested_time) if control else None
        return (
            self.state.results is not None
            and all(r.verdict == Verdict.PASS for r in self.state.results)
            and self.state.step_percent == self.percent
            and last is not None
            and requested is not None
            and last >= requested
        )

    # --- reporting -----------------------------------------------------------------------

    def report_progress(self) -> float:
        p = self.p
        if p.spec.promotion is not None and p.spec.promotion.analysis is not None:
            p.report(PROMOTING, messages.with_analysis(self.promoting, self.summary()))
        else:
            p.report(PROMOTING, self.promoting)
        return self.wait()

    def summary(self) -> str:
        state = self.state
        if not state.checks:
            return messages.NO_CHECK_YET
        results = state.results or []
        failed = next((r for r in results if r.verdict == Verdict.FAIL), None)
        if failed is not None:
            return messages.check_failed_summary(
                state.checks, state.consecutive_failures, failed.message
            )
        unsure = next((r for r in results if r.verdict == Verdict.INCONCLUSIVE), None)
        if unsure is not None:
            return messages.check_inconclusive_summary(state.checks, unsure.message)
        return messages.check_passed_summary(state.checks)

    def wait(self) -> float:
        """Until the next check is due, at most the promotion poll."""
        poll = self.p.deps.timing.poll
        due = parse_rfc3339(self.state.next_check_time)
        if due is None:
            return poll
        return max(min(poll, due - self.now), _MIN_WAIT)


def _result(verdict: MetricVerdict) -> MetricResult:
    return MetricResult(
        name=verdict.name,
        value=verdict.value,
        limit=verdict.limit,
        verdict=verdict.verdict,
        message=verdict.describe(),
        kind=verdict.kind,
    )


def observe_analysis(
    p: Pass, model_id: str, candidate: DeploymentV1, environment: EnvironmentV1, promoting: str
) -> tuple[str, float | None]:
    """Observe (section 6): the analysis computed and reported, never acted on: the
    message, with `would roll back ...` (or `would pause ...`) at the failure limit, and
    the wait until the next check (None: no analysis in the spec)."""
    analysis = p.spec.promotion.analysis if p.spec.promotion is not None else None
    if analysis is None:
        return promoting, None
    run = _Run(p, model_id, candidate, environment, promoting)
    run.start_analysis(analysis)
    if run.check_due():
        run.check(analysis, act=False)
    message = messages.with_analysis(promoting, run.summary())
    if run.state.consecutive_failures >= analysis.failure_limit:
        action = "roll back" if analysis.on_failure == FailureAction.ROLLBACK else "pause"
        message = messages.would_act(message, action, candidate.name, failure_reason(run.state))
    return message, run.wait()


def conclude(p: Pass, current: DeploymentV1) -> None:
    """Step 10: the candidate became current while its analysis ran: Passed when its last
    check passed (AnalysisPassed); otherwise it stays as it was (Inconclusive, no check
    yet): a promotion Baseten completed without evidence is not called a pass."""
    promotion = p.status.promotion
    state = promotion.analysis if promotion is not None else None
    if state is None or state.candidate_deployment_id != current.id:
        return
    if state.phase not in (AnalysisPhase.RUNNING, AnalysisPhase.HELD):
        return
    results = state.results or []
    if results and all(r.verdict == Verdict.PASS for r in results):
        p.record_analysis(state.model_copy(update={"phase": AnalysisPhase.PASSED}))
        p.event(
            EventReason.ANALYSIS_PASSED,
            messages.analysis_passed_event(current.name, p.env, state.checks),
        )
    elif state.phase == AnalysisPhase.HELD:
        p.record_analysis(state.model_copy(update={"phase": AnalysisPhase.RUNNING}))


def rollback_stands(p: Pass) -> bool:
    """Whether this CR's source stays rolled back (steps 12 to 14 are skipped): a candidate
    the analysis rolled back (or decided to, its answer lost with a crashed pass: Baseten
    no longer promotes it) is not promoted again until the spec names another source (which
    forgets the rollback) or models.baseten.com/reanalyze gets a new value."""
    status = p.status
    promotion = status.promotion
    state = promotion.analysis if promotion is not None else None
    control = promotion.control if promotion is not None else None
    if (
        status.rolled_back_deployment_id is None
        and control is not None
        and control.action == ControlAction.ROLLBACK
    ):
        status.rolled_back_deployment_id = control.candidate_deployment_id
    if status.rolled_back_deployment_id is None:
        return False
    annotation = (p.obj["metadata"].get("annotations") or {}).get(REANALYZE_ANNOTATION)
    if state is not None and annotation != state.reanalyze:
        p.forget_rollback()
        return False
    return True


def rolled_back_message(p: Pass) -> str:
    """ROLLED_BACK's message, as the rollback said it (a later pass says it again)."""
    if p.status.deployment_status == ROLLED_BACK and p.status.message:
        return p.status.message
    promotion = p.status.promotion
    state = promotion.analysis if promotion is not None else None
    name = p.status.candidate_deployment_name or p.status.rolled_back_deployment_id or ""
    return messages.rolled_back(name, failure_reason(state))


def failure_reason(state: AnalysisStatus | None) -> str:
    """What failed, as the rollback says it: the metric, its value and limit, how often."""
    results = state.results or [] if state is not None else []
    failed = next((r for r in results if r.verdict == Verdict.FAIL), None)
    described = failed.message if failed is not None else "a metric failed"
    count = state.consecutive_failures if state is not None else 0
    return messages.failure_reason(described, count)
