"""The soak's processes: the Kubernetes API server, the Baseten simulator and operator replicas.

Each runs standalone, as in the e2e stack (testsupport/e2e/harness.py supplies kubectl, the
simulator's HTTP client and the process wrapper); the replicas run `baseten-operator run
--leader-elect` with JSON logs, from which the harness learns each one's leader-election
identity and when it became leader.
"""

from __future__ import annotations

import functools
import json
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

from testsupport.clusters import Cluster, start_kube
from testsupport.e2e.harness import (
    LEADER_ELECTION_FLAGS,
    LEASE_NAME,
    OPERATOR_NAMESPACE,
    OPERATOR_SERVICE_ACCOUNT,
    Kubectl,
    Process,
    Simulator,
    free_port,
    http_ok,
)
from testsupport.e2e.local import install
from testsupport.paths import REPO
from testsupport.polling import wait_for
from testsupport.tcp_relay import Relay

STARTUP_TIMEOUT = 30.0
# The identity a replica sends in `User-Agent: baseten-operator/<version> (<identity>)`.
_IDENTITY_IN_USER_AGENT = re.compile(r"\(([^()]+)\)\s*$")
# The harness's own Baseten reads, left out of the operators' figures and checks.
HARNESS_AGENT = "baseten-soak-harness"


def identity_in_user_agent(user_agent: str | None) -> str | None:
    found = _IDENTITY_IN_USER_AGENT.search(user_agent or "")
    return found.group(1) if found else None


def log_time(stamp: str) -> float:
    """A log line's RFC 3339 `ts` as epoch seconds."""
    return datetime.fromisoformat(stamp).timestamp()


@functools.cache
def run_flags() -> frozenset[str]:
    """The flags `baseten-operator run` knows (some arrive on other branches)."""
    done = subprocess.run(
        [sys.executable, "-m", "baseten_operator.cli", "run", "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return frozenset(re.findall(r"--[a-z][a-z0-9-]*", done.stdout))


@dataclass
class Replica:
    """One operator process; `label` (r1, r2, ...) names it in the report."""

    label: str
    process: Process
    started_at: float
    stopped_at: float | None = None
    _records: list[dict[str, Any]] = field(default_factory=list)
    _offset: int = 0

    def records(self) -> list[dict[str, Any]]:
        """Its JSON log records so far (read incrementally)."""
        with self.process.log_path.open("rb") as log:
            log.seek(self._offset)
            chunk = log.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a traceback line or a library's plain print
            if isinstance(record, dict):
                self._records.append(record)
        return self._records

    @property
    def identity(self) -> str | None:
        return next(
            (r["identity"] for r in self.records() if isinstance(r.get("identity"), str)), None
        )

    def became_leader(self) -> list[float]:
        return [log_time(r["ts"]) for r in self.records() if r.get("msg") == "became leader"]

    def alive(self) -> bool:
        return self.process.alive()

    def signal(self, signum: signal.Signals) -> None:
        self.process.popen.send_signal(signum)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.process.popen.wait(10)
        self.stopped_at = time.time()

    def wait_exit(self, timeout: float) -> int | None:
        """The exit code, or None if it is still running after `timeout` seconds."""
        try:
            code = self.process.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.stopped_at = self.stopped_at or time.time()
        return code

    def log_text(self) -> str:
        return self.process.log_path.read_text(errors="replace")


@dataclass
class Stack:
    """The API server, the simulator and the replicas started so far (dead ones included)."""

    workdir: Path
    api_key: str
    time_scale: float
    kube: Cluster
    relay: Relay | None  # in front of a real API server, for watch cuts
    operator_kubeconfig: Path
    sim: Simulator
    services: list[Process]
    replicas: list[Replica] = field(default_factory=list)

    @classmethod
    def start(cls, workdir: Path, *, api_key: str, time_scale: float) -> Stack:
        """The API server (real unless TEST_KUBE=emulator; the real one records writes in its
        audit log and is reached by the replicas through a relay the watch cuts reset), the
        simulator, the operator installed."""
        kube = start_kube(workdir / "kube", audit=True)
        relay = None
        services: list[Process] = []
        try:
            if kube.plane is not None:
                relay = Relay("127.0.0.1", urlsplit(kube.plane.url).port or 443).start()
            sim_port = free_port()
            baseten = Process.start(
                "baseten simulator",
                [sys.executable, "-m", "baseten_operator.sim.baseten", "--port", str(sim_port),
                 "--api-key", api_key, "--time-scale", str(time_scale)],
                workdir / "baseten.log",
            )  # fmt: skip
            services.append(baseten)
            sim_url = f"http://127.0.0.1:{sim_port}"
            _wait_ready(baseten, f"{sim_url}/_sim/health")
            install(kube.kubectl, api_key)
            # The replicas authenticate as the manager's ServiceAccount (config/rbac applies).
            operator_kubeconfig = kube.service_account_kubeconfig(
                workdir / "operator.kubeconfig",
                OPERATOR_NAMESPACE,
                OPERATOR_SERVICE_ACCOUNT,
                server=f"https://127.0.0.1:{relay.port}" if relay else None,
            )
        except BaseException:
            for process in services:
                process.terminate(10)
            if relay is not None:
                relay.close()
            kube.stop()
            raise
        return cls(
            workdir, api_key, time_scale, kube, relay, operator_kubeconfig,
            Simulator(sim_url, api_key), services,
        )  # fmt: skip

    @property
    def kubectl(self) -> Kubectl:
        return self.kube.kubectl

    def start_replica(self) -> Replica:
        label = f"r{len(self.replicas) + 1}"
        argv = [
            sys.executable, "-m", "baseten_operator.cli", "run",
            "--kubeconfig", str(self.operator_kubeconfig),
            "--leader-elect", *LEADER_ELECTION_FLAGS,
            "--leader-election-namespace", OPERATOR_NAMESPACE,
            "--metrics-bind-address", "127.0.0.1:0",
            "--health-probe-bind-address", "127.0.0.1:0",
            "--time-scale", str(self.time_scale),
        ]  # fmt: skip
        if "--metrics-secure" in run_flags():
            argv.append("--metrics-secure=false")
        process = Process.start(
            f"operator {label}",
            argv,
            self.workdir / f"operator-{label}.log",
            # POD_NAMESPACE as the Deployment sets it: the only namespace whose Secrets the
            # manager's ServiceAccount may read.
            env={
                "BASETEN_API_KEY": self.api_key,
                "BASETEN_API_BASE_URL": f"{self.sim.url}/v1",
                "POD_NAMESPACE": OPERATOR_NAMESPACE,
            },
        )
        replica = Replica(label, process, time.time())
        self.replicas.append(replica)
        wait_for(
            lambda: replica.identity or not replica.alive(),
            timeout=STARTUP_TIMEOUT,
            describe=process.log_tail,
        )
        assert replica.alive(), f"{process.name} exited at start\n{process.log_tail()}"
        return replica

    def lease_holder(self) -> str | None:
        lease = self.kubectl.get_or_none("lease", LEASE_NAME, OPERATOR_NAMESPACE)
        holder = ((lease or {}).get("spec") or {}).get("holderIdentity")
        return str(holder) if holder else None

    def replica_of(self, identity: str | None) -> Replica | None:
        return next((r for r in self.replicas if identity and r.identity == identity), None)

    def leader(self, timeout: float = 60.0) -> Replica:
        """The live replica holding the Lease (waiting for one to take it)."""

        def probe() -> Replica | None:
            replica = self.replica_of(self.lease_holder())
            return replica if replica is not None and replica.alive() else None

        return wait_for(probe, timeout=timeout, interval=0.2, describe=self._describe_replicas)

    def cut_watches(self) -> None:
        """Cut the replicas' watches: the emulator drops them; in front of a real server the
        relay resets every connection (requests in flight too, as a broken link does)."""
        if self.relay is not None:
            self.relay.cut()
        else:
            self.kube.faults(action="drop_watches", graceful=False)

    def clear_kube_faults(self) -> None:
        if self.relay is None:
            self.kube.faults(action="clear")

    def kube_writes(self) -> list[dict[str, Any]]:
        return self.kube.writes()

    def request_log(self, since: int = 0) -> list[dict[str, Any]]:
        """Every Baseten request the simulator received, from index `since` on."""
        response = requests.get(
            f"{self.sim.url}/_sim/request_log", params={"since": since}, timeout=30
        )
        response.raise_for_status()
        return list(response.json())

    def operator_requests(self) -> list[dict[str, Any]]:
        return [e for e in self.request_log() if e.get("user_agent") != HARNESS_AGENT]

    def baseten_get(self, path: str) -> requests.Response:
        """A read of the Baseten API (under /v1) that the checks can tell from the operators'."""
        return requests.get(
            f"{self.sim.url}/v1{path}",
            headers={"Authorization": f"Api-Key {self.api_key}", "User-Agent": HARNESS_AGENT},
            timeout=10,
        )

    def stop(self) -> dict[str, int | None]:
        """SIGTERM everything still running; the replicas' exit codes by label."""
        codes: dict[str, int | None] = {}
        for replica in self.replicas:
            if replica.alive():
                replica.signal(signal.SIGCONT)  # a frozen one cannot handle SIGTERM
                replica.signal(signal.SIGTERM)
                codes[replica.label] = replica.wait_exit(40.0)
                if codes[replica.label] is None:
                    replica.kill()
        for process in reversed(self.services):
            if process.alive():
                process.terminate(10)
        if self.relay is not None:
            self.relay.close()
        self.kube.stop()
        return codes

    def _describe_replicas(self) -> str:
        return "no live replica holds the Lease; " + "; ".join(
            f"{r.label} identity={r.identity} alive={r.alive()}" for r in self.replicas
        )


def _wait_ready(process: Process, url: str) -> None:
    wait_for(
        lambda: http_ok(url) or not process.alive(),
        timeout=STARTUP_TIMEOUT,
        describe=process.log_tail,
    )
    assert process.alive(), f"{process.name} exited at start\n{process.log_tail()}"
