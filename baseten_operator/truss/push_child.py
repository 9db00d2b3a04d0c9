"""One truss push, in a process of its own: ``python -m baseten_operator.truss.push_child``.

truss costs ~100 MB and most of a second to import, mutates ``os.environ`` (it strips
``AWS_*`` during the upload) and uses boto3's global session, so the operator never
imports it: every push runs here, isolated, and the process ends with it.

Protocol with the parent (baseten_operator.truss.pusher):
- stdin: one JSON ``ChildRequest``;
- the leash: a pipe the parent writes a heartbeat byte to every second while its replica
  provably leads; silence for ``leash_slack`` seconds (a frozen or deposed operator) or the
  pipe's end (a dead one) stops the push at once, so that it never runs beside the push the
  next leader may start for the same name;
- the API key: the environment variable ``API_KEY_ENV`` (never argv, never logged);
- the working directory: made and removed by the parent, which outlives every way this
  process can end (a kill at the timeout, the leash's ``os._exit``), so none is left behind;
- stdout: the JSON ``ChildResult`` on the last line. Everything else truss prints is
  sent to stderr so it cannot corrupt the result.
- exit code 0 when the push succeeded, 1 otherwise.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel, ConfigDict, ValidationError

from baseten_operator.runtime.logging import mask_secret
from baseten_operator.truss.config import write_truss_dir
from baseten_operator.truss.naming import TRUSS_NAME_PATTERN, validate_push_names

API_KEY_ENV = "BASETEN_OPERATOR_PUSH_API_KEY"
MAX_ERROR_LENGTH = 500
REDACTED = "<redacted>"


class ChildRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    remote_url: str
    model_name: str
    deployment_name: str
    truss_config: dict[str, object]
    setup_script: str = ""
    team_id: str | None = None
    # An empty directory the parent made for this push and removes after it.
    workdir: str
    # The operator process: the push dies with it (see die_with_parent).
    parent_pid: int | None = None
    # The read end of the leash (see hold_leash), inherited; None: no leash.
    leash_fd: int | None = None
    leash_slack: float = 5.0


class ChildResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    succeeded: bool
    model_id: str | None = None
    deployment_id: str | None = None
    error: str | None = None


def redact(text: str, secret: str) -> str:
    """`text` without `secret`, literal or encoded (truss and Baseten errors echo requests)."""
    return mask_secret(text, secret, REDACTED) if secret else text


def short_error(text: str, secret: str) -> str:
    """The last non-empty line of `text`, redacted and bounded: fit for a status message."""
    lines = [line.strip() for line in redact(text, secret).splitlines() if line.strip()]
    message = lines[-1] if lines else ""
    if len(message) > MAX_ERROR_LENGTH:
        message = message[: MAX_ERROR_LENGTH - 3] + "..."
    return message


def describe_exception(exc: BaseException, secret: str) -> str:
    if isinstance(exc, ValidationError):
        # pydantic's text spans lines and ends with a link; keep field and reason only.
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        )
        return short_error(f"invalid {exc.title}: {problems}", secret)
    return short_error(str(exc), secret) or type(exc).__name__


def push(request: ChildRequest, api_key: str) -> ChildResult:
    """Write the truss directory into the request's working directory and push it."""
    validate_push_names(request.model_name, None)
    if not request.deployment_name or not TRUSS_NAME_PATTERN.match(request.deployment_name):
        raise ValueError(f"deployment name {request.deployment_name!r} is not valid for truss")

    # Imported here only: this module's wire models are also used by the operator process.
    from truss.remote.baseten.remote import BasetenRemote
    from truss.truss_handle.build import load

    truss_dir = write_truss_dir(
        Path(request.workdir) / "truss",
        request.model_name,
        request.truss_config,
        request.setup_script,
    )
    remote = BasetenRemote(request.remote_url, api_key)
    service = remote.push(
        load(str(truss_dir)),
        model_name=request.model_name,
        working_dir=truss_dir,
        publish=True,
        deployment_name=request.deployment_name,
        team_id=request.team_id,
    )
    return ChildResult(
        succeeded=True, model_id=service.model_id, deployment_id=service.model_version_id
    )


# linux/prctl.h
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel kill this push when the operator process that launched it dies.

    A push must never outlive its replica: the next leader re-checks a push left on
    record at once and may push the same deployment name again, and two pushes of one
    name make two deployments. Linux only; elsewhere the push merely runs to its end.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:
        os._exit(1)  # the parent died before the death signal was armed


EXIT_UNLEASHED = 3
UNLEASHED_ERROR = (
    "stopped: the operator that launched this push no longer provably leads "
    "(no heartbeat for {slack:g}s)"
)


def hold_leash(fd: int, slack: float, on_loose: Callable[[], None]) -> None:
    """Block while heartbeats come at least every `slack` seconds on `fd`; then call
    `on_loose` (silence, or the pipe closed because every writer is gone)."""
    while True:
        ready, _, _ = select.select([fd], [], [], slack)
        if not ready or not os.read(fd, 64):
            on_loose()
            return


def _stop_unleashed(result_stream: TextIO, slack: float) -> None:
    error = UNLEASHED_ERROR.format(slack=slack)
    result_stream.write(ChildResult(succeeded=False, error=error).model_dump_json() + "\n")
    result_stream.flush()
    os._exit(EXIT_UNLEASHED)


def main() -> int:
    # Keep the real stdout for the result; whatever truss prints goes to stderr.
    result_stream = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    # pathspec warns on every push; strict warning filters must not fail it.
    warnings.simplefilter("ignore", DeprecationWarning)

    api_key = os.environ.pop(API_KEY_ENV, "")
    try:
        request = ChildRequest.model_validate_json(sys.stdin.read())
        if request.parent_pid is not None:
            die_with_parent(request.parent_pid)
        if request.leash_fd is not None:
            leash = request.leash_fd, request.leash_slack
            threading.Thread(
                target=hold_leash,
                args=(*leash, lambda: _stop_unleashed(result_stream, leash[1])),
                name="leash",
                daemon=True,
            ).start()
        result = push(request, api_key)
    except Exception as exc:  # every failure becomes a one-line outcome for the parent
        result = ChildResult(succeeded=False, error=describe_exception(exc, api_key))
    with result_stream:
        result_stream.write(result.model_dump_json() + "\n")
    return 0 if result.succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
