"""Operator options shared by `baseten-operator run` and the sandbox."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OperatorOptions:
    metrics_bind_address: str = ":8443"
    metrics_secure: bool = True
    metrics_cert_path: str = ""
    metrics_cert_name: str = "tls.crt"
    metrics_cert_key: str = "tls.key"
    enable_http2: bool = False
    health_probe_bind_address: str = ":8081"
    leader_elect: bool = False
    # The Go operator's Lease: during a migration at most one of the two operators leads.
    leader_election_id: str = "020848ba.baseten.com"
    leader_election_namespace: str = ""
    watch_namespace: str = ""
    max_concurrent_reconciles: int = 5
    max_concurrent_pushes: int = 4
    log_level: str = "info"
    log_format: str = "json"
    time_scale: float = 1.0
    kubeconfig: str | None = None
    shutdown_timeout: float = 30.0
    # Total deadline of one Baseten call, retries and waits included.
    baseten_timeout: float = 30.0
    # A namespace without models.baseten.com/allowed-models manages nothing (deny by default).
    require_namespace_policy: bool = False
