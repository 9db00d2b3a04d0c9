"""The simulator as a standalone process."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
import requests

pytestmark = pytest.mark.integration


def test_standalone_serves_until_sigterm() -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "baseten_operator.sim.baseten",
            "--port",
            "0",
            "--api-key",
            "cli-key",
            "--time-scale",
            "0.01",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        seeded = requests.post(f"{url}/_sim/seed_model", json={"name": "m"}, timeout=5).json()
        listed = requests.get(
            f"{url}/v1/models", headers={"Authorization": "Api-Key cli-key"}, timeout=5
        ).json()
        assert [m["id"] for m in listed["models"]] == [seeded["id"]]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
