"""The Manager's options: plain data, importable without the Kubernetes client (a command
line builds its flags from these defaults before anything connects)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ManagerOptions:
    """What a Manager serves and how it elects a leader; the defaults are the generic ones
    (controller-runtime's and client-go's). An operator derives its own options from these
    (a subclass that redeclares the defaults it changes) rather than copying them.
    """

    metrics_bind_address: str = ":8080"
    # HTTPS with TokenReview/SubjectAccessReview on every scrape (controller-runtime's
    # SecureServing). Off by default in the library; the operator's command turns it on.
    metrics_secure: bool = False
    # A directory with the serving certificate and key; empty: self-signed at start.
    metrics_cert_path: str = ""
    metrics_cert_name: str = "tls.crt"
    metrics_cert_key: str = "tls.key"
    health_probe_bind_address: str = ":8081"
    leader_elect: bool = False
    leader_election_id: str = ""  # the Lease's name: required with leader_elect
    leader_election_namespace: str = "default"  # empty: the pod's own (lease_namespace)
    namespace: str | None = None  # the one namespace informers watch; None: all of them
    shutdown_timeout: float = 30.0
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
