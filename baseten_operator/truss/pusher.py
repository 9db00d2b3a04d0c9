"""Truss pushes in the background: one isolated child process each, bounded, with a hard timeout.

The reconciler launches a push and returns at once; a supervisor thread per push feeds the
child (baseten_operator.truss.push_child) its request on stdin and reads the result from
the last line of its stdout. A watchdog thread kills any child that outlives `timeout`
(measured on the injected clock). A leash thread sends every child a heartbeat each second
while the write fence passes: a child that hears none for a few seconds stops itself, so a
push outlives neither a frozen operator (SIGSTOP stops the operator, not its children) nor
a deposed one. The outcome is kept until the reconciler takes it, and `on_done` is called
so it can enqueue the CR: the reconciler alone writes status.

truss itself is never imported here: only the child imports it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
from pydantic import ValidationError

from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.fence import WriteFence
from baseten_operator.truss import metrics
from baseten_operator.truss.child_env import child_environment
from baseten_operator.truss.naming import truss_config_dict
from baseten_operator.truss.push_child import (
    API_KEY_ENV,
    ChildRequest,
    ChildResult,
    redact,
    short_error,
)

log = structlog.get_logger(__name__)

DEFAULT_CHILD_ARGV: tuple[str, ...] = (sys.executable, "-m", "baseten_operator.truss.push_child")
WORKDIR_PREFIX = "baseten-truss-push-"
# The hard timeout of one push (docs/contract.md section 5). Never scaled by --time-scale:
# it bounds a real child process, which runs no faster in the sandbox (scaled, every push
# there, a few seconds of truss start-up, would be killed); unscaled, it stays the 5-minute
# safety net it is meant to be.
PUSH_TIMEOUT = 5 * 60.0
STDERR_LOG_LINES = 20
# Heartbeats on each child's leash, in real seconds (a child runs on the real clock). A child
# stops after LEASH_SLACK seconds of silence: a replica that cannot prove it leads sends none
# from at most its renew deadline (10 s) after its last renewal, so its pushes stop before
# another replica may lead (its lease lasts 15 s): 10 + 1 + 3 < 15.
LEASH_INTERVAL = 1.0
LEASH_SLACK = 3.0


@dataclass(frozen=True)
class PushRequest:
    key: str  # "ns/name" of the BasetenModel
    model_name: str
    deployment_name: str
    truss_config: dict[str, Any]  # camelCase, as in the CR
    setup_script: str
    model_id: str | None
    # The namespace's own API key (None: the operator's) and Baseten team; never printed.
    api_key: str | None = field(default=None, repr=False)
    team_id: str | None = None


@dataclass(frozen=True)
class PushOutcome:
    key: str
    deployment_name: str
    succeeded: bool
    error: str | None
    model_id: str | None
    deployment_id: str | None
    duration: float


@dataclass
class _Push:
    request: PushRequest
    started: float
    deadline: float
    process: subprocess.Popen[bytes] | None = None
    # The write end of the child's leash (heartbeats); None before the child starts.
    leash: int | None = None
    # Why the push is being killed ("timeout", "stopped"), None while it may run on.
    cancel_reason: str | None = None


def format_duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs}s" if minutes else f"{seconds:g}s"


def _key(push: _Push, default: str) -> str:
    return push.request.api_key or default


def _kill(process: subprocess.Popen[bytes]) -> None:
    # The child leads its own session: kill the group, in case truss spawned helpers.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


class TrussPusher:
    def __init__(
        self,
        api_key: str,
        remote_url: str,
        *,
        max_concurrent: int = 4,
        timeout: float = PUSH_TIMEOUT,
        on_done: Callable[[PushOutcome], None] | None = None,
        clock: Clock | None = None,
        child_argv: Sequence[str] = DEFAULT_CHILD_ARGV,
        fence: WriteFence | None = None,
        leash_interval: float = LEASH_INTERVAL,
        leash_slack: float = LEASH_SLACK,
    ) -> None:
        if max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        self._api_key = api_key
        self._remote_url = remote_url.rstrip("/")
        self._max_concurrent = max_concurrent
        self._timeout = timeout
        self._on_done = on_done
        self._clock: Clock = clock or RealClock()
        self._child_argv = list(child_argv)
        self._fence = fence
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._running: dict[str, _Push] = {}
        # Supervisors still alive, including those past _finish's bookkeeping and still
        # handing the outcome to on_done: stop() waits for all of them.
        self._supervisors: set[threading.Thread] = set()
        self._outcomes: dict[str, PushOutcome] = {}
        self._stopped = False
        self._watchdog: threading.Thread | None = None
        self._leash_interval = leash_interval
        self._leash_slack = leash_slack
        self._leash_walker: threading.Thread | None = None
        self._leash_stop = threading.Event()

    # --- what the reconciler asks -----------------------------------------------------

    def has_capacity(self) -> bool:
        with self._lock:
            return not self._stopped and len(self._running) < self._max_concurrent

    def in_flight(self, deployment_name: str) -> bool:
        with self._lock:
            return self._in_flight_locked(deployment_name)

    def take_outcome(self, key: str) -> PushOutcome | None:
        with self._lock:
            return self._outcomes.pop(key, None)

    def launch(self, req: PushRequest) -> bool:
        """Start `req` in the background; False when there is no capacity for it.

        A push for a key or a deployment name already in flight is refused as well (False):
        two pushes of one name would create two deployments. A replica that may no longer
        write (the fence) raises NotLeader instead of launching.
        """
        if self._fence is not None:
            self._fence.check(f"truss push of {req.deployment_name}")
        with self._lock:
            if self._stopped or len(self._running) >= self._max_concurrent:
                return False
            if req.key in self._running or self._in_flight_locked(req.deployment_name):
                log.info(
                    "truss push already in flight", key=req.key, deployment=req.deployment_name
                )
                return False
            now = self._clock.monotonic()
            push = _Push(request=req, started=now, deadline=now + self._timeout)
            self._running[req.key] = push
            self._outcomes.pop(req.key, None)
            self._ensure_watchdog_locked()
            supervisor = threading.Thread(
                target=self._supervise, args=(push,), name=f"truss-push-{req.key}", daemon=True
            )
            self._supervisors.add(supervisor)
            self._changed.notify_all()
        log.info(
            "truss push launched",
            key=req.key,
            model=req.model_name,
            deployment=req.deployment_name,
        )
        supervisor.start()
        return True

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            self._stopped = False
            self._leash_stop.clear()
            self._ensure_watchdog_locked()

    def stop(self, timeout: float = 10.0) -> bool:
        """Refuse new pushes, kill the running children and wait for their supervisors;
        returns whether they all ended in time."""
        with self._lock:
            self._stopped = True
            self._leash_stop.set()
            for push in self._running.values():
                self._cancel_locked(push, "stopped")
            threads = [*self._supervisors, self._watchdog, self._leash_walker]
            self._changed.notify_all()
        others = [t for t in threads if t is not None and t is not threading.current_thread()]
        for thread in others:
            thread.join(timeout)
        return not any(thread.is_alive() for thread in others)

    # --- internals ------------------------------------------------------------------------

    def _in_flight_locked(self, deployment_name: str) -> bool:
        return any(p.request.deployment_name == deployment_name for p in self._running.values())

    def _ensure_watchdog_locked(self) -> None:
        if self._watchdog is None or not self._watchdog.is_alive():
            self._watchdog = threading.Thread(
                target=self._watch_deadlines, name="truss-push-watchdog", daemon=True
            )
            self._watchdog.start()
        if self._leash_walker is None or not self._leash_walker.is_alive():
            self._leash_walker = threading.Thread(
                target=self._walk_leashes, name="truss-push-leash", daemon=True
            )
            self._leash_walker.start()

    def _walk_leashes(self) -> None:
        """A heartbeat to every running child, each interval, while this replica provably
        leads; none otherwise (its children then stop themselves)."""
        while not self._leash_stop.wait(self._leash_interval):
            if self._fence is not None and self._fence.refusal() is not None:
                continue
            # Under the lock: a leash is closed under it too, so its descriptor number
            # cannot be reused by another file between the lookup and the write.
            with self._lock:
                for push in self._running.values():
                    if push.leash is not None:
                        # A gone child, or a full pipe (it has beats to read): nothing to do.
                        with contextlib.suppress(OSError):
                            os.write(push.leash, b".")

    def _cancel_locked(self, push: _Push, reason: str) -> None:
        if push.cancel_reason is None:
            push.cancel_reason = reason
        if push.process is not None:
            _kill(push.process)

    def _watch_deadlines(self) -> None:
        with self._lock:
            while not (self._stopped and not self._running):
                now = self._clock.monotonic()
                waiting = [p for p in self._running.values() if p.cancel_reason is None]
                for push in waiting:
                    if now >= push.deadline:
                        log.warning(
                            "truss push timed out, killing it",
                            key=push.request.key,
                            deployment=push.request.deployment_name,
                        )
                        self._cancel_locked(push, "timeout")
                deadlines = [p.deadline for p in waiting if p.cancel_reason is None]
                self._clock.wait(self._changed, min(deadlines) - now if deadlines else None)

    def _supervise(self, push: _Push) -> None:
        try:
            outcome = self._run_child(push)
        except Exception as exc:  # an outcome must come back whatever happens
            log.exception("truss push supervisor failed", key=push.request.key)
            outcome = self._outcome(
                push, error=short_error(str(exc), _key(push, self._api_key)) or "error"
            )
        try:
            self._finish(push, outcome)
        finally:
            with self._lock:
                self._supervisors.discard(threading.current_thread())

    def _run_child(self, push: _Push) -> PushOutcome:
        # The child can end without its own clean-up running (killed at the timeout or on
        # stop, or its leash's os._exit): the working directory is the parent's to remove.
        with tempfile.TemporaryDirectory(
            prefix=WORKDIR_PREFIX, ignore_cleanup_errors=True
        ) as workdir:
            return self._run_child_in(push, workdir)

    def _run_child_in(self, push: _Push, workdir: str) -> PushOutcome:
        req = push.request
        child_request = ChildRequest(
            remote_url=self._remote_url,
            model_name=req.model_name,
            deployment_name=req.deployment_name,
            # A pydantic TrussConfig is accepted too (as everywhere in this package).
            truss_config=dict(truss_config_dict(req.truss_config)),
            setup_script=req.setup_script,
            team_id=req.team_id,
            workdir=workdir,
            parent_pid=os.getpid(),
            leash_slack=self._leash_slack,
        )
        leash_end, leash = os.pipe()
        os.set_blocking(leash, False)  # a heartbeat never blocks the leash thread
        child_request.leash_fd = leash_end
        try:
            process = subprocess.Popen(
                self._child_argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=child_environment(os.environ, {API_KEY_ENV: _key(push, self._api_key)}),
                start_new_session=True,
                pass_fds=(leash_end,),
            )
        except BaseException:
            os.close(leash)
            raise
        finally:
            os.close(leash_end)  # the child holds its own copy
        with self._lock:
            push.process, push.leash = process, leash
            if push.cancel_reason is not None:  # timed out or stopped before it started
                _kill(process)
        try:
            stdout, stderr = process.communicate(child_request.model_dump_json().encode())
        finally:
            with self._lock:
                push.leash = None
                os.close(leash)
        return self._interpret(push, process.returncode, stdout, stderr)

    def _interpret(self, push: _Push, returncode: int, stdout: bytes, stderr: bytes) -> PushOutcome:
        with self._lock:
            cancel_reason = push.cancel_reason
        if cancel_reason == "timeout":
            return self._outcome(push, error=f"timed out after {format_duration(self._timeout)}")
        if cancel_reason == "stopped":
            return self._outcome(push, error="cancelled: the operator is shutting down")
        result = self._parse_result(stdout)
        api_key = _key(push, self._api_key)
        if result is None or not result.succeeded:
            self._log_child_stderr(push, stderr)
        if result is None:
            error = short_error(stderr.decode(errors="replace"), api_key)
            return self._outcome(push, error=error or f"push process exited with code {returncode}")
        if not result.succeeded:
            return self._outcome(push, error=redact(result.error or "push failed", api_key))
        return self._outcome(
            push, model_id=result.model_id, deployment_id=result.deployment_id, succeeded=True
        )

    @staticmethod
    def _parse_result(stdout: bytes) -> ChildResult | None:
        lines = [line for line in stdout.decode(errors="replace").splitlines() if line.strip()]
        if not lines:
            return None
        try:
            return ChildResult.model_validate_json(lines[-1])
        except ValidationError:
            return None

    def _log_child_stderr(self, push: _Push, stderr: bytes) -> None:
        tail = stderr.decode(errors="replace").splitlines()[-STDERR_LOG_LINES:]
        log.debug(
            "truss push child output",
            key=push.request.key,
            stderr=redact("\n".join(tail), _key(push, self._api_key)),
        )

    def _outcome(
        self,
        push: _Push,
        *,
        error: str | None = None,
        succeeded: bool = False,
        model_id: str | None = None,
        deployment_id: str | None = None,
    ) -> PushOutcome:
        return PushOutcome(
            key=push.request.key,
            deployment_name=push.request.deployment_name,
            succeeded=succeeded,
            error=None if succeeded else error,
            model_id=model_id,
            deployment_id=deployment_id,
            duration=self._clock.monotonic() - push.started,
        )

    def _finish(self, push: _Push, outcome: PushOutcome) -> None:
        with self._lock:
            result = "timeout" if push.cancel_reason == "timeout" else None
            self._running.pop(push.request.key, None)
            self._outcomes[push.request.key] = outcome
            self._changed.notify_all()
        result = result or ("succeeded" if outcome.succeeded else "failed")
        metrics.TRUSS_PUSHES.labels(result=result).inc()
        metrics.TRUSS_PUSH_DURATION.observe(outcome.duration)
        log.info(
            "truss push finished",
            key=outcome.key,
            deployment=outcome.deployment_name,
            result=result,
            error=outcome.error,
            duration=round(outcome.duration, 3),
        )
        if self._on_done is not None:
            try:
                self._on_done(outcome)
            except Exception:  # the callback's failure must not lose the outcome
                log.exception("truss push on_done callback failed", key=outcome.key)
