"""etcd and kube-apiserver started on free loopback ports, as envtest starts them.

RBAC is on, so permissions are enforced as on any cluster; tokens are signed with a key pair of
the control plane's own (TokenRequest and TokenReview work); the admin kubeconfig authenticates
with a client certificate in `system:masters`. There is no controller-manager, scheduler or
kubelet: nothing runs pods, finalizes namespaces or collects garbage (docs/kube-emulation.md
lists what that changes for the tests). Everything lives in one working directory, removed on
stop; both processes die with the one that started them.
"""

from __future__ import annotations

import ctypes
import datetime
import json
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .build import Binaries
from .certs import KeyMaterial, write_key_material

READY_TIMEOUT = 180.0
STOP_TIMEOUT = 15.0
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# Once per request, when answered, without bodies: every request of a ServiceAccount (what an
# operator under test does, reads included, so a refused watch shows), everyone's writes.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {"level": "Metadata", "userGroups": ["system:serviceaccounts"]},
        {"level": "None", "verbs": ["get", "list", "watch"]},
        {"level": "Metadata"},
    ],
}
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


class ControlPlaneError(RuntimeError):
    """The control plane could not start; the message says why (with the log's tail)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    # In the child between fork and exec: a test run killed outright leaves no server behind.
    # The signal comes when the *thread* that started the child ends: start from a long-lived
    # thread (the main thread, or a test session's).
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ControlPlane:
    def __init__(
        self, binaries: Binaries, workdir: Path, *, port: int = 0, audit: bool = False
    ) -> None:
        """`port`: the API server's (0: any free one). `audit`: keep an audit log (AUDIT_POLICY:
        every write, and every request of a ServiceAccount) for `writes()` and `forbidden()`,
        as a cluster's audit backend would: tests tell replicas apart by User-Agent in it, and
        find requests RBAC refused."""
        self.binaries = binaries
        self.workdir = workdir
        self.port = port
        self.audit = audit
        self.processes: list[tuple[str, subprocess.Popen[bytes], Path]] = []
        self.url = ""
        self.keys: KeyMaterial | None = None
        self._admin_tls: ssl.SSLContext | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = READY_TIMEOUT) -> None:
        """Start etcd, then kube-apiserver; return once /readyz and `default` answer."""
        deadline = time.monotonic() + timeout
        try:
            self._start(deadline)
        except BaseException:
            self.stop()
            raise

    def _start(self, deadline: float) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        keys = self.keys = write_key_material(self.workdir / "pki")
        etcd_url = f"http://127.0.0.1:{free_port()}"
        peer_url = f"http://127.0.0.1:{free_port()}"
        etcd = self._spawn(
            "etcd",
            [
                str(self.binaries.etcd),
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--unsafe-no-fsync",  # test data: durability buys nothing, fsync costs seconds
                "--log-level=warn",
            ],
        )
        self._wait(deadline, "etcd", etcd, lambda: _http_ok(f"{etcd_url}/health"))

        port = self.port or free_port()
        self.url = f"https://127.0.0.1:{port}"
        apiserver = self._spawn(
            "kube-apiserver",
            [
                str(self.binaries.kube_apiserver),
                f"--etcd-servers={etcd_url}",
                f"--cert-dir={self.workdir / 'cert-dir'}",
                f"--tls-cert-file={keys.serving_cert}",
                f"--tls-private-key-file={keys.serving_key}",
                f"--client-ca-file={keys.ca_cert}",
                f"--secure-port={port}",
                "--bind-address=127.0.0.1",
                # Without a default route the server cannot pick an address to advertise.
                "--advertise-address=127.0.0.1",
                # ... and a loopback address cannot back the `kubernetes` Service's endpoints.
                "--endpoint-reconciler-type=none",
                "--authorization-mode=RBAC",
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                # No controller-manager makes the tokens that admission plugin waits for.
                "--disable-admission-plugins=ServiceAccount",
                f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
                f"--service-account-key-file={keys.service_account_public}",
                f"--service-account-signing-key-file={keys.service_account_private}",
                "--allow-privileged=true",
                "--profiling=false",
                "-v=1",
                *self._audit_flags(),
            ],
        )
        self._wait(deadline, "kube-apiserver", apiserver, self._serving)

    def _audit_flags(self) -> list[str]:
        if not self.audit:
            return []
        policy = self.workdir / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(AUDIT_POLICY))
        return [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",  # an entry is on disk before the answer is sent
        ]

    @property
    def audit_log(self) -> Path:
        return self.workdir / "audit.log"

    def audited(self) -> list[dict[str, Any]]:
        """The audit log's entries (see AUDIT_POLICY for which requests it keeps)."""
        if not self.audit:
            raise ControlPlaneError("the audit log needs a control plane started with audit=True")
        return [json.loads(line) for line in self.audit_log.read_text().splitlines()]

    def writes(self) -> list[dict[str, Any]]:
        """Every write the server answered, in the shape of the emulator's `GET /_sim/writes`:
        time (epoch seconds, when received), verb, resource, namespace, name, subresource and
        user_agent."""
        writes = []
        for entry in self.audited():
            if entry.get("verb") not in WRITE_VERBS:
                continue
            target = entry.get("objectRef") or {}
            received = datetime.datetime.fromisoformat(entry["requestReceivedTimestamp"])
            writes.append(
                {
                    "time": received.timestamp(),
                    "verb": entry["verb"],
                    "resource": target.get("resource"),
                    "namespace": target.get("namespace"),
                    "name": target.get("name"),
                    "subresource": target.get("subresource"),
                    "user_agent": entry.get("userAgent"),
                }
            )
        return writes

    def forbidden(self, username: str) -> list[str]:
        """The requests of `username` that authorization refused (403), as `verb URI`."""
        return [
            f"{entry.get('verb')} {entry.get('requestURI')}"
            for entry in self.audited()
            if (entry.get("user") or {}).get("username") == username
            and (entry.get("responseStatus") or {}).get("code") == 403
        ]

    def stop(self) -> None:
        """Stop both processes (kube-apiserver first) and remove every file they made."""
        for _, process, _ in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.processes.clear()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,  # touches no lock: only prctl
            )
        self.processes.append((name, process, log))
        return process

    def _wait(
        self,
        deadline: float,
        name: str,
        process: subprocess.Popen[bytes],
        ready: Callable[[], bool],
    ) -> None:
        while not ready():
            if process.poll() is not None:
                code = process.returncode
                raise ControlPlaneError(
                    f"{name} exited with {code} while starting:\n{self.log_tail(name)}"
                )
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"{name} not ready in time:\n{self.log_tail(name)}")
            time.sleep(0.2)  # polling a process that has no readiness signal but its HTTP

    def _serving(self) -> bool:
        return self._answers("/readyz") and self._answers("/api/v1/namespaces/default")

    def log_tail(self, name: str, lines: int = 40) -> str:
        for process_name, _, log in self.processes:
            if process_name == name and log.exists():
                return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
        return "(no log)"

    # ------------------------------------------------------------------ clients

    def _answers(self, path: str) -> bool:
        """Whether GET `path` as the administrator answers 2xx (the readiness probe)."""
        if self._admin_tls is None:
            assert self.keys is not None, "not started"
            self._admin_tls = ssl.create_default_context(cafile=str(self.keys.ca_cert))
            self._admin_tls.load_cert_chain(str(self.keys.admin_cert), str(self.keys.admin_key))
        try:
            with urllib.request.urlopen(self.url + path, context=self._admin_tls, timeout=5):
                return True
        except OSError:  # refused while starting, or an HTTP error status
            return False

    def kubeconfig(self) -> dict[str, Any]:
        """The administrator's kubeconfig for this server (the client certificate)."""
        assert self.keys is not None, "not started"
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "real",
                    "cluster": {
                        "server": self.url,
                        "certificate-authority": str(self.keys.ca_cert),
                    },
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(self.keys.admin_cert),
                        "client-key": str(self.keys.admin_key),
                    },
                }
            ],
            "contexts": [{"name": "admin", "context": {"cluster": "real", "user": "admin"}}],
            "current-context": "admin",
        }

    def write_kubeconfig(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(self.kubeconfig()))
        path.chmod(0o600)
        return path


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False
