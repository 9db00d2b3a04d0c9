"""The processes `make bench` measures: the Kubernetes emulator, the Baseten simulator and the
operator, each its own process (so its CPU and memory are its own), plus the /proc sampling
that measures them.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

CLK_TCK = os.sysconf("SC_CLK_TCK")


class StackError(Exception):
    """A process of the stack did not start or died."""


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, chars: int = 800) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self, grace: float = 15.0) -> int | None:
        if self.alive():
            self.popen.terminate()
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return self.popen.returncode


def _ticks(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def _peak_rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


@dataclass
class Usage:
    """CPU seconds and peak RSS of one process, sampled (the last sample survives its exit)."""

    pid: int
    ticks: int = 0
    peak_kb: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sample(self) -> None:
        ticks, peak = _ticks(self.pid), _peak_rss_kb(self.pid)
        with self.lock:
            self.ticks = max(self.ticks, ticks or 0)
            self.peak_kb = max(self.peak_kb, peak or 0)

    def cpu_seconds(self) -> float:
        self.sample()
        with self.lock:
            return self.ticks / CLK_TCK

    def peak_rss_mb(self) -> float:
        with self.lock:
            return self.peak_kb / 1024


class Stack:
    """Emulator, simulator and operator, started in that order, stopped in reverse."""

    def __init__(self, time_scale: float) -> None:
        self.time_scale = time_scale
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-"))
        self.kubeconfig = self.workdir / "kubeconfig"
        self.api_key = "bench-" + secrets.token_hex(16)
        self.processes: dict[str, Process] = {}
        self.usage: dict[str, Usage] = {}
        self._stop_sampling = threading.Event()
        self._sampler = threading.Thread(target=self._sample, name="proc-sampler", daemon=True)
        self.simulator_url = ""
        self.operator_started_at = 0.0

    # -- processes --------------------------------------------------------------------

    def _start(self, name: str, command: list[str], env: dict[str, str]) -> Process:
        log = self.workdir / f"{name}.log"
        handle: IO[bytes] = log.open("wb")
        popen = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env)
        process = Process(name, popen, log)
        self.processes[name] = process
        self.usage[name] = Usage(popen.pid)
        return process

    def start_servers(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        emulator = self._start(
            "emulator",
            [
                sys.executable,
                "-m",
                "baseten_operator.sim.kube",
                "--kubeconfig",
                str(self.kubeconfig),
            ],  # fmt: skip
            env,
        )
        simulator = self._start(
            "simulator",
            [
                sys.executable,
                "-m",
                "baseten_operator.sim.baseten",
                "--api-key",
                self.api_key,
                "--time-scale",
                repr(self.time_scale),
                "--no-rate-limits",
            ],  # fmt: skip
            env,
        )
        self._sampler.start()
        self._wait(lambda: self.kubeconfig.exists(), emulator, "the emulator's kubeconfig")
        self._wait(lambda: "http" in simulator.log.read_text(), simulator, "the simulator's URL")
        self.simulator_url = simulator.log.read_text().split()[0].rstrip("/")

    def start_operator(self, extra_args: list[str]) -> None:
        env = dict(
            os.environ,
            KUBECONFIG=str(self.kubeconfig),
            BASETEN_API_KEY=self.api_key,
            BASETEN_API_BASE_URL=f"{self.simulator_url}/v1",
            PYTHONUNBUFFERED="1",
        )
        health = _free_port()
        command = [
            str(Path(sys.executable).parent / "baseten-operator"), "run",
            "--time-scale", repr(self.time_scale),
            "--metrics-bind-address", "127.0.0.1:0",
            "--health-probe-bind-address", f"127.0.0.1:{health}",
            *extra_args,
        ]  # fmt: skip
        self.operator_started_at = time.time()
        operator = self._start("operator", command, env)
        self._wait(lambda: _ok(f"http://127.0.0.1:{health}/readyz"), operator, "/readyz")

    def restart_operator(self, extra_args: list[str]) -> None:
        """A new operator process (a rollout, a crash, a failover): the old one stops
        cleanly, the new one lists every CR and passes them all at once."""
        self.processes["operator"].stop()
        self.start_operator(extra_args)

    def _wait(self, probe: Any, process: Process, what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not probe():
            if not process.alive():
                raise StackError(f"{process.name} exited: {process.tail()}")
            if time.monotonic() > deadline:
                raise StackError(f"no {what} within {timeout:g}s: {process.tail()}")
            time.sleep(0.02)

    def check_alive(self) -> None:
        for process in self.processes.values():
            if not process.alive():
                raise StackError(f"{process.name} exited: {process.tail()}")

    def stop(self, *, keep_logs: bool) -> None:
        """Stop every process; the work directory (the processes' logs) goes unless kept."""
        self._stop_sampling.set()
        for name in ("operator", "simulator", "emulator"):
            if name in self.processes:
                self.usage[name].sample()
                self.processes[name].stop()
        if keep_logs:
            print(f"logs kept in {self.workdir}", file=sys.stderr)
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _sample(self) -> None:
        while not self._stop_sampling.wait(0.5):
            for usage in list(self.usage.values()):
                usage.sample()

    # -- the simulator's control API ------------------------------------------------------

    def control(self, operation: str, **arguments: Any) -> Any:
        request = urllib.request.Request(
            f"{self.simulator_url}/_sim/{operation}",
            data=json.dumps(arguments).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
