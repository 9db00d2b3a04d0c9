"""A real Prometheus for tests: Debian's `prometheus` package (`make prometheus`,
hack/install-prometheus.sh), started on a free loopback port with a generated configuration
that scrapes the given targets every `scrape_interval` seconds, ready once `/-/ready`
answers, queried through its HTTP API, stopped (and its data removed with its directory).

    with Prometheus([ScrapeTarget(f"{sim.url}/metrics", ("Api-Key", key))], tmp_path) as prom:
        share = prom.wait_for_value('sum(rate(x{code=~"5.."}[1m])) / sum(rate(x[1m]))')

The binary is `$PROMETHEUS_BIN`, else `prometheus` on PATH. Without one, starting raises
`PrometheusMissing` saying how to install it: a test needing Prometheus fails, it is never
skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import requests

from baseten_operator.sim.realkube.controlplane import free_port
from testsupport.polling import wait_for

BINARY_ENV = "PROMETHEUS_BIN"
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


class PrometheusMissing(RuntimeError):
    """No Prometheus binary: the message says how to get one."""


class PrometheusFailed(RuntimeError):
    """Prometheus exited or never got ready: the message carries its log's tail."""


@dataclass(frozen=True)
class ScrapeTarget:
    """A URL to scrape (scheme, host:port and path), with an `authorization` header
    (type, credentials) when it needs one, e.g. ("Api-Key", key) for Baseten's export."""

    url: str
    authorization: tuple[str, str] | None = None


def binary() -> Path:
    found = os.environ.get(BINARY_ENV) or shutil.which("prometheus")
    if not found or not Path(found).is_file():
        raise PrometheusMissing(
            "Prometheus is not installed: run `make prometheus` (hack/install-prometheus.sh "
            f"installs Debian's prometheus package) or name a binary in {BINARY_ENV}"
        )
    return Path(found)


def scrape_config(targets: list[ScrapeTarget], interval: float) -> dict[str, Any]:
    """The configuration: one job per target, scraped (and timed out) every `interval`."""
    every = f"{round(interval * 1000)}ms"
    jobs = []
    for number, target in enumerate(targets):
        url = urlsplit(target.url)
        job: dict[str, Any] = {
            "job_name": f"target-{number}",
            "scheme": url.scheme,
            "metrics_path": url.path or "/metrics",
            "static_configs": [{"targets": [url.netloc]}],
        }
        if target.authorization is not None:
            kind, credentials = target.authorization
            job["authorization"] = {"type": kind, "credentials": credentials}
        jobs.append(job)
    return {
        "global": {"scrape_interval": every, "scrape_timeout": every, "evaluation_interval": every},
        "scrape_configs": jobs,
    }


class Prometheus:
    def __init__(
        self, targets: list[ScrapeTarget], work_dir: Path, *, scrape_interval: float = 0.5
    ) -> None:
        self.targets = targets
        self.work_dir = work_dir
        self.scrape_interval = scrape_interval
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._log = work_dir / "prometheus.log"

    def start(self) -> str:
        """Start and wait until ready; returns the base URL."""
        executable = binary()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config = self.work_dir / "prometheus.yml"
        # JSON is YAML: no YAML writer needed for a generated file.
        config.write_text(json.dumps(scrape_config(self.targets, self.scrape_interval)))
        address = f"127.0.0.1:{free_port()}"
        self.url = f"http://{address}"
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(
                [
                    str(executable),
                    f"--config.file={config}",
                    f"--storage.tsdb.path={self.work_dir / 'data'}",
                    f"--web.listen-address={address}",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            wait_for(self._ready, timeout=READY_TIMEOUT, describe=self._log_tail)
        except BaseException:
            self.stop()
            raise
        return self.url

    def _ready(self) -> bool:
        assert self._process is not None
        if self._process.poll() is not None:
            raise PrometheusFailed(
                f"Prometheus exited with {self._process.returncode}: {self._log_tail()}"
            )
        try:
            return requests.get(f"{self.url}/-/ready", timeout=2).status_code == 200
        except requests.ConnectionError:
            return False

    def _log_tail(self) -> str:
        text = self._log.read_text(errors="replace") if self._log.exists() else ""
        return "log: " + " | ".join(text.strip().splitlines()[-10:])

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant query's result (a vector's samples, {"metric", "value"} each)."""
        answer = requests.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=10)
        body = answer.json()
        if answer.status_code != 200 or body.get("status") != "success":
            raise PrometheusFailed(f"query {promql!r} failed: {answer.status_code} {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def value(self, promql: str) -> float | None:
        """The single value the query gives; None while it gives none (no data yet)."""
        result = self.query(promql)
        if not result:
            return None
        if len(result) > 1:
            raise PrometheusFailed(f"query {promql!r} gave {len(result)} series, not one")
        return float(result[0]["value"][1])

    def wait_for_value(
        self,
        promql: str,
        until: Callable[[float], bool] = lambda value: True,
        timeout: float = 30.0,
    ) -> float:
        """The query's value once it has one that satisfies `until` (a rate needs two
        scrapes, and settles as more arrive)."""

        def answered() -> tuple[float] | None:
            value = self.value(promql)
            return (value,) if value is not None and until(value) else None

        return wait_for(
            answered, timeout=timeout, interval=self.scrape_interval, describe=self._targets
        )[0]

    def _targets(self) -> str:
        """What Prometheus says of its targets (why nothing arrives, when nothing does)."""
        try:
            active = requests.get(f"{self.url}/api/v1/targets", timeout=5).json()["data"]
        except (requests.RequestException, ValueError, KeyError):
            return self._log_tail()
        return "targets: " + "; ".join(
            f"{t['scrapeUrl']} {t['health']} {t['lastError']}" for t in active["activeTargets"]
        )

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> Prometheus:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
