"""Operator options shared by `baseten-operator run` and the sandbox."""

from __future__ import annotations

from dataclasses import dataclass

from baseten_operator.runtime.options import ManagerOptions


@dataclass(frozen=True)
class OperatorOptions(ManagerOptions):
    """The manager's options (runtime/options.py, generic defaults) with the operator's
    defaults where they differ, plus the operator's own. `run`'s flags are built from these
    defaults (cli.py) and each flag sets the field of its name."""

    # Secure by default (README, "Metrics"): HTTPS behind TokenReview/SubjectAccessReview.
    metrics_bind_address: str = ":8443"
    metrics_secure: bool = True
    # The Go operator's Lease: during a migration at most one of the two operators leads.
    leader_election_id: str = "020848ba.baseten.com"
    # Empty: the operator's own namespace (main.operator_namespace).
    leader_election_namespace: str = ""

    enable_http2: bool = False
    max_concurrent_reconciles: int = 5
    max_concurrent_pushes: int = 4
    log_level: str = "info"
    log_format: str = "json"
    # zap's development mode (--zap-devel): console lines at debug level, unless a level or
    # a format is given too.
    log_development: bool = False
    log_stacktrace_level: str = "error"  # a logged exception's traceback from this level up
    log_time_encoding: str = "rfc3339nano"
    # Go operator flags that mean nothing here (webhooks), accepted so its manifests run.
    ignored_flags: tuple[str, ...] = ()
    time_scale: float = 1.0
    kubeconfig: str | None = None
    # Total deadline of one Baseten call, retries and waits included.
    baseten_timeout: float = 30.0
    # A namespace without models.baseten.com/allowed-models manages nothing (deny by default).
    require_namespace_policy: bool = False
