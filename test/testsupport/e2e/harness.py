"""What the e2e stories drive: kubectl, the Baseten simulator's HTTP APIs, the operator process.

Everything goes through the same doors a user (or CI on a kind cluster) has: `kubectl` against
the API server, the simulator's REST API and its `/_sim/` control API over HTTP, and the
operator's /metrics and /readyz endpoints. Nothing here imports the operator's code.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
import yaml

from testsupport.paths import REPO
from testsupport.polling import wait_for

KUBECTL = "/usr/bin/kubectl"
VENV_BIN = REPO / ".venv" / "bin"
INSTALL_MANIFEST = REPO / "deploy" / "install.yaml"

# The key hack/kind-e2e.sh gives the in-cluster simulator; the local simulator uses it too.
API_KEY = "e2e-key"
OPERATOR_NAMESPACE = "baseten-operator-system"
API_KEY_SECRET = "baseten-operator-api-key"
OPERATOR_SERVICE_ACCOUNT = "baseten-operator-controller-manager"
OPERATOR_USER = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_SERVICE_ACCOUNT}"
LEASE_NAME = "020848ba.baseten.com"
METRICS_READER = "baseten-operator-metrics-reader"  # config/rbac, with the install's prefix
# Every delay of the operator and every simulated lifecycle step x0.02: a 30 s promotion poll
# takes 0.6 s, the 5 min steady-state requeue 6 s, a deployment build 0.4 s.
TIME_SCALE = 0.02
# A takeover after a killed leader in seconds, not the default 15 s: the stories that kill or
# freeze a leader wait for one. A renewal still has 4 s to get through a loaded 2-core machine.
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 6.0, 4.0, 1.0
LEADER_ELECTION_FLAGS = (
    f"--leader-elect-lease-duration={LEASE_DURATION:g}s",
    f"--leader-elect-renew-deadline={RENEW_DEADLINE:g}s",
    f"--leader-elect-retry-period={RETRY_PERIOD:g}s",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


# --------------------------------------------------------------------------- kubectl


class KubectlError(AssertionError):
    pass


@dataclass(frozen=True)
class Kubectl:
    kubeconfig: str

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 90.0
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [KUBECTL, "--kubeconfig", self.kubeconfig, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise KubectlError(
                f"kubectl {' '.join(args)} exited {done.returncode}:\n{done.stderr}{done.stdout}"
            )
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-o", "json").stdout)

    def apply(self, *objects: dict[str, Any]) -> str:
        """`kubectl apply -f -` of the objects, as a user applies a manifest."""
        return self.run("apply", "-f", "-", stdin=yaml.safe_dump_all(objects)).stdout

    def table(self, *args: str) -> list[dict[str, str]]:
        """`kubectl get` human output as rows keyed by column header (blank cells stay "")."""
        lines = self.run("get", *args).stdout.splitlines()
        header = lines[0]
        starts = [
            i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")
        ]
        bounds = list(zip(starts, [*starts[1:], None], strict=True))
        names = [header[a:b].strip() for a, b in bounds]
        return [
            {n: line[a:b].strip() for n, (a, b) in zip(names, bounds, strict=True)}
            for line in lines[1:]
        ]

    def get_or_none(self, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
        done = self.run("get", kind, name, "-n", namespace, "-o", "json", check=False)
        if done.returncode != 0:
            if "NotFound" in done.stderr or "not found" in done.stderr:
                return None
            raise KubectlError(f"kubectl get {kind} {name}: {done.stderr}")
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    def lease_holder(self) -> str:
        """The identity holding the operator's leader-election Lease ("" when none)."""
        lease = self.json("get", "lease", LEASE_NAME, "-n", OPERATOR_NAMESPACE)
        return str(lease["spec"].get("holderIdentity") or "")

    def events(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """The Events about object `name`, selected server-side as `kubectl` users do."""
        listing = self.json(
            "get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}"
        )
        return list(listing.get("items") or [])


# --------------------------------------------------------------------------- Baseten simulator


@dataclass(frozen=True)
class Simulator:
    """The Baseten simulator seen from outside: its REST API and its /_sim/ control API."""

    url: str  # root URL; the REST API is under /v1
    api_key: str = API_KEY

    def control(self, operation: str, **arguments: Any) -> Any:
        response = requests.post(f"{self.url}/_sim/{operation}", json=arguments, timeout=10)
        if response.status_code != 200:
            raise AssertionError(f"/_sim/{operation} -> {response.status_code}: {response.text}")
        return response.json()

    def ui_autoscaling(self, model_id: str, email: str, **settings: int) -> Any:
        """The user `email` changes production's autoscaling in Baseten's UI (drift)."""
        return self.control(
            "ui_update_environment",
            model_id=model_id,
            env="production",
            autoscaling_settings=settings,
            email=email,
        )

    def audit_log(self) -> list[dict[str, Any]]:
        response = requests.get(f"{self.url}/_sim/audit_log", timeout=10)
        response.raise_for_status()
        return list(response.json())

    def writes_for_model(self, model_id: str) -> list[dict[str, Any]]:
        """Every mutating call the simulator answered on this model's paths."""
        return [e for e in self.audit_log() if f"/models/{model_id}" in e["path"]]

    def api_get(self, path: str) -> requests.Response:
        return requests.get(
            f"{self.url}/v1{path}", headers={"Authorization": f"Api-Key {self.api_key}"}, timeout=10
        )

    def api_post(self, path: str, body: dict[str, Any]) -> requests.Response:
        """A write through the REST API, as the Baseten UI or a CI job makes it."""
        return requests.post(
            f"{self.url}/v1{path}",
            json=body,
            headers={"Authorization": f"Api-Key {self.api_key}"},
            timeout=10,
        )

    def request_log(self) -> list[dict[str, Any]]:
        """Every REST request the simulator received, answered or not (faults included)."""
        response = requests.get(f"{self.url}/_sim/request_log", timeout=10)
        response.raise_for_status()
        return list(response.json())

    def environment(self, model_id: str, env: str) -> dict[str, Any]:
        response = self.api_get(f"/models/{model_id}/environments/{env}")
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    def seed_model_with_deployment(
        self, model_name: str, deployment_name: str, **deployment: Any
    ) -> tuple[str, str]:
        """A model with one ACTIVE deployment built by "CI"; returns (model id, deployment id)."""
        model = self.control("seed_model", name=model_name)
        seeded = self.control(
            "seed_deployment", model_id=model["id"], name=deployment_name, **deployment
        )
        return model["id"], seeded["id"]


# --------------------------------------------------------------------------- processes


@dataclass
class Process:
    """A child process whose output goes to a log file (shown when something goes wrong)."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    @classmethod
    def start(
        cls, name: str, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None
    ) -> Process:
        with log_path.open("wb") as log:
            popen = subprocess.Popen(
                list(argv),
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                cwd=REPO,
            )
        return cls(name, popen, log_path)

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return f"--- last lines of {self.name} ({self.log_path}):\n" + "\n".join(text[-lines:])

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a node failure or the OOM killer would: no shutdown of any kind."""
        self.popen.kill()
        self.popen.wait()

    def terminate(self, timeout: float) -> int:
        """SIGTERM and the exit code; SIGKILL (and an AssertionError) if it does not exit."""
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise AssertionError(
                f"{self.name} ignored SIGTERM for {timeout}s\n{self.log_tail()}"
            ) from None


def http_ok(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def service_account_token(
    kubectl: Kubectl, namespace: str, name: str, *, cluster_role: str | None = None
) -> str:
    """A token of a new ServiceAccount (`kubectl create token`), bound to `cluster_role`."""
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace},
        }
    )
    if cluster_role is not None:
        kubectl.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{namespace}-{name}"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": cluster_role,
                },
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            }
        )
    return kubectl.run("create", "token", name, "-n", namespace).stdout.strip()


def served_certificate(url: str, path: Path) -> str:
    """Trust-on-first-use: the certificate `url` serves, saved to verify it with."""
    host, port = urlsplit(url).hostname or "", urlsplit(url).port or 443
    path.write_text(ssl.get_server_certificate((host, port)))
    return str(path)


def scrape_as_prometheus(kubectl: Kubectl, namespace: str, metrics_port: int, workdir: Path) -> str:
    """The operator's /metrics as a Prometheus with the metrics-reader role reads it."""
    url = f"https://127.0.0.1:{metrics_port}/metrics"
    token = service_account_token(kubectl, namespace, "prometheus", cluster_role=METRICS_READER)
    scraped = requests.get(
        url,
        headers={"Authorization": f"Bearer {token}"},
        verify=served_certificate(url, workdir / "ca.crt"),
        timeout=5,
    )
    assert scraped.status_code == 200, scraped.text
    return scraped.text


# --------------------------------------------------------------------------- BasetenModels


def basetenmodel(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "models.baseten.com/v1alpha1",
        "kind": "BasetenModel",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def status_of(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("status") or {}


@dataclass(frozen=True)
class Stack:
    """The installed operator and its surroundings, as the stories see them."""

    kubectl: Kubectl
    sim: Simulator
    # The operator's /metrics (HTTPS, self-signed) and process id; None on an external
    # cluster: the operator's pod is not reachable from here.
    metrics_url: str | None
    operator_pid: int | None = None
    health_url: str | None = None  # its /readyz

    def new_namespace(self, prefix: str) -> str:
        name = unique_name(prefix)
        # A manifest, not `kubectl create namespace`: the emulator does not read the protobuf
        # bodies kubectl's generators send.
        self.kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        return name

    def get_bm(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.kubectl.get_or_none("basetenmodel", name, namespace)

    def wait_status(
        self,
        namespace: str,
        name: str,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        what: str,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        """The BasetenModel once `predicate(status)` holds."""
        last: dict[str, Any] = {}

        def probe() -> dict[str, Any] | None:
            nonlocal last
            obj = self.get_bm(namespace, name)
            last = status_of(obj)
            return obj if obj is not None and predicate(last) else None

        return wait_for(
            probe,
            timeout=timeout,
            describe=lambda: f"{what}; last status: {last.get('deploymentStatus')} "
            f"{last.get('message')!r}",
        )

    def wait_event(
        self, namespace: str, name: str, reason: str, *, contains: str = "", timeout: float = 30.0
    ) -> dict[str, Any]:
        """The first Event `reason` about `name` whose message contains `contains`."""

        def probe() -> dict[str, Any] | None:
            return next(
                (
                    e
                    for e in self.kubectl.events(namespace, name)
                    if e.get("reason") == reason and contains in (e.get("message") or "")
                ),
                None,
            )

        def describe() -> str:
            seen = [
                (e.get("reason"), e.get("message")) for e in self.kubectl.events(namespace, name)
            ]
            return f"event {reason} containing {contains!r}; events: {seen}"

        return wait_for(probe, timeout=timeout, describe=describe)

    def promoted_model(
        self, namespace: str, name: str, *, autoscaling: dict[str, Any], **spec: Any
    ) -> tuple[str, dict[str, Any]]:
        """A model seeded in Baseten, a BasetenModel promoting its build, Ready.

        Returns (model id, the Ready BasetenModel).
        """
        model_id, _ = self.sim.seed_model_with_deployment(name, "build-1")
        full_spec = {
            "modelName": name,
            "sourceDeploymentName": "build-1",
            "environment": {"name": "production", "autoscaling": autoscaling},
            **spec,
        }
        self.kubectl.apply(basetenmodel(name, namespace, full_spec))
        self.kubectl.run(
            "wait", "-n", namespace, "--for=condition=Ready", f"bm/{name}", "--timeout=60s"
        )
        obj = self.get_bm(namespace, name)
        assert obj is not None
        return model_id, obj
